//go:build unix

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/internal/testkit"
)

// A plugin whose server is npx -y PKG@VERSION, end to end through the
// CLI, against a loopback npm registry: trust resolves and stages the
// tree before the review ends, and the review says so; the server starts
// and answers with the registry stopped; status says it runs staged;
// verify re-checks the tree offline and catches a changed file; a package
// with an install script is refused unless allowed by name.
func TestFetchedServerStagedAtTrust(t *testing.T) {
	bin := testkit.PeersBin(t)
	reg := testkit.NewNPMRegistry(t,
		testkit.NPMPackage{Name: "dep", Version: "1.0.0", Files: map[string]string{"index.js": `module.exports = "hello from dep";`}},
		testkit.NPMPackage{Name: "@acme/hello-mcp", Version: "1.0.0", Dependencies: map[string]string{"dep": "1.0.0"},
			Bin: map[string]string{"hello-mcp": "bin/server.js"}, Files: map[string]string{"bin/server.js": testkit.MCPServerJS("dep")}},
		testkit.NPMPackage{Name: "scripted", Version: "1.0.0", Bin: "s.js", Scripts: map[string]string{"postinstall": "node -e 0"},
			Files: map[string]string{"s.js": testkit.MCPServerJS("")}},
	)
	home := t.TempDir()
	t.Cleanup(func() { makeWritable(home) })
	if err := os.MkdirAll(filepath.Join(home, "fetchers"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "fetchers", "npmrc"), []byte("registry="+reg.URL()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + bin + ":/usr/bin:/bin"}
	run := func(args ...string) string {
		t.Helper()
		out, err := berthCmd(home, env, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("berth %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	plugin := func(name, spec string) string {
		dir := filepath.Join(t.TempDir(), name)
		os.MkdirAll(dir, 0o755)
		m := `{"manifestVersion": 1, "name": "` + name + `", "version": "1.0.0", "description": "a fetched server",
  "mcpServers": {"main": {"stdio": {"command": "npx", "args": ["-y", "` + spec + `"]}}}}`
		if err := os.WriteFile(filepath.Join(dir, "berth.json"), []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	src := plugin("hello", "@acme/hello-mcp@1.0.0")
	digest := strings.TrimSpace(run("digest", src))
	out := run("trust", "--yes", "--allow-unsigned", "--digest", digest, src)
	if !strings.Contains(out, "fetched  main: @acme/hello-mcp@1.0.0: 2 packages, ") || !strings.Contains(out, "staged at trust, starts offline") {
		t.Fatalf("the review does not say what was resolved:\n%s", out)
	}
	reg.Close()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	run("enable", "hello", "--workspace", ws)
	if out := run("call", "hello__main__hello", "--workspace", ws, "--yes"); !strings.Contains(out, "hello from dep") {
		t.Fatalf("the staged server's answer:\n%s", out)
	}
	var st []struct {
		ID      string `json:"id"`
		Fetched *struct {
			Staged bool   `json:"staged"`
			Lock   string `json:"lock"`
		} `json:"fetched"`
	}
	raw := run("status", "--workspace", ws, "--json")
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		// status --json may wrap the list
		var wrapped struct {
			Servers json.RawMessage `json:"servers"`
		}
		if json.Unmarshal([]byte(raw), &wrapped) != nil || json.Unmarshal(wrapped.Servers, &st) != nil {
			t.Fatalf("status --json: %v\n%s", err, raw)
		}
	}
	if len(st) != 1 || st[0].Fetched == nil || !st[0].Fetched.Staged || !strings.HasPrefix(st[0].Fetched.Lock, "sha256:") {
		t.Errorf("status --json: %s", raw)
	}
	if out := run("status", "--workspace", ws); !strings.Contains(out, "hello__main  @acme/hello-mcp@1.0.0: staged at trust, starts offline (lock sha256:") {
		t.Errorf("status does not say the server runs staged:\n%s", out)
	}
	run("verify")
	// A changed file of the staged tree.
	trees, _ := filepath.Glob(filepath.Join(home, "store", "sha256", "*", "node_modules", "dep", "index.js"))
	if len(trees) != 1 {
		t.Fatalf("staged trees: %v", trees)
	}
	os.Chmod(filepath.Dir(trees[0]), 0o755)
	os.Chmod(trees[0], 0o644)
	if err := os.WriteFile(trees[0], []byte(`module.exports = "evil";`), 0o644); err != nil {
		t.Fatal(err)
	}
	vcmd := berthCmd(home, env, "verify")
	vout, err := vcmd.CombinedOutput()
	if err == nil || vcmd.ProcessState.ExitCode() != ExitDrift || !strings.Contains(string(vout), "node_modules/dep/index.js") {
		t.Errorf("verify of a changed tree: %v\n%s", err, vout)
	}
}

// A package with an install script is refused at trust, naming it and
// the setting that allows it.
func TestFetchedInstallScriptRefused(t *testing.T) {
	bin := testkit.PeersBin(t)
	reg := testkit.NewNPMRegistry(t,
		testkit.NPMPackage{Name: "scripted", Version: "1.0.0", Bin: "s.js", Scripts: map[string]string{"postinstall": "node -e 0"},
			Files: map[string]string{"s.js": testkit.MCPServerJS("")}},
	)
	home := t.TempDir()
	t.Cleanup(func() { makeWritable(home) })
	os.MkdirAll(filepath.Join(home, "fetchers"), 0o700)
	os.WriteFile(filepath.Join(home, "fetchers", "npmrc"), []byte("registry="+reg.URL()+"\n"), 0o600)
	env := []string{"PATH=" + bin + ":/usr/bin:/bin"}
	dir := filepath.Join(t.TempDir(), "scripted")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "berth.json"), []byte(`{"manifestVersion": 1, "name": "scripted", "version": "1.0.0", "description": "x",
  "mcpServers": {"main": {"stdio": {"command": "npx", "args": ["-y", "scripted@1.0.0"]}}}}`), 0o644)
	d, err := berthCmd(home, env, "digest", dir).Output()
	if err != nil {
		t.Fatal(err)
	}
	out, err := berthCmd(home, env, "trust", "--yes", "--allow-unsigned", "--digest", strings.TrimSpace(string(d)), dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "server main") || !strings.Contains(string(out), "scripted@1.0.0 has an install script") || !strings.Contains(string(out), "berth config set fetch-allow-scripts") {
		t.Fatalf("trust of a package with an install script: %v\n%s", err, out)
	}
	if out, err := berthCmd(home, env, "config", "set", "fetch-allow-scripts", "scripted").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if out, _ := berthCmd(home, env, "config", "get", "fetch-allow-scripts").CombinedOutput(); strings.TrimSpace(string(out)) != "scripted" {
		t.Errorf("config get: %s", out)
	}
}

// berth upgrade lists the packages of the fetched tree that the new
// version adds, removes or changes.
func TestFetchedUpgradeListsPackages(t *testing.T) {
	bin := testkit.PeersBin(t)
	reg := testkit.NewNPMRegistry(t,
		testkit.NPMPackage{Name: "dep", Version: "1.0.0", Files: map[string]string{"index.js": `module.exports = "v1";`}},
		testkit.NPMPackage{Name: "dep", Version: "1.1.0", Files: map[string]string{"index.js": `module.exports = "v2";`}},
		testkit.NPMPackage{Name: "old-extra", Version: "1.0.0", Files: map[string]string{"index.js": ``}},
		testkit.NPMPackage{Name: "new-extra", Version: "2.0.0", Files: map[string]string{"index.js": ``}},
		testkit.NPMPackage{Name: "hello-mcp", Version: "1.0.0", Dependencies: map[string]string{"dep": "1.0.0", "old-extra": "1.0.0"},
			Bin: "bin/server.js", Files: map[string]string{"bin/server.js": testkit.MCPServerJS("dep")}},
		testkit.NPMPackage{Name: "hello-mcp", Version: "1.1.0", Dependencies: map[string]string{"dep": "1.1.0", "new-extra": "2.0.0"},
			Bin: "bin/server.js", Files: map[string]string{"bin/server.js": testkit.MCPServerJS("dep")}},
	)
	dir := t.TempDir()
	curator, home := filepath.Join(dir, "curator"), filepath.Join(dir, "home")
	repo, keys := filepath.Join(dir, "repo"), filepath.Join(dir, "keys")
	env := []string{"PATH=" + bin + ":/usr/bin:/bin"}
	run := func(home string, args ...string) string {
		t.Helper()
		out, err := berthCmd(home, env, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("berth %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	version := func(v string) string {
		d := filepath.Join(dir, "hello-"+v)
		os.MkdirAll(d, 0o755)
		m := `{"manifestVersion": 1, "name": "hello", "version": "` + v + `", "description": "a fetched server",
  "publisher": {"name": "Acme"},
  "mcpServers": {"main": {"stdio": {"command": "npx", "args": ["-y", "hello-mcp@` + v + `"]}}}}`
		if err := os.WriteFile(filepath.Join(d, "berth.json"), []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
		run(curator, "sign", d, "--key", filepath.Join(dir, "k.key"))
		run(curator, "catalog", "add", repo, d, "--keys", keys)
		return d
	}
	run(curator, "catalog", "init", repo, "--keys", keys, "--name", "acme")
	run(curator, "keygen", "--out", filepath.Join(dir, "k"))
	run(curator, "signers", "add-key", "k", filepath.Join(dir, "k.pub"))
	version("1.0.0")
	run(home, "marketplace", "add", "acme", repo, "--root", filepath.Join(repo, "1.root.json"))
	t.Cleanup(func() { makeWritable(home) })
	os.MkdirAll(filepath.Join(home, "fetchers"), 0o700)
	os.WriteFile(filepath.Join(home, "fetchers", "npmrc"), []byte("registry="+reg.URL()+"\n"), 0o600)
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	run(home, "install", "hello", "--enable", "--workspace", ws, "--yes")
	version("1.1.0")
	run(home, "marketplace", "update")
	out := run(home, "upgrade", "--workspace", ws, "--yes")
	for _, w := range []string{"fetched main: ~ dep 1.0.0 -> 1.1.0", "fetched main: ~ hello-mcp 1.0.0 -> 1.1.0", "fetched main: + new-extra 2.0.0 (added)", "fetched main: - old-extra 1.0.0 (removed)"} {
		if !strings.Contains(out, w) {
			t.Errorf("upgrade does not say %q:\n%s", w, out)
		}
	}
}
