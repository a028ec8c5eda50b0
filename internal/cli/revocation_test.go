package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// berthAs runs berth in-process with BERTH_HOME set to home.
func berthAs(t *testing.T, home string, want int, args ...string) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, func(k string) string {
		if k == "BERTH_HOME" {
			return home
		}
		return ""
	}, strings.NewReader(""), &out, &errb)
	if code != want {
		t.Fatalf("berth %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// A catalog revokes a version that runs: the next marketplace update
// disables it in every workspace with the generation bump that disable
// makes, so a running pool drops its tools and refuses its calls at its
// next boundary, without being told; berth verify then fails for it (exit
// 4) naming the reason, and it cannot be enabled again.
func TestRevocationReachesRunningPool(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the test server is started as a Unix program")
	}
	dir := t.TempDir()
	curator, home := filepath.Join(dir, "curator"), filepath.Join(dir, "home")
	repo, keys := filepath.Join(dir, "repo"), filepath.Join(dir, "keys")
	bundleDir := filepath.Join(dir, "echo")
	buildPrograms(t, filepath.Join(bundleDir, "bin"), "github.com/berth-mcp/berth/pool/internal/testserver/berth-testserver")
	manifest := `{
  "manifestVersion": 1,
  "name": "acme-echo",
  "version": "1.0.0",
  "description": "echoes",
  "mcpServers": {"main": {"stdio": {"command": "${bundle}/bin/berth-testserver", "args": ["-tools", "echo"]}}}
}`
	if err := os.WriteFile(filepath.Join(bundleDir, "berth.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	berthAs(t, curator, 0, "catalog", "init", repo, "--keys", keys, "--name", "acme")
	berthAs(t, curator, 0, "keygen", "--out", filepath.Join(dir, "acme"))
	berthAs(t, curator, 0, "signers", "add-key", "acme", filepath.Join(dir, "acme.pub"))
	berthAs(t, curator, 0, "sign", bundleDir, "--key", filepath.Join(dir, "acme.key"))
	berthAs(t, curator, 0, "catalog", "add", repo, bundleDir, "--keys", keys)

	ws1, ws2 := filepath.Join(dir, "ws1"), filepath.Join(dir, "ws2")
	for _, ws := range []string{ws1, ws2} {
		if err := os.Mkdir(ws, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	berthAs(t, home, 0, "marketplace", "add", "acme", repo, "--root", filepath.Join(repo, "1.root.json"))
	berthAs(t, home, 0, "install", "acme-echo", "--enable", "--workspace", ws1, "--yes")
	berthAs(t, home, 0, "enable", "acme-echo", "--workspace", ws2)

	paths, err := store.NewPaths(home)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pool.Open(ctx, store.Open(paths, nil), ws1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	allow := pool.ApproverFunc(func(context.Context, *pool.ApprovalRequest) (pool.Decision, error) {
		return pool.Decision{Allow: true, By: "test"}, nil
	})
	const tool = "acme-echo__main__echo"
	if res, err := p.Call(ctx, tool, json.RawMessage(`{"text":"before"}`), allow); err != nil || res.IsError {
		t.Fatalf("the call before the revocation: %v %+v", err, res)
	}

	berthAs(t, curator, 0, "catalog", "status", repo, "acme-echo@1.0.0", "revoked", "--keys", keys, "--reason", "exfiltrates notes")
	out, _ := berthAs(t, home, 0, "marketplace", "update")
	if !strings.Contains(out, "REVOKED: catalog acme revoked acme-echo@1.0.0 (exfiltrates notes); berth disabled it in 2 workspace(s)") {
		t.Fatalf("marketplace update does not say so:\n%s", out)
	}

	// The running pool drops it at its next boundary (it polls the
	// generation; no one tells it).
	testkit.Eventually(t, 10*time.Second, "the revoked plugin's tools to leave the list", func() bool {
		tools, err := p.Tools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(tools) == 0
	})
	if _, err := p.Call(ctx, tool, json.RawMessage(`{"text":"after"}`), allow); err == nil {
		t.Fatal("a revoked plugin's tool was called")
	}
	st, err := store.Open(paths, nil).State()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.EnabledIn("acme-echo")) != 0 {
		t.Fatalf("still enabled in %v", st.EnabledIn("acme-echo"))
	}

	out, _ = berthAs(t, home, 4, "verify")
	if !strings.Contains(out, "FAILED  acme-echo@1.0.0") || !strings.Contains(out, `revoked by catalog acme on `) || !strings.Contains(out, `"exfiltrates notes"`) {
		t.Fatalf("verify does not name the revocation:\n%s", out)
	}
	_, errs := berthAs(t, home, 4, "enable", "acme-echo", "--workspace", ws1)
	if !strings.Contains(errs, "revoked by catalog acme") {
		t.Fatalf("enable: %s", errs)
	}
	// A second update says nothing new.
	out, _ = berthAs(t, home, 0, "marketplace", "update")
	if strings.Contains(out, "REVOKED") {
		t.Fatalf("the second update reports it again:\n%s", out)
	}
}
