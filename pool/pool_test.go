//go:build unix

package pool

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/store"
)

func toolNames(t *testing.T, p *Pool) []string {
	t.Helper()
	tools, err := p.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Name)
	}
	return out
}

func TestStdioServer(t *testing.T) {
	f := newFixture(t)
	rec := f.plugin("demo", map[string]any{
		"main": map[string]any{"stdio": map[string]any{
			"command": "berth-testserver",
			"args":    []string{"-tools", "echo,fail,env,cwd,pid", "--root=${workspace}", "${bundle}/share/data.txt"},
			"env":     map[string]any{"DEMO_TOKEN": map[string]string{"fromEnv": "HOST_TOKEN"}},
		}},
	})
	p := f.open(func(o *Options) {
		o.LookupEnv = func(k string) (string, bool) {
			if k == "HOST_TOKEN" {
				return "s3cret", true
			}
			return "", false
		}
	})
	if got, want := toolNames(t, p), []string{"demo__main__cwd", "demo__main__echo", "demo__main__env", "demo__main__fail", "demo__main__pid"}; !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	if got := callText(t, p, "demo__main__echo", `{"text":"hi"}`); got != "echo: hi" {
		t.Fatalf("echo: %q", got)
	}
	// A tool error is a result, not an error.
	res, err := p.Call(context.Background(), "demo__main__fail", nil, allow)
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "always fails") {
		t.Fatalf("fail: %v %+v", err, res)
	}
	// The environment is the base plus the declared variable and the
	// server's own temp and cache directories, nothing else.
	env := strings.Split(callText(t, p, "demo__main__env", "{}"), "\n")
	var names []string
	for _, kv := range env {
		names = append(names, strings.SplitN(kv, "=", 2)[0])
	}
	if want := []string{"DEMO_TOKEN", "HOME", "LANG", "PATH", "TMPDIR", "XDG_CACHE_HOME"}; !slices.Equal(names, want) {
		t.Fatalf("env names %v, want %v", names, want)
	}
	if !slices.Contains(env, "DEMO_TOKEN=s3cret") {
		t.Fatalf("env %v lacks DEMO_TOKEN", env)
	}
	// Working directory: the staged snapshot; ${workspace} and ${bundle}
	// substituted.
	var cwd struct {
		Cwd  string
		Args []string
	}
	json.Unmarshal([]byte(callText(t, p, "demo__main__cwd", "{}")), &cwd)
	snap := f.paths.Snapshot(mustDigest(rec.Digest))
	if cwd.Cwd != snap || !slices.Contains(cwd.Args, "--root="+f.ws) || !slices.Contains(cwd.Args, snap+"/share/data.txt") {
		t.Fatalf("cwd %+v (snapshot %s, workspace %s)", cwd, snap, f.ws)
	}
	// Its own process group.
	ids := serverPIDs(t, p, "demo__main__pid")
	if ids.PGID != ids.PID {
		t.Fatalf("server is not a process group leader: %+v", ids)
	}
	st := status(t, p, "demo__main")
	if st.State != StateRunning || st.Tools != 5 || st.PID != ids.PID || st.Transport != "stdio" || st.StartedAt.IsZero() {
		t.Fatalf("status %+v", st)
	}
	// The surface was pinned in the state.
	state, _ := f.store.State()
	sf := state.Workspaces[f.ws].Plugins["demo"].Surfaces["main"]
	if sf == nil || len(sf.Tools) != 5 {
		t.Fatalf("pinned surface %+v", sf)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(ids.PID) {
		t.Fatalf("server %d still alive after Close", ids.PID)
	}
	if got := status(t, p, "demo__main").State; got != StateStopped {
		t.Fatalf("state after Close: %s", got)
	}
}

func TestFromEnvMissing(t *testing.T) {
	f := newFixture(t)
	f.plugin("demo", map[string]any{
		"needs": map[string]any{"stdio": map[string]any{"command": "berth-testserver",
			"env": map[string]any{"A": map[string]string{"fromEnv": "SET_VAR"}, "B": map[string]string{"fromEnv": "MISSING_VAR"}}}},
		"plain": testServer("-tools", "echo"),
	})
	p := f.open(func(o *Options) {
		o.LookupEnv = func(k string) (string, bool) {
			if k == "SET_VAR" {
				return "value-of-set-var", true
			}
			return "", false
		}
	})
	st := status(t, p, "demo__needs")
	if st.State != StateFailed || !st.GaveUp || !strings.Contains(st.LastError, "MISSING_VAR") || strings.Contains(st.LastError, "value-of-set-var") {
		t.Fatalf("status %+v", st)
	}
	if got := status(t, p, "demo__plain").State; got != StateRunning {
		t.Fatalf("the other server is %s", got)
	}
	_, err := p.Call(context.Background(), "demo__needs__echo", nil, allow)
	if err == nil || !strings.Contains(err.Error(), "MISSING_VAR") {
		t.Fatalf("call: %v", err)
	}
}

func TestPolicy(t *testing.T) {
	f := newFixture(t)
	f.plugin("demo", map[string]any{"main": testServer("-tools", "echo,destroy,sum")})
	ctx := context.Background()
	for _, r := range []store.PolicyRule{{Pattern: "demo__main__*", Action: "allow"}, {Pattern: "demo__main__sum", Action: "deny"}} {
		if err := f.store.SetPolicy(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	p := f.open(nil)
	tools, err := p.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]store.PolicyMatch{}
	for _, tl := range tools {
		got[tl.Name] = tl.Policy
	}
	if _, ok := got["demo__main__sum"]; ok || len(got) != 2 {
		t.Fatalf("denied tool listed: %v", got)
	}
	// nil approver: only what the policy allows by itself runs.
	if _, err := p.Call(ctx, "demo__main__echo", json.RawMessage(`{"text":"x"}`), nil); err != nil {
		t.Fatalf("glob-allowed echo: %v", err)
	}
	_, err = p.Call(ctx, "demo__main__destroy", nil, nil)
	if !errors.Is(err, ErrDenied) {
		t.Fatalf("destructive tool under a glob allow: %v", err)
	}
	_, err = p.Call(ctx, "demo__main__sum", nil, allow)
	if !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), "policy denies") {
		t.Fatalf("denied tool: %v", err)
	}
	// An exact allow covers the destructive tool; the pool picks it up at
	// its next boundary.
	if err := f.store.SetPolicy(ctx, store.PolicyRule{Pattern: "demo__main__destroy", Action: "allow"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Call(ctx, "demo__main__destroy", nil, nil); err != nil {
		t.Fatalf("exact allow: %v", err)
	}
	// The approver sees the request; a refusal wraps ErrDenied.
	var seen *ApprovalRequest
	_, err = p.Call(ctx, "demo__main__echo", json.RawMessage(`{"text":"y"}`), ApproverFunc(func(_ context.Context, r *ApprovalRequest) (Decision, error) {
		seen = r
		return Decision{By: "test", Reason: "no"}, nil
	}))
	if !errors.Is(err, ErrDenied) || seen == nil || seen.UpstreamTool != "echo" || seen.Server != "main" || seen.Plugin != "demo" || string(seen.Arguments) != `{"text":"y"}` || !seen.Annotations.ReadOnlyHint || seen.Policy.Pattern != "demo__main__*" {
		t.Fatalf("refusal %v, request %+v", err, seen)
	}
}

// A tool policy rule that cannot be read (here a misspelled action) fails
// every boundary closed, naming the rule: it is never skipped, since it
// may be the deny that matters.
func TestDamagedPolicyRuleFailsClosed(t *testing.T) {
	f := newFixture(t)
	f.plugin("demo", map[string]any{"main": testServer("-tools", "echo")})
	ctx := context.Background()
	if err := f.store.SetPolicy(ctx, store.PolicyRule{Pattern: "demo__main__*", Action: "allow"}); err != nil {
		t.Fatal(err)
	}
	cfg := `{"signers": [], "toolPolicy": [{"plugin": "demo", "pattern": "demo__main__*", "action": "ask"}, {"plugin": "demo", "pattern": "demo__main__echo", "action": "DENY"}]}`
	if err := os.WriteFile(f.paths.Config(), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Open(ctx, f.store, f.ws, f.options())
	if err == nil {
		defer p.Close()
		_, err = p.Call(ctx, "demo__main__echo", json.RawMessage(`{"text":"x"}`), nil)
	}
	if err == nil || !strings.Contains(err.Error(), `"DENY" is not a policy action`) || !strings.Contains(err.Error(), "berth policy") {
		t.Fatalf("a damaged deny rule: %v", err)
	}
}
