//go:build unix

package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/procgroup"
	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/store"
)

// A server that dies in the middle of a call is restarted with backoff.
// The call that found it dead fails, saying it may have run, unless the
// tool is read-only or idempotent: then it runs once more after the
// restart. A successful call resets the count of restarts in a row.
func TestDeadChildRestartAndRetry(t *testing.T) {
	f := newFixture(t)
	f.plugin("demo", map[string]any{"main": map[string]any{"stdio": map[string]any{
		"command": "berth-testserver", "args": []string{"-tools", "echo,die,die_once,pid", "-marker-dir", "${workspace}"}}}})
	p := f.open(nil)
	ctx := context.Background()
	before := serverPIDs(t, p, "demo__main__pid").PID

	_, err := p.Call(ctx, "demo__main__die", nil, allow)
	if err == nil || !strings.Contains(err.Error(), "may or may not have run") || !strings.Contains(err.Error(), "restarting") {
		t.Fatalf("die: %v", err)
	}
	if alive(before) {
		t.Fatalf("the dead server %d is still there", before)
	}
	st := status(t, p, "demo__main")
	if st.Restarts != 1 || st.RestartsInRow != 1 {
		t.Fatalf("after one death: %+v", st)
	}
	// The restart comes after the backoff (20ms in this test).
	testkit.Eventually(t, 10*time.Second, "the restart", func() bool { return status(t, p, "demo__main").State == StateRunning })
	after := serverPIDs(t, p, "demo__main__pid").PID // a successful call
	if after == before {
		t.Fatal("same pid after restart")
	}
	if st := status(t, p, "demo__main"); st.RestartsInRow != 0 || st.Restarts != 1 {
		t.Fatalf("a successful call did not reset the count: %+v", st)
	}
	// die_once is read-only: it dies, the pool restarts the server and
	// calls it again, and the second call answers.
	if got := callText(t, p, "demo__main__die_once", "{}"); got != "survived" {
		t.Fatalf("die_once: %q", got)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "died-once")); err != nil {
		t.Fatal("die_once did not die the first time")
	}
	if st := status(t, p, "demo__main"); st.Restarts != 2 || st.RestartsInRow != 0 {
		t.Fatalf("after the retried call: %+v", st)
	}
	if !strings.Contains(strings.Join(status(t, p, "demo__main").StderrTail, "\n"), "dying once") {
		t.Fatalf("stderr tail: %q", status(t, p, "demo__main").StderrTail)
	}
}

// A server that keeps dying is restarted after 1, 2, 4, 8 and 16 times
// the backoff, and then left failed.
func TestRestartBackoffGivesUp(t *testing.T) {
	f := newFixture(t)
	f.plugin("demo", map[string]any{"main": testServer("-tools", "echo", "-die-after", "10ms", "-stderr", "about to die")})
	start := time.Now()
	p := f.open(func(o *Options) { o.RestartBackoff = 25 * time.Millisecond })
	testkit.Eventually(t, 20*time.Second, "giving up", func() bool { return status(t, p, "demo__main").GaveUp })
	elapsed := time.Since(start)
	st := status(t, p, "demo__main")
	if st.State != StateFailed || st.Restarts != MaxRestarts || st.RestartsInRow != MaxRestarts || !st.NextRestart.IsZero() {
		t.Fatalf("status %+v", st)
	}
	if min := 25 * time.Millisecond * (1 + 2 + 4 + 8 + 16); elapsed < min {
		t.Fatalf("gave up after %s, before the backoff of %s", elapsed, min)
	}
	if !strings.Contains(st.LastError, "exited with status 4") || !strings.Contains(st.LastError, "about to die") {
		t.Fatalf("last error %q", st.LastError)
	}
	_, err := p.Call(context.Background(), "demo__main__echo", nil, allow)
	if err == nil || !strings.Contains(err.Error(), "gave up") {
		t.Fatalf("call to a server that gave up: %v", err)
	}
	log, _ := os.ReadFile(f.paths.Log("demo__main"))
	for _, want := range []string{"restart 1 of 5 in 25ms", "restart 5 of 5 in 400ms", "gave up after 5 restarts", "about to die"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// A server that does not answer within the call timeout is treated as
// dead: killed (its whole group) and restarted.
func TestHungChild(t *testing.T) {
	f := newFixture(t)
	f.plugin("demo", map[string]any{"main": map[string]any{
		"stdio":    map[string]any{"command": "berth-testserver", "args": []string{"-tools", "hang,pid"}},
		"timeouts": map[string]any{"call": "1s"},
	}})
	p := f.open(nil)
	pid := serverPIDs(t, p, "demo__main__pid").PID
	start := time.Now()
	_, err := p.Call(context.Background(), "demo__main__hang", nil, allow)
	if err == nil || !strings.Contains(err.Error(), "hung") || !strings.Contains(err.Error(), "may or may not have run") {
		t.Fatalf("hang: %v", err)
	}
	if d := time.Since(start); d < time.Second || d > 3*time.Second {
		t.Fatalf("the hung call returned after %s, want about the 1s call timeout", d)
	}
	testkit.Eventually(t, 2*time.Second, "the hung server to be killed", func() bool { return !alive(pid) })
	testkit.Eventually(t, 10*time.Second, "the restart", func() bool { return status(t, p, "demo__main").State == StateRunning })
	if serverPIDs(t, p, "demo__main__pid").PID == pid {
		t.Fatal("not restarted")
	}
}

// A server started through a wrapper (a bundled shell script) runs as a
// grandchild; when the wrapper dies, or the pool closes, the whole group
// goes.
func TestWrapperGrandchildDies(t *testing.T) {
	f := newFixture(t)
	f.install(f.bundleDir("demo", map[string]any{"main": map[string]any{"stdio": map[string]any{"command": "${bundle}/bin/wrapper"}}},
		map[string]string{"bin/wrapper": "#!/bin/sh\nberth-testserver -tools pid,echo; echo wrapper done >&2\n"}))
	p := f.open(nil)
	ids := serverPIDs(t, p, "demo__main__pid")
	wrapper := status(t, p, "demo__main").PID
	if ids.PPID != wrapper || ids.PGID != wrapper {
		t.Fatalf("server %+v is not the wrapper %d's child in its group", ids, wrapper)
	}
	// The wrapper dies: the pool notices at once (it waits for its own
	// child, not for the pipes the grandchild holds) and kills the group.
	syscall.Kill(wrapper, syscall.SIGKILL)
	testkit.Eventually(t, time.Second, "the grandchild to die with its wrapper", func() bool { return !alive(ids.PID) })
	testkit.Eventually(t, 10*time.Second, "the restart", func() bool {
		st := status(t, p, "demo__main")
		return st.State == StateRunning && st.PID != wrapper
	})
	ids2 := serverPIDs(t, p, "demo__main__pid")
	if ids2.PID == ids.PID {
		t.Fatal("not restarted")
	}
	p.Close()
	// Close has signalled the group and waited for the wrapper; the kernel
	// finishes the grandchild's exit a moment later.
	testkit.Eventually(t, time.Second, "the group to be gone after Close", func() bool { return !alive(ids2.PID) && !alive(ids2.PPID) })
}

// berth disable from another process while a call is in flight: the call
// is cancelled with a clear error and the child is gone within a second.
func TestDisableFromAnotherProcessDuringCall(t *testing.T) {
	f := newFixture(t)
	f.plugin("demo", map[string]any{"main": testServer("-tools", "slow,pid")})
	p := f.open(nil)
	pid := serverPIDs(t, p, "demo__main__pid").PID
	type result struct {
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		_, err := p.Call(context.Background(), "demo__main__slow", json.RawMessage(`{"ms": 30000}`), allow)
		done <- result{err, time.Now()}
	}()
	testkit.Eventually(t, 5*time.Second, "the slow call to start", func() bool {
		return strings.Contains(strings.Join(status(t, p, "demo__main").StderrTail, "\n"), "slow call started")
	})
	cmd := exec.Command(filepath.Join(f.bin, "berth-disable"), f.home, f.ws, "demo")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("berth-disable: %v %s", err, out)
	}
	disabled := time.Now()
	select {
	case r := <-done:
		if r.err == nil || !strings.Contains(r.err.Error(), "cancelled") || !strings.Contains(r.err.Error(), "demo was disabled in "+f.ws) {
			t.Fatalf("call error: %v", r.err)
		}
		if d := r.at.Sub(disabled); d > time.Second {
			t.Fatalf("the call was cancelled %s after the disable", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call was not cancelled")
	}
	testkit.Eventually(t, time.Second-time.Since(disabled), "the child to be gone", func() bool { return !alive(pid) })
	t.Logf("child gone %s after the disable", time.Since(disabled))
	tools, err := p.Tools(context.Background())
	if err != nil || len(tools) != 0 {
		t.Fatalf("tools after disable: %v %v", tools, err)
	}
	if st := status(t, p, "demo__main"); st.State != StateStopped || !strings.Contains(st.LastError, "disabled") {
		t.Fatalf("status %+v", st)
	}
	// Enabling again (here in this process) starts it again.
	if _, err := Enable(context.Background(), f.store, f.ws, "demo", ""); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the re-enabled server", func() bool {
		tools, _ := p.Tools(context.Background())
		return len(tools) == 2
	})
}

// A staged file edited, chmod-ed, added or removed: the next call fails
// with drift, naming the file, and the plugin's children are killed.
func TestDrift(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(snap string)
		want   string
	}{
		{"edited", func(snap string) {
			os.Chmod(filepath.Join(snap, "share"), 0o755)
			os.WriteFile(filepath.Join(snap, "share", "data.txt"), []byte("tampered\n"), 0o644)
		}, "changed share/data.txt (content)"},
		{"chmod", func(snap string) { os.Chmod(filepath.Join(snap, "share", "data.txt"), 0o755) }, "changed share/data.txt (mode 100644 -> 100755)"},
		{"added", func(snap string) {
			os.Chmod(filepath.Join(snap, "share"), 0o755)
			os.WriteFile(filepath.Join(snap, "share", "new.txt"), []byte("x"), 0o644)
		}, "added share/new.txt"},
		{"removed", func(snap string) {
			os.Chmod(filepath.Join(snap, "share"), 0o755)
			os.Remove(filepath.Join(snap, "share", "data.txt"))
		}, "removed share/data.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			rec := f.plugin("demo", map[string]any{"main": testServer("-tools", "echo,pid")})
			p := f.open(func(o *Options) { o.PollInterval = -1 }) // only the call's boundary may notice
			pid := serverPIDs(t, p, "demo__main__pid").PID
			tc.tamper(f.paths.Snapshot(mustDigest(rec.Digest)))
			waitNoticed(t, p, "demo")
			_, err := p.Call(context.Background(), "demo__main__echo", json.RawMessage(`{"text":"x"}`), allow)
			var de *store.DriftError
			if !errors.Is(err, store.ErrDrift) || !errors.As(err, &de) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "berth verify") {
				t.Fatalf("call after tampering: %v", err)
			}
			testkit.Eventually(t, time.Second, "the drifted plugin's child to be killed", func() bool { return !alive(pid) })
			if st := status(t, p, "demo__main"); st.State != StateDrifted {
				t.Fatalf("status %+v", st)
			}
			if tools, err := p.Tools(context.Background()); err != nil || len(tools) != 0 {
				t.Fatalf("tools of a drifted plugin: %v %v", tools, err)
			}
		})
	}
}

// Plugins "a-b" with server "c" and "a" with server "b-c", whose names
// used to meet ("a-b-c__echo"), export distinct names, each known to
// belong to its own plugin; a rule of one never reaches the other.
func TestPluginsNeverShareNames(t *testing.T) {
	f := newFixture(t)
	f.plugin("a-b", map[string]any{"c": testServer("-tools", "echo,sum")})
	f.plugin("a", map[string]any{"b-c": testServer("-tools", "echo")})
	ctx := context.Background()
	if err := f.store.SetPolicy(ctx, store.PolicyRule{Pattern: "a__*", Action: store.ActionDeny}); err != nil {
		t.Fatal(err)
	}
	if err := f.store.SetPolicy(ctx, store.PolicyRule{Pattern: "a-b__c__*", Action: store.ActionAllow}); err != nil {
		t.Fatal(err)
	}
	p := f.open(nil)
	tools, err := p.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range tools {
		got = append(got, tl.Name+"/"+tl.Plugin+"/"+string(tl.Policy.Action))
	}
	if want := []string{"a-b__c__echo/a-b/allow", "a-b__c__sum/a-b/allow"}; !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v (a's tools denied by a__*)", got, want)
	}
	for _, st := range p.Status() {
		if len(st.Collisions) != 0 {
			t.Fatalf("a collision: %+v", st)
		}
	}
	if _, err := p.Call(ctx, "a__b-c__echo", nil, allow); !errors.Is(err, ErrDenied) {
		t.Fatalf("a tool of a under a__* deny: %v", err)
	}
	if res, err := p.Call(ctx, "a-b__c__echo", json.RawMessage(`{"text":"x"}`), nil); err != nil || res.IsError {
		t.Fatalf("a tool of a-b under a-b__c__* allow: %v", err)
	}
}

// The startup timeout covers spawn, handshake and the first tools/list.
func TestStartupTimeout(t *testing.T) {
	f := newFixture(t)
	f.plugin("demo", map[string]any{"main": map[string]any{
		"stdio":    map[string]any{"command": "berth-testserver", "args": []string{"-hang-start"}},
		"timeouts": map[string]any{"startup": "1s"},
	}, "other": testServer("-tools", "echo")})
	start := time.Now()
	p := f.open(nil)
	st := status(t, p, "demo__main")
	if st.State != StateFailed || !strings.Contains(st.LastError, "startup timeout of 1s") {
		t.Fatalf("status %+v", st)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("first attempt took %s", d)
	}
	if got := status(t, p, "demo__other").State; got != StateRunning {
		t.Fatalf("a slow server held up another: %s", got)
	}
}

// A legacy server that exits when its first message is server/discover
// (go-sdk #1177) is restarted with the 2025-11-25 handshake.
func TestLegacyFallback(t *testing.T) {
	f := newFixture(t)
	f.plugin("demo", map[string]any{"main": testServer("-tools", "echo", "-legacy", "-exit-on-discover")})
	p := f.open(nil)
	st := status(t, p, "demo__main")
	if st.State != StateRunning || st.Protocol != "2025-11-25" {
		t.Fatalf("status %+v", st)
	}
	if got := callText(t, p, "demo__main__echo", `{"text":"old"}`); got != "echo: old" {
		t.Fatal(got)
	}
}

// Manifest tools.allow and tools.deny: deny wins.
func TestManifestToolFilter(t *testing.T) {
	f := newFixture(t)
	f.plugin("demo", map[string]any{"main": map[string]any{
		"stdio": map[string]any{"command": "berth-testserver", "args": []string{"-tools", "echo,sum,env,pid"}},
		"tools": map[string]any{"allow": []string{"e*", "sum", "pid"}, "deny": []string{"env", "p?d"}},
	}})
	p := f.open(nil)
	if got := toolNames(t, p); strings.Join(got, " ") != "demo__main__echo demo__main__sum" {
		t.Fatalf("tools %v", got)
	}
	// The pinned surface holds only what the manifest lets through.
	st, _ := f.store.State()
	if n := len(st.Workspaces[f.ws].Plugins["demo"].Surfaces["main"].Tools); n != 2 {
		t.Fatalf("pinned %d tools", n)
	}
}

// Enabling another version replaces the running one; revoking stops it.
func TestReplaceAndRevoke(t *testing.T) {
	f := newFixture(t)
	f.plugin("demo", map[string]any{"main": testServer("-tools", "echo,pid")})
	p := f.open(nil)
	pid := serverPIDs(t, p, "demo__main__pid").PID

	dir := f.bundleDir("demo", map[string]any{"main": testServer("-tools", "echo,pid,sum")}, nil)
	m, _ := os.ReadFile(filepath.Join(dir, "berth.json"))
	os.WriteFile(filepath.Join(dir, "berth.json"), []byte(strings.Replace(string(m), `"1.0.0"`, `"1.1.0"`, 1)), 0o644)
	f.install(dir) // enables the highest version: 1.1.0
	testkit.Eventually(t, 10*time.Second, "the new version", func() bool {
		st := status(t, p, "demo__main")
		return st.Version == "1.1.0" && st.State == StateRunning
	})
	testkit.Eventually(t, time.Second, "the old server to be gone", func() bool { return !alive(pid) })
	if got := toolNames(t, p); len(got) != 3 {
		t.Fatalf("tools of 1.1.0: %v", got)
	}
	pid = serverPIDs(t, p, "demo__main__pid").PID

	if _, err := f.store.Revoke(context.Background(), "demo", "1.1.0"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 2*time.Second, "the revoked server to stop", func() bool { return !alive(pid) })
	st := status(t, p, "demo__main")
	if st.State != StateStopped || !strings.Contains(st.LastError, "demo@1.1.0 was revoked") {
		t.Fatalf("status %+v", st)
	}
	if _, err := p.Call(context.Background(), "demo__main__echo", nil, allow); err == nil {
		t.Fatal("call of a revoked plugin's tool")
	}
}

// Close waits for every server it stopped, including those of a version
// that was just replaced and is still shutting down: nothing of the old
// version outlives Close (a berth process that exits right after Close
// must leave no children behind).
func TestCloseWaitsForReplacedServers(t *testing.T) {
	f := newFixture(t)
	// The wrapper ignores SIGTERM and outlives the server, so stopping it
	// takes the whole grace twice and ends with SIGKILL.
	f.install(f.bundleDir("demo", map[string]any{"main": map[string]any{"stdio": map[string]any{"command": "${bundle}/bin/wrapper"}}},
		map[string]string{"bin/wrapper": "#!/bin/sh\ntrap '' TERM; berth-testserver -tools echo,pid; sleep 30\n"}))
	p := f.open(func(o *Options) { o.TerminateGrace = time.Second })
	wrapper := status(t, p, "demo__main").PID

	dir := f.bundleDir("demo", map[string]any{"main": testServer("-tools", "echo")}, nil)
	m, _ := os.ReadFile(filepath.Join(dir, "berth.json"))
	os.WriteFile(filepath.Join(dir, "berth.json"), []byte(strings.Replace(string(m), `"1.0.0"`, `"1.1.0"`, 1)), 0o644)
	f.install(dir)
	testkit.Eventually(t, 10*time.Second, "the new version", func() bool {
		st := status(t, p, "demo__main")
		return st.Version == "1.1.0" && st.State == StateRunning
	})
	if !groupAlive(wrapper) {
		t.Skip("the old version stopped before Close; nothing to check")
	}
	p.Close()
	// Close ends with SIGKILL to the group; the kernel delivers it
	// asynchronously, so allow the killed processes a moment to die (the
	// wrapper's sleep would keep the group alive for 30 s otherwise).
	testkit.Eventually(t, 2*time.Second, fmt.Sprintf("the process group %d of the replaced version to end after Close", wrapper), func() bool {
		return !groupAlive(wrapper)
	})
}

// groupAlive reports whether a live (not zombie) process is in the
// process group pgid.
func groupAlive(pgid int) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" && fields[0] != "X" {
			return true
		}
	}
	return false
}

// A reconcile that fails (here: config.json cannot be read) fails the
// boundary, and every later boundary too until the reconcile succeeds: a
// generation that moved is never taken as seen while its change (here: a
// disable) was not applied.
func TestFailedReconcileStaysDue(t *testing.T) {
	f := newFixture(t)
	f.plugin("demo", map[string]any{"main": testServer("-tools", "echo")})
	p := f.open(func(o *Options) { o.PollInterval = -1 })
	ctx := context.Background()
	if got := toolNames(t, p); len(got) != 1 {
		t.Fatalf("tools %v", got)
	}
	if err := os.WriteFile(f.paths.Config(), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Disable(ctx, f.store, f.ws, "demo"); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if tools, err := p.Tools(ctx); err == nil {
			t.Fatalf("boundary %d passed with an unreadable configuration and a disable not applied: %d tools", i, len(tools))
		}
		if _, err := p.Call(ctx, "demo__main__echo", json.RawMessage(`{"text":"x"}`), allow); err == nil {
			t.Fatalf("call %d of a disabled plugin's tool ran", i)
		}
	}
	if err := os.Remove(f.paths.Config()); err != nil {
		t.Fatal(err)
	}
	if tools, err := p.Tools(ctx); err != nil || len(tools) != 0 {
		t.Fatalf("after the configuration was fixed: %v %v", tools, err)
	}
}

// Stopping a stdio server is ordered: close its stdin, wait, SIGTERM to the
// group, wait, SIGKILL to the group; a grandchild in the background dies
// too.
func TestStopOrder(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	script := `trap 'echo term >> "$OUT"' TERM
sleep 1000 &
echo $! > "$OUT.bg"
cat > /dev/null
echo eof >> "$OUT"
while :; do sleep 0.05; done`
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	proc, err := startProcess("demo__srv", &spawnSpec{path: sh, argv: []string{"sh", "-c", script}, env: []string{"OUT=" + out, "PATH=/usr/bin:/bin"}, dir: dir}, newOutput(filepath.Join(dir, "log")), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { procgroup.Kill(proc.pid()) })
	var bg int
	testkit.Eventually(t, 5*time.Second, "the background grandchild", func() bool {
		b, _ := os.ReadFile(out + ".bg")
		bg, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return bg > 0
	})
	const grace = 300 * time.Millisecond
	start := time.Now()
	proc.stop(grace, false)
	if d := time.Since(start); d < 2*grace {
		t.Fatalf("stopped after %s, before stdin's and SIGTERM's grace of %s each", d, grace)
	}
	b, _ := os.ReadFile(out)
	if got := strings.Fields(string(b)); strings.Join(got, " ") != "eof term" {
		t.Fatalf("the server saw %q, want its stdin closed, then SIGTERM", got)
	}
	if !proc.killedByBerth() {
		t.Fatal("the exit is not reported as berth's signal")
	}
	testkit.Eventually(t, time.Second, "the grandchild to die", func() bool { return !alive(bg) })
}

// A server that exits as soon as its stdin closes, leaving a grandchild
// behind in its group: the grandchild is killed too.
func TestStopKillsGroupAfterLeaderExits(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "bg")
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	proc, err := startProcess("demo__srv", &spawnSpec{path: sh, argv: []string{"sh", "-c", `sleep 1000 & echo $! > "$OUT"; cat > /dev/null`},
		env: []string{"OUT=" + out, "PATH=/usr/bin:/bin"}, dir: dir}, newOutput(filepath.Join(dir, "log")), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { procgroup.Kill(proc.pid()) })
	var bg int
	testkit.Eventually(t, 5*time.Second, "the background grandchild", func() bool {
		b, _ := os.ReadFile(out)
		bg, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return bg > 0
	})
	proc.stop(time.Second, false)
	if proc.killedByBerth() {
		t.Fatal("the leader did not exit by itself on EOF; the test does not test what it should")
	}
	testkit.Eventually(t, time.Second, "the grandchild to die", func() bool { return !alive(bg) })
}

// A boundary whose caller gave up while a newly enabled plugin was being
// set up does not leave that plugin broken: the next boundary sets it up
// again.
func TestCancelledReconcileRetried(t *testing.T) {
	f := newFixture(t)
	f.plugin("one", map[string]any{"main": testServer("-tools", "echo")})
	p := f.open(func(o *Options) { o.PollInterval = -1 })
	f.plugin("two", map[string]any{"main": testServer("-tools", "echo")})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	p.Tools(cancelled)
	testkit.Eventually(t, 10*time.Second, "the tools of the plugin enabled meanwhile", func() bool {
		return len(toolNames(t, p)) == 2
	})
}
