//go:build unix

// Tests of `berth serve` with MCP clients and servers we did not write: the
// MCP Inspector CLI, the TypeScript SDK client and server-everything, all
// pinned in testdata/peers (see internal/peers). berth itself runs as a
// separate process: the test binary, started through a symlink named
// "berth", is the berth CLI (see init), so the server under test is the
// same code, race detector included, that `go test -race` builds.

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/peers"
	"github.com/berth-mcp/berth/internal/testupstream"
	"github.com/berth-mcp/berth/mcpexport"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// berthName is the name under which the test binary acts as the berth
// CLI. upstreamName is the name under which TestMain makes it the "demo"
// upstream server: tools echo (read-only), wipe (destructive) and secret.
const (
	berthName    = "berth"
	upstreamName = testupstream.Name
)

// The demo plugin's tools as berth exports them.
const (
	demoEcho   = "demo__up__echo"
	demoWipe   = "demo__up__wipe"
	demoSecret = "demo__up__secret"
)

// world is one BERTH_HOME and workspace, and a bin directory holding the
// berth CLI and the programs plugins run (found on PATH by `berth serve`,
// which passes its PATH to the servers it starts).
type world struct {
	t     *testing.T
	home  string
	ws    string
	bin   string
	paths store.Paths
	store *store.Store
	// path is the PATH of every berth process: bin first.
	path []string

	mu      sync.Mutex
	settled map[string]bool // approval IDs settleNext has seen
	// serveEnv is added to the environment of berth serve (serve).
	serveEnv []string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, home: t.TempDir(), ws: t.TempDir(), bin: t.TempDir(), settled: map[string]bool{}}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{berthName, upstreamName} {
		if err := os.Symlink(exe, filepath.Join(w.bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	w.path = []string{w.bin, "/usr/local/bin", "/usr/bin", "/bin"}
	if w.paths, err = store.NewPaths(w.home); err != nil {
		t.Fatal(err)
	}
	w.store = store.Open(w.paths, nil)
	t.Cleanup(func() {
		// The store keeps snapshots read-only; let TempDir remove them.
		filepath.WalkDir(w.home, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o700)
			}
			return nil
		})
	})
	return w
}

// plugin writes a bundle with one stdio server, trusts it (unsigned) and
// enables it in the workspace. Its tools are "<name>__<server>__<tool>".
func (w *world) plugin(name, server, command string, args ...string) {
	w.t.Helper()
	ctx := context.Background()
	dir := filepath.Join(w.t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		w.t.Fatal(err)
	}
	if args == nil {
		args = []string{}
	}
	manifest, _ := json.Marshal(map[string]any{
		"manifestVersion": 1, "name": name, "version": "1.0.0",
		"description": "a plugin of berth's peer tests",
		"mcpServers":  map[string]any{server: map[string]any{"stdio": map[string]any{"command": command, "args": args}}},
	})
	if err := os.WriteFile(filepath.Join(dir, "berth.json"), manifest, 0o644); err != nil {
		w.t.Fatal(err)
	}
	b, err := bundle.Open(ctx, dir, nil)
	if err != nil {
		w.t.Fatalf("bundle %s: %v", name, err)
	}
	digest, _ := store.ParseDigest(b.Digest)
	b.Close()
	if _, err := w.store.Trust(ctx, dir, &store.TrustOptions{UnsignedUnsafe: true, Digest: digest}); err != nil {
		w.t.Fatal(err)
	}
	if _, err := pool.Enable(ctx, w.store, w.ws, name, ""); err != nil {
		w.t.Fatal(err)
	}
}

// demo enables the plugin "demo" (server "up") served by this test binary.
func (w *world) demo() { w.plugin("demo", "up", upstreamName) }

func (w *world) policy(pattern, action string) {
	w.t.Helper()
	if err := w.store.SetPolicy(context.Background(), store.PolicyRule{Pattern: pattern, Action: store.Action(action)}); err != nil {
		w.t.Fatal(err)
	}
}

// env is the environment of a berth process.
func (w *world) env() []string {
	return []string{
		"BERTH_HOME=" + w.home,
		"PATH=" + strings.Join(w.path, string(os.PathListSeparator)),
		"HOME=" + w.home,
		"TMPDIR=" + os.TempDir(),
		"GORACE=atexit_sleep_ms=0",
	}
}

func (w *world) berthPath() string { return filepath.Join(w.bin, berthName) }

// berth runs one berth CLI command, as a person in another terminal would.
func (w *world) berth(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, w.berthPath(), args...)
	cmd.Env = w.env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("berth %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

// lineLog collects a process's stderr line by line and lets a test wait
// for a line.
type lineLog struct {
	mu      sync.Mutex
	partial []byte
	lines   []string
	changed chan struct{}
}

func newLineLog() *lineLog { return &lineLog{changed: make(chan struct{})} }

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	added := false
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, string(l.partial[:i]))
		l.partial = l.partial[i+1:]
		added = true
	}
	if added {
		close(l.changed)
		l.changed = make(chan struct{})
	}
	return len(p), nil
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n") + string(l.partial)
}

// wait returns the submatches of the first line at index from or later
// that matches re, and the index after that line.
func (l *lineLog) wait(ctx context.Context, re *regexp.Regexp, from int) ([]string, int, error) {
	for {
		l.mu.Lock()
		for i := from; i < len(l.lines); i++ {
			if m := re.FindStringSubmatch(l.lines[i]); m != nil {
				l.mu.Unlock()
				return m, i + 1, nil
			}
		}
		from = len(l.lines)
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, from, fmt.Errorf("no line matching %q: %w", re, ctx.Err())
		}
	}
}

// served is a running `berth serve` with HTTP listeners.
type served struct {
	cmd  *exec.Cmd
	log  *lineLog
	urls []string // in the order of the listening lines
	// token is the bearer token every HTTP request must carry: the one in
	// the token file the listening line names.
	token string
	done  chan struct{}
}

// authHeader is the header a client of s sends.
func (s *served) authHeader() string { return "Authorization: Bearer " + s.token }

// httpClient is a client that sends s's token.
func (s *served) httpClient() *http.Client {
	return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+s.token)
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

var listeningRe = regexp.MustCompile(`msg="berth serve: listening" url=(\S+).* token_file=(\S+)`)

// serve starts `berth serve --workspace WS args...`, waits until it listens
// (one "listening" line per --sse/--http), and stops it at the end of the
// test with SIGTERM: it must exit 0 without a data race report.
func (w *world) serve(listeners int, args ...string) *served {
	w.t.Helper()
	cmd := exec.Command(w.berthPath(), append([]string{"serve", "--workspace", w.ws}, args...)...)
	cmd.Env = append(w.env(), w.serveEnv...)
	s := &served{cmd: cmd, log: newLineLog(), done: make(chan struct{})}
	cmd.Stdout = io.Discard
	cmd.Stderr = s.log
	cmd.SysProcAttr = dieWithParent()
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() { cmd.Wait(); close(s.done) }()
	w.t.Cleanup(func() { s.stop(w.t) })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	from := 0
	for range listeners {
		var m []string
		var err error
		if m, from, err = s.log.wait(ctx, listeningRe, from); err != nil {
			w.t.Fatalf("berth serve %s did not listen: %v\n%s", strings.Join(args, " "), err, s.log)
		}
		s.urls = append(s.urls, m[1])
		data, err := os.ReadFile(m[2])
		if err != nil {
			w.t.Fatalf("the token file berth serve names: %v", err)
		}
		s.token = strings.TrimSpace(string(data))
		if strings.Contains(s.log.String(), s.token) {
			w.t.Fatalf("berth serve logged its token:\n%s", s.log)
		}
	}
	return s
}

// dieWithParent asks the kernel to kill a child when the test process
// dies without running its cleanups (killed, or its output pipe closed),
// where the platform can (Linux: Pdeathsig).
func dieWithParent() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{}
	if f := reflect.ValueOf(attr).Elem().FieldByName("Pdeathsig"); f.IsValid() && f.CanSet() {
		f.Set(reflect.ValueOf(syscall.SIGKILL))
	}
	return attr
}

// stop ends the server like a service manager would and checks it exited
// cleanly.
func (s *served) stop(t *testing.T) {
	start := time.Now()
	defer func() {
		if d := time.Since(start); d > 2*time.Second {
			t.Logf("berth serve took %v to stop", d.Round(time.Millisecond))
		}
	}()
	select {
	case <-s.done:
	default:
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
			t.Errorf("berth serve did not exit within 15s of SIGTERM\n%s", s.log)
			return
		}
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("berth serve exited with %d after SIGTERM\n%s", code, s.log)
	} else if t.Failed() {
		// What berth saw (a catalog boundary that waited, a server that
		// hung) explains most failures of a client.
		t.Logf("berth serve's stderr:\n%s", s.log)
	}
	checkNoRace(t, "berth serve", s.log.String())
}

func checkNoRace(t *testing.T, who, stderr string) {
	t.Helper()
	if strings.Contains(stderr, "WARNING: DATA RACE") {
		t.Errorf("%s reported a data race:\n%s", who, stderr)
	}
}

// waitingRe is the line `berth serve` logs when a call waits in the queue.
var waitingRe = regexp.MustCompile(`msg="a tool call waits for approval" tool=(\S+) approval=(\S+)`)

// settleNext acts as a person at another terminal: it waits until berth
// logs that a call of tool waits for approval, checks that `berth
// approvals --json` lists it, and runs `berth approve ID` (allow) or
// `berth deny ID`. It returns the ID.
func (w *world) settleNext(ctx context.Context, log *lineLog, tool string, allow bool) (string, error) {
	var id string
	for from := 0; ; {
		m, next, err := log.wait(ctx, waitingRe, from)
		if err != nil {
			return "", err
		}
		from = next
		w.mu.Lock()
		seen := w.settled[m[2]]
		w.settled[m[2]] = true
		w.mu.Unlock()
		if seen {
			continue
		}
		if m[1] != tool {
			return "", fmt.Errorf("the waiting call is of %s, want %s", m[1], tool)
		}
		id = m[2]
		break
	}
	out, err := w.berth(ctx, "approvals", "--json")
	if err != nil {
		return id, err
	}
	var list []mcpexport.Pending
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return id, fmt.Errorf("berth approvals --json: %v: %s", err, out)
	}
	i := slices.IndexFunc(list, func(p mcpexport.Pending) bool { return p.ID == id })
	if i < 0 || list[i].Tool != tool || list[i].Client == "" {
		return id, fmt.Errorf("berth approvals --json does not list %s for %s: %s", id, tool, out)
	}
	verb, want := "deny", "Denied "+id
	if allow {
		verb, want = "approve", "Approved "+id
	}
	out, err = w.berth(ctx, verb, id)
	if err != nil {
		return id, err
	}
	if !strings.Contains(out, want) {
		return id, fmt.Errorf("berth %s %s said %q", verb, id, out)
	}
	return id, nil
}

// auditOf returns the audit entry of a queue approval.
func (w *world) auditOf(id string) *mcpexport.AuditEntry {
	w.t.Helper()
	data, _ := os.ReadFile(w.paths.Audit())
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e mcpexport.AuditEntry
		if json.Unmarshal([]byte(line), &e) == nil && e.Approval == id {
			return &e
		}
	}
	w.t.Fatalf("no audit entry for approval %s in:\n%s", id, data)
	return nil
}

// inspectorRun is one run of the Inspector CLI.
type inspectorRun struct {
	code   int
	stdout string
	stderr *lineLog
}

// toolText returns the text content of a tools/call result printed by the
// Inspector, and its isError.
func (r *inspectorRun) toolText(t *testing.T) (string, bool) {
	t.Helper()
	var res struct {
		Content []struct {
			Type, Text string
		}
		IsError bool
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("inspector printed no tool result (exit %d): %v\nstdout: %s\nstderr: %s", r.code, err, r.stdout, r.stderr)
	}
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n"), res.IsError
}

func (r *inspectorRun) toolNames(t *testing.T) []string {
	t.Helper()
	var res struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 {
		t.Fatalf("inspector tools/list: exit %d, %v\nstdout: %s\nstderr: %s", r.code, err, r.stdout, r.stderr)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// startInspector starts `inspector --cli ARGS...`; wait for it with
// finish.
func startInspector(ctx context.Context, t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, *lineLog) {
	t.Helper()
	cmd := peers.Command(ctx, t, "inspector", append([]string{"--cli"}, args...)...)
	var out bytes.Buffer
	errs := newLineLog()
	cmd.Stdout, cmd.Stderr = &out, errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out, errs
}

func finishInspector(t *testing.T, cmd *exec.Cmd, out *bytes.Buffer, errs *lineLog) *inspectorRun {
	t.Helper()
	err := cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("inspector: %v\n%s", err, errs)
	}
	// In stdio mode the Inspector relays berth's stderr.
	checkNoRace(t, "berth serve (under the inspector)", errs.String())
	return &inspectorRun{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errs}
}

func inspector(ctx context.Context, t *testing.T, args ...string) *inspectorRun {
	t.Helper()
	cmd, out, errs := startInspector(ctx, t, args...)
	return finishInspector(t, cmd, out, errs)
}

// TestInspectorCLI drives `berth serve` with the MCP Inspector CLI over
// stdio, SSE and Streamable HTTP: it lists the tools (a denied tool is not
// listed), calls an allowed tool, sees an unapproved call refused after
// the approval timeout with the command that allows it, and sees a waiting
// call settled from another process by `berth approve ID` and `berth deny
// ID`, each decision in the audit log.
func TestInspectorCLI(t *testing.T) {
	peers.Require(t)
	w := newWorld(t)
	w.demo()
	w.policy(demoEcho, "allow")
	w.policy(demoSecret, "deny")
	short := w.serve(2, "--sse", "127.0.0.1:0", "--http", "127.0.0.1:0", "--approval-timeout", "2s")
	long := w.serve(2, "--sse", "127.0.0.1:0", "--http", "127.0.0.1:0", "--approval-timeout", "60s")

	type transport struct {
		name string
		// args returns the Inspector's target for a server with the
		// given approval timeout; log is where berth's log shows up.
		args func(short bool) []string
		log  func(short bool, insp *lineLog) *lineLog
	}
	url := func(s *served, suffix string) string {
		for _, u := range s.urls {
			if strings.HasSuffix(u, suffix) {
				return u
			}
		}
		t.Fatalf("berth serve listens on %v, none ends in %s", s.urls, suffix)
		return ""
	}
	httpTransport := func(name, suffix string) transport {
		return transport{
			name: name,
			args: func(isShort bool) []string {
				if isShort {
					return []string{url(short, suffix), "--header", short.authHeader()}
				}
				return []string{url(long, suffix), "--header", long.authHeader()}
			},
			log: func(isShort bool, _ *lineLog) *lineLog {
				if isShort {
					return short.log
				}
				return long.log
			},
		}
	}
	stdio := transport{
		name: "stdio",
		args: func(isShort bool) []string {
			var args []string
			for _, kv := range w.env() {
				args = append(args, "-e", kv)
			}
			timeout := "60s"
			if isShort {
				timeout = "2s"
			}
			return append(args, w.berthPath(), "serve", "--workspace", w.ws, "--approval-timeout", timeout)
		},
		// The Inspector relays the stderr of the server it starts.
		log: func(_ bool, insp *lineLog) *lineLog { return insp },
	}

	for _, tr := range []transport{stdio, httpTransport("sse", "/sse"), httpTransport("http", "/mcp")} {
		t.Run(tr.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			run := func(isShort bool, args ...string) *inspectorRun {
				return inspector(ctx, t, append(tr.args(isShort), args...)...)
			}

			names := run(true, "--method", "tools/list").toolNames(t)
			if !slices.Contains(names, demoEcho) || !slices.Contains(names, demoWipe) || slices.Contains(names, demoSecret) {
				t.Fatalf("tools/list: %v; want %s and %s, and not the denied %s", names, demoEcho, demoWipe, demoSecret)
			}

			r := run(true, "--method", "tools/call", "--tool-name", demoEcho, "--tool-arg", "text=hello "+tr.name)
			if text, isErr := r.toolText(t); r.code != 0 || isErr || text != "echo: hello "+tr.name {
				t.Fatalf("allowed call: exit %d, %q\n%s", r.code, text, r.stderr)
			}

			// Nobody approves: refused after 2s, with the way to allow it.
			start := time.Now()
			r = run(true, "--method", "tools/call", "--tool-name", demoWipe, "--tool-arg", "text=all")
			text, isErr := r.toolText(t)
			if r.code != 5 || !isErr || !strings.Contains(r.stderr.String(), "tool_is_error") {
				t.Fatalf("unapproved call: exit %d (want 5, a tool error), isError %v\nstdout: %s\nstderr: %s", r.code, isErr, r.stdout, r.stderr)
			}
			for _, want := range []string{"berth refused to run " + demoWipe, "no one approved it within 2s", "Nothing was run", "berth policy set " + demoWipe + " allow"} {
				if !strings.Contains(text, want) {
					t.Errorf("refusal %q does not say %q", text, want)
				}
			}
			if d := time.Since(start); d < 2*time.Second {
				t.Errorf("refused after %v, before the approval timeout", d)
			}

			// Approved, then denied, from another process.
			for _, allow := range []bool{true, false} {
				cmd, out, errs := startInspector(ctx, t, append(tr.args(false), "--method", "tools/call", "--tool-name", demoWipe, "--tool-arg", "text=ok")...)
				type settled struct {
					id  string
					err error
				}
				ch := make(chan settled, 1)
				go func() {
					id, err := w.settleNext(ctx, tr.log(false, errs), demoWipe, allow)
					ch <- settled{id, err}
				}()
				r := finishInspector(t, cmd, out, errs)
				s := <-ch
				if s.err != nil {
					t.Fatalf("settling from another process: %v\ninspector stderr: %s", s.err, errs)
				}
				text, isErr := r.toolText(t)
				a := w.auditOf(s.id)
				if allow {
					if r.code != 0 || isErr || text != "wiped ok" {
						t.Fatalf("approved call: exit %d, %q", r.code, text)
					}
					if a.Decision != "allow" || a.DecidedBy != "queue" || a.Outcome != "ran" {
						t.Errorf("audit of approved call: %+v", a)
					}
				} else {
					if r.code != 5 || !isErr || !strings.Contains(text, "it was denied with `berth deny "+s.id+"`") || !strings.Contains(text, "berth policy set "+demoWipe+" allow") {
						t.Fatalf("denied call: exit %d, %q", r.code, text)
					}
					if a.Decision != "deny" || a.DecidedBy != "queue" || a.Outcome != "refused" {
						t.Errorf("audit of denied call: %+v", a)
					}
				}
			}
		})
	}
}

// TestInspectorThroughServerEverything proxies a server we did not write:
// a plugin whose stdio server is @modelcontextprotocol/server-everything
// (run by node 22, found on the PATH berth serve passes to its servers) is
// trusted and enabled, and the Inspector CLI lists and calls its tools
// through `berth serve`, over Streamable HTTP and over stdio.
func TestInspectorThroughServerEverything(t *testing.T) {
	dir := peers.Require(t)
	node, err := peers.Node22()
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t)
	// Through the package's npm bin link: its npm tree is the program's
	// runtime prefix, all a confined server may run and read of it.
	w.path = append([]string{filepath.Join(dir, "node_modules", ".bin"), filepath.Dir(node)}, w.path...)
	w.plugin("everything", "srv", "mcp-server-everything", "stdio")
	const prefix = "everything__srv__"
	w.policy(prefix+"echo", "allow")
	w.policy(prefix+"get-sum", "allow")
	s := w.serve(1, "--http", "127.0.0.1:0", "--approval-timeout", "2s")
	stdio := []string{}
	for _, kv := range w.env() {
		stdio = append(stdio, "-e", kv)
	}
	stdio = append(stdio, w.berthPath(), "serve", "--workspace", w.ws, "--approval-timeout", "2s")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name   string
		target []string
	}{{"http", []string{s.urls[0], "--header", s.authHeader()}}, {"stdio", stdio}} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(args ...string) *inspectorRun {
				return inspector(ctx, t, append(slices.Clone(tc.target), args...)...)
			}
			names := run("--method", "tools/list").toolNames(t)
			for _, want := range []string{"echo", "get-sum", "get-tiny-image", "trigger-long-running-operation"} {
				if !slices.Contains(names, prefix+want) {
					t.Fatalf("tools/list through berth: %v; want %s%s", names, prefix, want)
				}
			}
			for _, n := range names {
				if !strings.HasPrefix(n, prefix) {
					t.Errorf("tool %q is not namespaced", n)
				}
			}
			r := run("--method", "tools/call", "--tool-name", prefix+"echo", "--tool-arg", "message=through berth")
			if text, isErr := r.toolText(t); r.code != 0 || isErr || text != "Echo: through berth" {
				t.Fatalf("echo: exit %d, %q\n%s", r.code, text, r.stderr)
			}
			r = run("--method", "tools/call", "--tool-name", prefix+"get-sum", "--tool-args-json", `{"a":2,"b":3}`)
			if text, isErr := r.toolText(t); r.code != 0 || isErr || !strings.Contains(text, "is 5") {
				t.Fatalf("get-sum: exit %d, %q\n%s", r.code, text, r.stderr)
			}
			// A tool the policy does not allow is not run: get-env would
			// show the server's environment.
			r = run("--method", "tools/call", "--tool-name", prefix+"get-env")
			if text, isErr := r.toolText(t); r.code != 5 || !isErr || !strings.Contains(text, "berth policy set "+prefix+"get-env allow") || strings.Contains(text, "BERTH_HOME") {
				t.Fatalf("get-env without approval: exit %d, %q", r.code, text)
			}
		})
	}
}

// tsClient is an MCP client written with the TypeScript SDK
// (@modelcontextprotocol/sdk, pinned in testdata/peers). It declares the
// elicitation capability, connects over Streamable HTTP to argv[1] and
// calls argv[2] once for every answer in the JSON list argv[3]: each
// answer is what its elicitation handler replies if berth asks during
// that call ("never" declines and records that it was asked). It prints
// one JSON object: the session ID, the negotiated protocol version, and
// per call the messages berth asked and the result.
const tsClient = `
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [url, tool, answersJSON, token] = process.argv.slice(1);
const answers = JSON.parse(answersJSON);
const client = new Client({ name: 'berth-ts-sdk-test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
let current;
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  current.asked.push({ message: req.params.message, schema: req.params.requestedSchema });
  const a = current.answer;
  if (a.action === 'accept') return { action: 'accept', content: { decision: a.decision } };
  return { action: a.action === 'never' ? 'decline' : a.action };
});
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: 'Bearer ' + token } } });
await client.connect(transport);
const calls = [];
for (const answer of answers) {
  current = { answer, asked: [] };
  const result = await client.callTool({ name: tool, arguments: { text: 'from typescript' } });
  calls.push({ asked: current.asked, result });
}
console.log(JSON.stringify({ sessionId: transport.sessionId, protocolVersion: transport.protocolVersion, calls }));
await client.close();
`

type tsAnswer struct {
	Action   string `json:"action"`
	Decision string `json:"decision,omitempty"`
}

type tsOutput struct {
	SessionID       string `json:"sessionId"`
	ProtocolVersion string `json:"protocolVersion"`
	Calls           []struct {
		Asked []struct {
			Message string
			Schema  map[string]any
		}
		Result struct {
			Content []struct{ Type, Text string }
			IsError bool
		}
	}
}

// TestTypeScriptSDKElicitation approves calls with the elicitation form of
// a client built on the TypeScript SDK, over stateful Streamable HTTP:
// allow-once runs the call, decline and cancel refuse it with the way to
// allow it, and allow-always runs it and writes the policy, so the next
// call runs without asking.
func TestTypeScriptSDKElicitation(t *testing.T) {
	peers.Require(t)
	w := newWorld(t)
	w.demo()
	s := w.serve(1, "--http", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runTS := func(t *testing.T, tool string, answers ...tsAnswer) *tsOutput {
		t.Helper()
		plan, _ := json.Marshal(answers)
		cmd := peers.Command(ctx, t, "node", "--input-type=module", "-e", tsClient, s.urls[0], tool, string(plan), s.token)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("TypeScript client: %v\n%s\nberth serve:\n%s", err, errb.String(), s.log)
		}
		var res tsOutput
		if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Calls) != len(answers) {
			t.Fatalf("TypeScript client printed %q: %v", out.String(), err)
		}
		if res.SessionID == "" || res.ProtocolVersion != "2025-11-25" {
			t.Errorf("session %q at %q; want a stateful 2025-11-25 session", res.SessionID, res.ProtocolVersion)
		}
		return &res
	}
	text := func(r *tsOutput, i int) string {
		var parts []string
		for _, c := range r.Calls[i].Result.Content {
			parts = append(parts, c.Text)
		}
		return strings.Join(parts, "\n")
	}
	checkAsked := func(t *testing.T, r *tsOutput, i int, tool string) {
		t.Helper()
		if n := len(r.Calls[i].Asked); n != 1 {
			t.Fatalf("call %d: berth asked %d times, want once", i, n)
		}
		a := r.Calls[i].Asked[0]
		if !strings.Contains(a.Message, tool) || !strings.Contains(a.Message, `"text": "from typescript"`) || !strings.Contains(a.Message, "DESTRUCTIVE") {
			t.Errorf("the approval form does not show the tool, its arguments and its annotations:\n%s", a.Message)
		}
		if _, ok := a.Schema["properties"].(map[string]any)["decision"]; !ok {
			t.Errorf("the approval form has no decision field: %v", a.Schema)
		}
	}

	t.Run("allow-once", func(t *testing.T) {
		r := runTS(t, demoWipe, tsAnswer{"accept", "allow-once"}, tsAnswer{"decline", ""})
		checkAsked(t, r, 0, demoWipe)
		if r.Calls[0].Result.IsError || text(r, 0) != "wiped from typescript" {
			t.Fatalf("approved call: %q", text(r, 0))
		}
		// Once means once: the next call asks again.
		checkAsked(t, r, 1, demoWipe)
		if !r.Calls[1].Result.IsError {
			t.Fatalf("declined second call ran: %q", text(r, 1))
		}
	})
	for _, action := range []string{"decline", "cancel"} {
		t.Run(action, func(t *testing.T) {
			r := runTS(t, demoWipe, tsAnswer{action, ""})
			checkAsked(t, r, 0, demoWipe)
			got := text(r, 0)
			if !r.Calls[0].Result.IsError || strings.Contains(got, "wiped") || !strings.Contains(got, "berth refused to run "+demoWipe) || !strings.Contains(got, "berth policy set "+demoWipe+" allow") {
				t.Fatalf("%s: %q", action, got)
			}
		})
	}
	t.Run("allow-always", func(t *testing.T) {
		r := runTS(t, demoEcho, tsAnswer{"accept", "allow-always"}, tsAnswer{"never", ""})
		if len(r.Calls[0].Asked) != 1 || r.Calls[0].Result.IsError || text(r, 0) != "echo: from typescript" {
			t.Fatalf("allow-always: asked %d, %q", len(r.Calls[0].Asked), text(r, 0))
		}
		if len(r.Calls[1].Asked) != 0 || r.Calls[1].Result.IsError {
			t.Fatalf("after allow-always berth asked again (%d) or refused: %q", len(r.Calls[1].Asked), text(r, 1))
		}
		cfg, err := w.store.Config()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(cfg.ToolPolicy, func(r store.PolicyRule) bool {
			return r.Pattern == demoEcho && r.Action == "allow" && r.Plugin == "demo"
		}) {
			t.Fatalf("allow-always wrote no policy: %+v", cfg.ToolPolicy)
		}
	})
}
