package mcpexport

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/internal/testkit/replayserver"
	"github.com/berth-mcp/berth/internal/testkit/taskserver"
	"github.com/berth-mcp/berth/internal/testrelay"
	"github.com/berth-mcp/berth/internal/testupstream"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/sandbox"
	"github.com/berth-mcp/berth/store"
)

// TestMain lets the test binary act as the upstream MCP server of the
// tests, run through a symlink named berth-export-upstream.
func TestMain(m *testing.M) {
	// A test binary re-executed as the sandbox launcher never runs tests.
	sandbox.Main()
	if filepath.Base(os.Args[0]) == testupstream.Name {
		testupstream.Main()
		return
	}
	if filepath.Base(os.Args[0]) == appsName {
		appsMain() // apps_test.go
	}
	if filepath.Base(os.Args[0]) == taskServerName {
		os.Exit(taskserver.Main(os.Args[1:]))
	}
	if filepath.Base(os.Args[0]) == replayName {
		os.Exit(replayserver.Main(os.Args[1:]))
	}
	if filepath.Base(os.Args[0]) == testrelay.Name {
		testrelay.Main()
		return
	}
	if os.Getenv(otherUserEnv) != "" {
		otherUserMain()
		return
	}
	if os.Getenv(otherUserSendEnv) != "" {
		otherUserSend()
		return
	}
	os.Exit(m.Run())
}

const (
	echoTool   = "demo__up__echo"
	wipeTool   = "demo__up__wipe"
	secretTool = "demo__up__secret"
)

// env is one BERTH_HOME with the plugin "demo" (server "up") trusted and
// enabled in a workspace, and an exporter over its pool.
type env struct {
	mu    sync.Mutex
	t     *testing.T
	paths store.Paths
	store *store.Store
	pool  *pool.Pool
	srv   *Server
}

func newEnv(t *testing.T, opts *Options, policy ...store.PolicyRule) *env {
	t.Helper()
	return newEnvIn(t, "", opts, policy...)
}

// newEnvIn is newEnv with the workspace ws ("": a temporary directory).
func newEnvIn(t *testing.T, ws string, opts *Options, policy ...store.PolicyRule) *env {
	t.Helper()
	h := newPluginHome(t, ws, "demo", "berth-export-upstream", "exporter test plugin", policy)
	return h.env(t, opts)
}

// env opens a pool on h's workspace (the plugin's server finds its
// command on PATH; extraEnv is added to its environment) and berth's
// server over it with opts, both closed when the test ends.
func (h pluginHome) env(t *testing.T, opts *Options, extraEnv ...string) *env {
	t.Helper()
	e := &env{t: t, paths: h.paths, store: h.st}
	var err error
	e.pool, err = pool.Open(context.Background(), h.st, h.ws, &pool.Options{
		BaseEnv:      append([]string{"PATH=" + h.bin + ":/usr/bin:/bin", "HOME=" + h.home}, extraEnv...),
		PollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	e.srv = New(e.pool, opts)
	e.mu.Unlock()
	t.Cleanup(func() { e.pool.Close() })
	// Before the pool (cleanups run last first), and after the sessions
	// and listeners the test opened later have ended: their handlers
	// return before the server closes its audit log and the home goes.
	t.Cleanup(func() {
		e.waitHandlers()
		e.srv.Close()
	})
	return e
}

// waitHandlers waits until no request handler of e's server runs any more
// (a withdrawn call writes approvals/ and audit.log on its way out).
func (e *env) waitHandlers() {
	e.t.Helper()
	testkit.Eventually(e.t, 20*time.Second, "the server's request handlers to return", func() bool {
		return e.srv.handling.count() == 0
	})
}

// pluginHome is a BERTH_HOME in which one plugin, whose one server "up"
// runs this test binary under another name (bin is on its PATH), is
// trusted (unsigned) and enabled in the workspace ws.
type pluginHome struct {
	home, bin, ws string
	paths         store.Paths
	st            *store.Store
}

// newPluginHome makes a pluginHome for plugin, whose server runs command,
// and sets the policy rules. ws is the workspace, an existing directory;
// "" makes a temporary one.
func newPluginHome(t testing.TB, ws, plugin, command, description string, policy []store.PolicyRule) pluginHome {
	t.Helper()
	ctx := context.Background()
	home, bin := t.TempDir(), t.TempDir()
	if ws == "" {
		ws = t.TempDir()
	}
	exe, _ := os.Executable()
	if err := os.Symlink(exe, filepath.Join(bin, command)); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), plugin)
	os.MkdirAll(dir, 0o755)
	manifest := `{"manifestVersion":1,"name":"` + plugin + `","version":"1.0.0","description":"` + description + `",
	  "mcpServers":{"up":{"stdio":{"command":"` + command + `"}}}}`
	os.WriteFile(filepath.Join(dir, "berth.json"), []byte(manifest), 0o644)
	paths, _ := store.NewPaths(home)
	st := store.Open(paths, nil)
	b, err := bundle.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	digest, _ := store.ParseDigest(b.Digest)
	b.Close()
	if _, err := st.Trust(ctx, dir, &store.TrustOptions{UnsignedUnsafe: true, Digest: digest}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Enable(ctx, st, ws, plugin, ""); err != nil {
		t.Fatal(err)
	}
	for _, r := range policy {
		if err := st.SetPolicy(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o700)
			}
			return nil
		})
	})
	return pluginHome{home: home, bin: bin, ws: ws, paths: paths, st: st}
}

// client connects a go-sdk client in memory. proto pins the protocol
// version ("" lets it negotiate 2026-07-28); elicit, when set, is the
// client's elicitation handler.
func (e *env) client(proto string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	e.t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := e.srv.Connect(ctx, st); err != nil {
		e.t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: elicit})
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: proto})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, name, text string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": text}})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n"), res.IsError
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func readAudit(t *testing.T, paths store.Paths) []AuditEntry {
	t.Helper()
	data, err := os.ReadFile(paths.Audit())
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		// Not written yet: the log is created before its first line.
		return nil
	}
	var out []AuditEntry
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e AuditEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}
