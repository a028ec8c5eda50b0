//go:build unix

package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/fetched"
	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/internal/testkit/taskserver"
	"github.com/berth-mcp/berth/pool/internal/testserver"
	"github.com/berth-mcp/berth/sandbox"
	"github.com/berth-mcp/berth/store"
)

// TestMain lets the test binary act as the MCP test server, the tasks
// fixture server and a second berth process: the tests run it through
// symlinks named berth-testserver, berth-taskserver and berth-disable.
func TestMain(m *testing.M) {
	// A test binary re-executed as the sandbox launcher never runs tests.
	sandbox.Main()
	switch filepath.Base(os.Args[0]) {
	case "berth-testserver":
		os.Exit(testserver.Main(os.Args[1:]))
	case "berth-disable":
		os.Exit(disableMain(os.Args[1:]))
	case "berth-taskserver":
		os.Exit(taskserver.Main(os.Args[1:]))
	}
	code := m.Run()
	if nativeBuild.dir != "" {
		os.RemoveAll(nativeBuild.dir)
	}
	os.Exit(code)
}

// disableMain is `berth disable` in another process: HOME WORKSPACE NAME.
func disableMain(args []string) int {
	paths, err := store.NewPaths(args[0])
	if err == nil {
		_, err = Disable(context.Background(), store.Open(paths, nil), args[1], args[2])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// fixture is a BERTH_HOME, a workspace and a bin directory holding the
// test server, for one test.
type fixture struct {
	t     testing.TB
	home  string
	ws    string
	bin   string
	paths store.Paths
	store *store.Store
	// fetchEnv, when set, is the package managers' environment at trust
	// (a fetched server's tree is resolved then).
	fetchEnv []string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{t: t, home: t.TempDir(), bin: t.TempDir()}
	ws, err := Workspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f.ws = ws
	if f.paths, err = store.NewPaths(f.home); err != nil {
		t.Fatal(err)
	}
	f.store = store.Open(f.paths, nil)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"berth-testserver", "berth-disable", "berth-taskserver"} {
		if err := os.Symlink(exe, filepath.Join(f.bin, n)); err != nil {
			t.Fatal(err)
		}
	}
	// Snapshots are read-only; make them removable.
	t.Cleanup(func() {
		filepath.WalkDir(f.home, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o700)
			}
			return nil
		})
	})
	return f
}

// testServer is a stdio server entry running the test server.
func testServer(args ...string) map[string]any {
	return map[string]any{"stdio": map[string]any{"command": "berth-testserver", "args": args}}
}

// bundleDir writes a bundle named name with the given servers (and extra
// files) and returns its directory.
func (f *fixture) bundleDir(name string, servers map[string]any, files map[string]string) string {
	f.t.Helper()
	dir := filepath.Join(f.t.TempDir(), name)
	m := map[string]any{"manifestVersion": 1, "name": name, "version": "1.0.0", "description": "test plugin " + name, "mcpServers": servers}
	data, _ := json.MarshalIndent(m, "", "  ")
	files = mergeFiles(files, map[string]string{"berth.json": string(data), "share/data.txt": "data\n"})
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		mode := os.FileMode(0o644)
		if strings.HasPrefix(p, "bin/") {
			mode = 0o755
		}
		if err := os.WriteFile(full, []byte(c), mode); err != nil {
			f.t.Fatal(err)
		}
	}
	return dir
}

func mergeFiles(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range b {
		out[k] = v
	}
	for k, v := range a {
		out[k] = v
	}
	return out
}

// install trusts (unsigned, by its digest) and enables a bundle
// directory.
func (f *fixture) install(dir string) *store.Record {
	f.t.Helper()
	ctx := context.Background()
	res, err := f.store.Trust(ctx, dir, &store.TrustOptions{UnsignedUnsafe: true, Digest: digestOf(f.t, dir), Fetch: &fetched.Options{Env: f.fetchEnv}})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := Enable(ctx, f.store, f.ws, res.Record.Name, ""); err != nil {
		f.t.Fatal(err)
	}
	return res.Record
}

// digestOf is the digest of a valid bundle, for trusting it unsigned.
func digestOf(t testing.TB, dir string) store.Digest {
	t.Helper()
	b, err := bundle.Open(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	d, err := store.ParseDigest(b.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// plugin writes, trusts and enables a bundle.
func (f *fixture) plugin(name string, servers map[string]any) *store.Record {
	f.t.Helper()
	return f.install(f.bundleDir(name, servers, nil))
}

func (f *fixture) options() *Options {
	return &Options{
		BaseEnv:        []string{"PATH=" + f.bin + ":/usr/bin:/bin", "HOME=" + f.home, "LANG=C"},
		RestartBackoff: 20 * time.Millisecond,
		TerminateGrace: 300 * time.Millisecond,
		PollInterval:   50 * time.Millisecond,
		LookupEnv:      func(string) (string, bool) { return "", false },
	}
}

// open opens a pool with the fixture's options (adjusted by tune) and
// waits for its servers' first start.
func (f *fixture) open(tune func(*Options)) *Pool {
	f.t.Helper()
	opts := f.options()
	if tune != nil {
		tune(opts)
	}
	p, err := Open(context.Background(), f.store, f.ws, opts)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { p.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.WaitStarted(ctx); err != nil {
		f.t.Fatal(err)
	}
	return p
}

var allow = ApproverFunc(func(context.Context, *ApprovalRequest) (Decision, error) {
	return Decision{Allow: true, By: "test"}, nil
})

func callText(t testing.TB, p *Pool, name, args string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := p.Call(ctx, name, json.RawMessage(args), allow)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return resultText(res)
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func status(t testing.TB, p *Pool, id string) ServerStatus {
	t.Helper()
	for _, s := range p.Status() {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no server %s in %+v", id, p.Status())
	return ServerStatus{}
}

// waitNoticed waits until the file-system watch of plugin's drift checker
// has seen a change made to its snapshot (the watch delivers
// asynchronously; only then does the call's boundary look). Without a
// watch every boundary sweeps: nothing to wait for.
func waitNoticed(t *testing.T, p *Pool, plugin string) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, "the watch of "+plugin+"'s snapshot to notice the change", func() bool {
		p.mu.Lock()
		pl := p.plugins[plugin]
		p.mu.Unlock()
		return pl != nil && pl.drift != nil && (!pl.drift.Watching() || pl.drift.Noticed())
	})
}

// alive reports whether pid is a live process (a zombie is dead).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err == nil {
		s := string(data)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
			return s[i+2] != 'Z' && s[i+2] != 'X'
		}
		return true
	}
	if !errors.Is(err, os.ErrNotExist) {
		return syscall.Kill(pid, 0) == nil
	}
	return false
}

type pids struct{ PID, PPID, PGID int }

func serverPIDs(t testing.TB, p *Pool, tool string) pids {
	t.Helper()
	var out pids
	if err := json.Unmarshal([]byte(callText(t, p, tool, "{}")), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// mustDigest parses a digest from a record that Records returned.
func mustDigest(s string) store.Digest {
	d, err := store.ParseDigest(s)
	if err != nil {
		panic(err)
	}
	return d
}
