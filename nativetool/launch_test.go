package nativetool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/testkit"
)

// The example plugin, built in this run, end to end: list, every tool,
// and the workspace confinement.
func TestFmttoolsPlugin(t *testing.T) {
	exe, sum := buildFmttools(t)
	ws := t.TempDir()
	outside := t.TempDir()
	write := func(dir, name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
		return p
	}
	data := write(ws, "data.json", `{"b":[1,2],"a":{"c":true}}`)
	write(ws, "sub/x.json", `[1]`)
	write(ws, "notjson.txt", `{"a":`)
	secret := write(outside, "secret.json", `{"secret":1}`)
	if err := os.Symlink(secret, filepath.Join(ws, "escape.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("data.json", filepath.Join(ws, "inner.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "outdir")); err != nil {
		t.Fatal(err)
	}

	var logs syncBuffer
	ctx := context.Background()
	c, err := Launch(ctx, exe, sum, &LaunchOptions{Env: baseEnv(t), Workspace: ws, Stderr: &logs})
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	defer c.Kill()

	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	var names []string
	for _, tl := range tools {
		byName[tl.Name] = tl
		names = append(names, tl.Name)
	}
	if want := []string{"format_json", "format_json_in_place", "hash_file"}; !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	if a := byName["format_json"].Annotations; a == nil || !a.ReadOnlyHint || !a.IdempotentHint || a.OpenWorldHint == nil || *a.OpenWorldHint {
		t.Errorf("format_json annotations = %+v, want read-only, idempotent, closed world", a)
	}
	if a := byName["format_json_in_place"].Annotations; a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint {
		t.Errorf("format_json_in_place annotations = %+v, want destructive", a)
	}
	if a := byName["hash_file"].Annotations; a == nil || !a.ReadOnlyHint || !a.IdempotentHint {
		t.Errorf("hash_file annotations = %+v, want read-only and idempotent", a)
	}
	for _, tl := range tools {
		s, ok := tl.InputSchema.(map[string]any)
		if !ok || s["type"] != "object" {
			t.Errorf("%s: input schema %v is not an object schema", tl.Name, tl.InputSchema)
		}
	}
	if _, ok := byName["hash_file"].OutputSchema.(map[string]any); !ok {
		t.Errorf("hash_file has no output schema")
	}

	call := func(name, args string) *mcp.CallToolResult {
		t.Helper()
		r, err := c.CallTool(ctx, name, json.RawMessage(args))
		if err != nil {
			t.Fatalf("CallTool(%s, %s): %v", name, args, err)
		}
		return r
	}

	// format_json returns the file pretty-printed and leaves it alone.
	r := call("format_json", `{"path":"data.json"}`)
	want := "{\n  \"b\": [\n    1,\n    2\n  ],\n  \"a\": {\n    \"c\": true\n  }\n}\n"
	if r.IsError || textOf(r) != want {
		t.Errorf("format_json = %q (isError %v), want %q", textOf(r), r.IsError, want)
	}
	if r := call("format_json", `{"path":"data.json","indent":0}`); textOf(r) != `{"b":[1,2],"a":{"c":true}}`+"\n" {
		t.Errorf("format_json indent 0 = %q", textOf(r))
	}
	if b, _ := os.ReadFile(data); string(b) != `{"b":[1,2],"a":{"c":true}}` {
		t.Errorf("format_json changed the file: %q", b)
	}

	// format_json_in_place rewrites it, keeping its mode; a second call
	// finds nothing to do.
	r = call("format_json_in_place", `{"path":"data.json"}`)
	if r.IsError {
		t.Fatalf("format_json_in_place: %s", textOf(r))
	}
	var fr struct {
		Path    string
		Changed bool
		Bytes   int
	}
	if err := json.Unmarshal(r.StructuredContent.(json.RawMessage), &fr); err != nil || !fr.Changed || fr.Path != "data.json" || fr.Bytes != len(want) {
		t.Errorf("format_json_in_place structured = %+v (%v)", fr, err)
	}
	if b, _ := os.ReadFile(data); string(b) != want {
		t.Errorf("file after format_json_in_place = %q, want %q", b, want)
	}
	if fi, _ := os.Stat(data); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode after format_json_in_place = %v, want 0640", fi.Mode().Perm())
	}
	r = call("format_json_in_place", `{"path":"inner.json"}`)
	if err := json.Unmarshal(r.StructuredContent.(json.RawMessage), &fr); err != nil || fr.Changed || fr.Path != "data.json" {
		t.Errorf("second format_json_in_place through a link = %+v (%v), want unchanged data.json", fr, err)
	}
	if fi, err := os.Lstat(filepath.Join(ws, "inner.json")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("inner.json is no longer a symlink")
	}

	// hash_file.
	r = call("hash_file", `{"path":"sub/x.json"}`)
	var hr struct {
		Path   string
		SHA256 string
		Size   int64
	}
	wantSum := sha256.Sum256([]byte(`[1]`))
	if err := json.Unmarshal(r.StructuredContent.(json.RawMessage), &hr); err != nil || hr.SHA256 != hex.EncodeToString(wantSum[:]) || hr.Size != 3 || hr.Path != "sub/x.json" {
		t.Errorf("hash_file = %+v (%v)", hr, err)
	}

	// Bad input is the model's to fix: isError, the plugin stays up.
	for _, tc := range []struct{ tool, args, want string }{
		{"format_json", `{"path":"notjson.txt"}`, "not valid JSON"},
		{"format_json", `{"path":"missing.json"}`, "no such file"},
		{"format_json", `{"path":"data.json","indent":9}`, "0 to 8"},
		{"format_json", `{"path":"data.json","extra":1}`, "unknown field"},
		{"hash_file", `{}`, "required"},
		{"hash_file", `{"path":"sub"}`, "not a regular file"},
		// Escapes.
		{"hash_file", `{"path":"../` + filepath.Base(outside) + `/secret.json"}`, `".."`},
		{"hash_file", `{"path":"sub/../../x"}`, `".."`},
		{"hash_file", `{"path":` + jsonString(secret) + `}`, "absolute"},
		{"hash_file", `{"path":"escape.json"}`, "outside the workspace"},
		{"hash_file", `{"path":"outdir/secret.json"}`, "outside the workspace"},
		{"format_json_in_place", `{"path":"escape.json"}`, "outside the workspace"},
	} {
		r := call(tc.tool, tc.args)
		if !r.IsError || !strings.Contains(textOf(r), tc.want) {
			t.Errorf("%s %s = %q (isError %v), want an error containing %q", tc.tool, tc.args, textOf(r), r.IsError, tc.want)
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != `{"secret":1}` {
		t.Errorf("the file outside the workspace changed: %q", b)
	}

	// A tool the plugin does not have is an error, not a crash.
	if _, err := c.CallTool(ctx, "nope", nil); err == nil || errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("CallTool(nope) = %v, want an error naming the tool", err)
	}
	if c.Exited() {
		t.Fatal("the plugin exited")
	}
	c.Kill()
	if !c.Exited() {
		t.Error("Exited() = false after Kill")
	}
	if _, err := c.ListTools(ctx); !errors.Is(err, ErrExited) {
		t.Errorf("ListTools after Kill = %v, want ErrExited", err)
	}
	if !strings.Contains(logs.String(), "formatted a file in place") {
		t.Errorf("the plugin's log line did not reach Stderr:\n%s", logs.String())
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A checksum mismatch refuses to start: the process never runs (it would
// write a marker file first thing), and the error says what and why.
func TestChecksumMismatchNeverStarts(t *testing.T) {
	exe, sum := selfPlugin(t)
	marker := filepath.Join(t.TempDir(), "started")
	env := append(baseEnv(t), envTestPlugin+"=1", envTestMarker+"="+marker, "GORACE=atexit_sleep_ms=0")
	ctx := context.Background()

	wrong := sum
	wrong[0] ^= 0xff
	_, err := Launch(ctx, exe, wrong, &LaunchOptions{Env: env})
	var ce *ChecksumError
	if !errors.As(err, &ce) || !errors.Is(err, ErrChecksumMismatch) {
		t.Fatalf("Launch with a wrong checksum = %v, want a *ChecksumError", err)
	}
	if ce.Path != exe || ce.Want != wrong || ce.Got != sum {
		t.Errorf("ChecksumError = %+v", ce)
	}
	for _, s := range []string{exe, hex.EncodeToString(sum[:]), hex.EncodeToString(wrong[:]), "does not match the reviewed bundle", "berth verify", "not started"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the plugin ran despite the checksum mismatch (marker: %v)", err)
	}

	// The marker does work: the right checksum starts it.
	c, err := Launch(ctx, exe, sum, &LaunchOptions{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	c.Kill()
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("marker missing after a good launch: %v", err)
	}
}

// A binary swapped after review (here: one byte appended, still runnable)
// is refused with both hashes.
func TestSwappedBinaryRefused(t *testing.T) {
	exe, sum := buildFmttools(t)
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	swapped := filepath.Join(t.TempDir(), "fmttools")
	if err := os.WriteFile(swapped, append(b, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Launch(context.Background(), swapped, sum, &LaunchOptions{Env: baseEnv(t)})
	var ce *ChecksumError
	if !errors.As(err, &ce) || ce.Got != sha256.Sum256(append(b, 0)) || ce.Want != sum {
		t.Fatalf("Launch of a swapped binary = %v", err)
	}
}

// A panic in a handler fails only that call.
func TestHandlerPanicFailsOnlyThatCall(t *testing.T) {
	var logs syncBuffer
	c := launchSelf(t, &LaunchOptions{Stderr: &logs})
	ctx := context.Background()
	r, err := c.CallTool(ctx, "panic", nil)
	if err != nil {
		t.Fatalf("CallTool(panic) = %v, want an isError result", err)
	}
	if !r.IsError || !strings.Contains(textOf(r), "panic: boom") {
		t.Errorf("CallTool(panic) = %q (isError %v)", textOf(r), r.IsError)
	}
	r, err = c.CallTool(ctx, "echo", json.RawMessage(`{"n":12345678901234567890}`))
	if err != nil || r.IsError {
		t.Fatalf("echo after a panic: %v %v", err, r)
	}
	if got := string(r.StructuredContent.(json.RawMessage)); !strings.Contains(got, "12345678901234567890") {
		t.Errorf("structuredContent = %s, want the big number intact", got)
	}
	if c.Exited() {
		t.Error("the plugin exited after a handler panic")
	}
	testkit.Eventually(t, 10*time.Second, "the panic's stack in the log", func() bool { return strings.Contains(logs.String(), "tool handler panicked") })
}

// A plugin that exits mid-call fails that call with ErrExited, and the
// Client reports it exited.
func TestPluginExitMidCall(t *testing.T) {
	var logs syncBuffer
	c := launchSelf(t, &LaunchOptions{Stderr: &logs})
	ctx := context.Background()
	_, err := c.CallTool(ctx, "exit", nil)
	if !errors.Is(err, ErrExited) {
		t.Fatalf("CallTool(exit) = %v, want ErrExited", err)
	}
	if !c.Exited() {
		t.Error("Exited() = false after the plugin exited")
	}
	if _, err := c.CallTool(ctx, "echo", nil); !errors.Is(err, ErrExited) {
		t.Errorf("a later call = %v, want ErrExited", err)
	}
	testkit.Eventually(t, 10*time.Second, "the plugin's last words in the log", func() bool { return strings.Contains(logs.String(), "exiting now") })
}

// Kill also ends a plugin whose handler ignores cancellation, and fails
// the call in progress with ErrExited.
func TestKillHungPlugin(t *testing.T) {
	c := launchSelf(t, nil)
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(context.Background(), "hang_hard", nil)
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	c.Kill()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Kill took %v", d)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, ErrExited) {
			t.Errorf("the hung call = %v, want ErrExited", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the hung call did not return after Kill")
	}
}

// A cancelled call returns the context's error and leaves the plugin up.
func TestCallCancelled(t *testing.T) {
	c := launchSelf(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.CallTool(ctx, "hang", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CallTool(hang) = %v, want DeadlineExceeded", err)
	}
	if r, err := c.CallTool(context.Background(), "echo", nil); err != nil || r.IsError {
		t.Fatalf("echo after a cancelled call: %v", err)
	}
}

// lateTimerCtx has a deadline whose timer never fires: Done stays open and
// Err nil after the deadline, as a context's timer can lag under load
// (the cause of a flake of TestCallCancelled in a full test run).
type lateTimerCtx struct {
	context.Context
	dl time.Time
}

func (c lateTimerCtx) Deadline() (time.Time, bool) { return c.dl, true }

// A call whose deadline passes reports DeadlineExceeded even when the
// context's timer has not fired: neither the plugin's answer to its own
// ended context (an isError result, which came back as a success) nor
// gRPC's DeadlineExceeded status (which came back as another error) may
// stand for it.
func TestCallDeadlinePassedTimerLate(t *testing.T) {
	c := launchSelf(t, nil)
	ctx := lateTimerCtx{context.Background(), time.Now().Add(200 * time.Millisecond)}
	if r, err := c.CallTool(ctx, "hang", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("CallTool(hang) after its deadline, timer late = %+v, %v; want DeadlineExceeded", r, err)
	}
	ctx = lateTimerCtx{context.Background(), time.Now().Add(-time.Millisecond)}
	if r, err := c.CallTool(ctx, "echo", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("CallTool(echo) past its deadline, timer late = %+v, %v; want DeadlineExceeded", r, err)
	}
	// The plugin's answer comes after the caller's deadline (here the
	// deadline is hidden from gRPC until it has passed, so the plugin
	// answers; in the flake the plugin's isError answer to its own ended
	// context beat its RST_STREAM): it is not returned as a success.
	ctx2 := hiddenDeadlineCtx{context.Background(), time.Now().Add(100 * time.Millisecond)}
	if r, err := c.CallTool(ctx2, "slow_ok", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("CallTool(slow_ok) answered after its deadline, timer late = %+v, %v; want DeadlineExceeded", r, err)
	}
	if r, err := c.CallTool(context.Background(), "echo", nil); err != nil || r.IsError {
		t.Fatalf("echo after: %v", err)
	}
}

// hiddenDeadlineCtx reports its deadline only once it has passed, and its
// timer never fires.
type hiddenDeadlineCtx struct {
	context.Context
	dl time.Time
}

func (c hiddenDeadlineCtx) Deadline() (time.Time, bool) {
	if time.Now().Before(c.dl) {
		return time.Time{}, false
	}
	return c.dl, true
}

// The plugin gets exactly the environment it is given (plus go-plugin's
// handshake variables), stdin from /dev/null and the working directory.
func TestEnvironmentStdinAndDir(t *testing.T) {
	t.Setenv("NATIVETOOL_HOST_SECRET", "s3cret")
	ws, dir := t.TempDir(), t.TempDir()
	c := launchSelf(t, &LaunchOptions{Env: []string{"FROM_ENV=declared"}, Workspace: ws, Dir: dir})
	r, err := c.CallTool(context.Background(), "env", nil)
	if err != nil || r.IsError {
		t.Fatalf("env: %v %v", err, r)
	}
	var got struct {
		Env            []string
		Cwd            string
		StdinIsDevNull bool
	}
	if err := json.Unmarshal(r.StructuredContent.(json.RawMessage), &got); err != nil {
		t.Fatal(err)
	}
	for _, kv := range got.Env {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "NATIVETOOL_HOST_SECRET":
			t.Errorf("the host's environment leaked: %s", kv)
		case slices.Contains([]string{"PATH", "HOME", "LANG", "TMPDIR", "GORACE", "FROM_ENV", EnvWorkspace, envTestPlugin, MagicCookieKey}, k),
			strings.HasPrefix(k, "PLUGIN_"):
		default:
			t.Errorf("unexpected environment entry %s", kv)
		}
	}
	for _, kv := range []string{"FROM_ENV=declared", EnvWorkspace + "=" + ws, MagicCookieKey + "=" + MagicCookieValue} {
		if !slices.Contains(got.Env, kv) {
			t.Errorf("environment lacks %s: %v", kv, got.Env)
		}
	}
	if got.Cwd != dir {
		t.Errorf("working directory = %s, want %s", got.Cwd, dir)
	}
	if !got.StdinIsDevNull {
		t.Error("the plugin's stdin is not /dev/null")
	}
}

// Everything the plugin writes ends up in LaunchOptions.Stderr: its hclog
// JSON (re-logged), raw stderr, and stdout after Serve.
func TestOutputRouting(t *testing.T) {
	var logs syncBuffer
	c := launchSelf(t, &LaunchOptions{Stderr: &logs})
	if _, err := c.CallTool(context.Background(), "log", nil); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"hello from the log", "k=v", "plain stderr line", "stdout line after serve"} {
		testkit.Eventually(t, 10*time.Second, fmt.Sprintf("%q in the log", s), func() bool { return strings.Contains(logs.String(), s) })
	}
}

// A result over the size limit is refused by the plugin's SDK as an
// isError result; the plugin stays up.
func TestOversizedResult(t *testing.T) {
	c := launchSelf(t, nil)
	r, err := c.CallTool(context.Background(), "big", nil)
	if err != nil || !r.IsError || !strings.Contains(textOf(r), "the protocol allows") {
		t.Fatalf("CallTool(big) = %v, %v", r, err)
	}
	if c.Exited() {
		t.Fatal("the plugin exited")
	}
}

func TestLaunchRefusesBadInput(t *testing.T) {
	exe, sum := selfPlugin(t)
	dir := t.TempDir()
	link := filepath.Join(dir, "link")
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		exe  string
		sum  [32]byte
		opts *LaunchOptions
		want string
	}{
		{"relative", "fmttools", sum, nil, "not absolute"},
		{"no checksum", exe, [32]byte{}, nil, "no checksum"},
		{"directory", dir, sum, nil, "not a regular file"},
		{"symlink", link, sum, nil, "not a regular file"},
		{"missing", filepath.Join(dir, "nope"), sum, nil, "no such file"},
		{"bad env", exe, sum, &LaunchOptions{Env: []string{"NOEQUALS"}}, "KEY=VALUE"},
		{"relative workspace", exe, sum, &LaunchOptions{Workspace: "ws"}, "not an absolute path"},
		{"contradictory workspace", exe, sum, &LaunchOptions{Workspace: "/a", Env: []string{EnvWorkspace + "=/b"}}, "set one of them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Launch(ctx, tc.exe, tc.sum, tc.opts)
			if err == nil {
				c.Kill()
				t.Fatal("Launch succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Launch = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// A program that never completes the handshake is killed at StartTimeout;
// a cancelled context aborts the launch.
func TestLaunchTimeoutAndCancel(t *testing.T) {
	exe, sum := selfPlugin(t)
	env := append(baseEnv(t), envTestSleeper+"=1")
	start := time.Now()
	_, err := Launch(context.Background(), exe, sum, &LaunchOptions{Env: env, StartTimeout: 500 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("Launch of a silent program = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the timeout took %v", d)
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start = time.Now()
	_, err = Launch(ctx, exe, sum, &LaunchOptions{Env: env, StartTimeout: 20 * time.Second})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Launch with a cancelled context = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the cancelled launch took %v", d)
	}
}

// Many calls at once on one Client.
func TestConcurrentCalls(t *testing.T) {
	c := launchSelf(t, nil)
	errc := make(chan error, 20)
	for i := range 20 {
		go func() {
			r, err := c.CallTool(context.Background(), "echo", json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)))
			if err == nil && !strings.Contains(textOf(r), fmt.Sprint(i)) {
				err = fmt.Errorf("call %d got %q", i, textOf(r))
			}
			errc <- err
		}()
	}
	for range 20 {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
}
