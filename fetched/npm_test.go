//go:build unix

package fetched

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/bundle/runtimefetch"
	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}

// testPackages are the loopback registry's packages: an MCP server over
// stdio with one dependency, and a package with an install script.
func testPackages() []testkit.NPMPackage {
	return []testkit.NPMPackage{
		{Name: "berth-dep", Version: "1.0.0", Files: map[string]string{"index.js": `module.exports = "hello from dep";` + "\n"}},
		{Name: "berth-dep", Version: "1.1.0", Files: map[string]string{"index.js": `module.exports = "hello from dep 1.1";` + "\n"}},
		{Name: "@acme/hello-mcp", Version: "1.0.0", Dependencies: map[string]string{"berth-dep": "1.0.0"},
			Bin: map[string]string{"hello-mcp": "bin/server.js"}, Files: map[string]string{"bin/server.js": testkit.MCPServerJS("berth-dep")}},
		{Name: "@acme/hello-mcp", Version: "1.1.0", Dependencies: map[string]string{"berth-dep": "1.1.0"},
			Bin: map[string]string{"hello-mcp": "bin/server.js"}, Files: map[string]string{"bin/server.js": testkit.MCPServerJS("berth-dep")}},
		{Name: "scripted", Version: "1.0.0", Bin: "bin/s.js",
			Scripts: map[string]string{"postinstall": "node postinstall.js"},
			Files: map[string]string{
				"bin/s.js": testkit.MCPServerJS(""),
				// It builds a file in its own directory, then tries to
				// write beside the tree.
				"postinstall.js": `const fs = require("fs");
fs.writeFileSync("built.txt", "built\n");
try { fs.writeFileSync(process.env.ESCAPE, "escaped\n"); } catch (e) { fs.writeFileSync("escape-refused.txt", String(e.code) + "\n"); }
`}},
		{Name: "no-sri", Version: "1.0.0", Bin: "bin/x.js", NoIntegrity: true, Files: map[string]string{"bin/x.js": "#!/usr/bin/env node\n"}},
		{Name: "two-bins", Version: "1.0.0", Bin: map[string]string{"a": "a.js", "b": "b.js"}, Files: map[string]string{"a.js": "", "b.js": ""}},
	}
}

type npmEnv struct {
	reg      *testkit.NPMRegistry
	opts     *Options
	home     string
	bin      string
	fetchers string
}

func newNPMEnv(t *testing.T) *npmEnv { return newNPMEnvB(t) }

func newNPMEnvB(t testing.TB) *npmEnv {
	t.Helper()
	bin := testkit.PeersBin(t)
	reg := testkit.NewNPMRegistry(t, testPackages()...)
	home := t.TempDir()
	fetchers := filepath.Join(home, "berth", "fetchers")
	if err := os.MkdirAll(fetchers, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fetchers, NPMUserConfig), []byte("registry="+reg.URL()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The operator's own ~/.npmrc is not berth's configuration.
	if err := os.WriteFile(filepath.Join(home, ".npmrc"), []byte("registry=http://127.0.0.1:9/\nignore-scripts=false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + home, "LANG=C", "TMPDIR=" + os.TempDir()}
	return &npmEnv{reg: reg, home: home, bin: bin, fetchers: fetchers, opts: &Options{Fetchers: fetchers, Env: env}}
}

func resolveForBench(b *testing.B, e *npmEnv, dir string) (*Lock, error) {
	f, err := runtimefetch.Read("npx", []string{"-y", "@acme/hello-mcp@1.0.0"})
	if err != nil {
		b.Fatal(err)
	}
	return Resolve(context.Background(), "hello", f, dir, e.opts)
}

func (e *npmEnv) resolve(t *testing.T, args ...string) (*Lock, string, error) {
	t.Helper()
	f, err := runtimefetch.Read("npx", args)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	l, err := Resolve(ctx, "hello", f, dir, e.opts)
	return l, dir, err
}

// A package and its dependency resolve from the registry the operator's
// npm configuration for berth names (never ~/.npmrc), each with its
// registry integrity; the tree's digest is reproducible; the program runs
// from the tree with the registry gone.
func TestResolveNPM(t *testing.T) {
	e := newNPMEnv(t)
	l, dir, err := e.resolve(t, "-y", "@acme/hello-mcp@1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if l.Program != "node_modules/.bin/hello-mcp" || l.Ecosystem != "npm" || l.Package != "@acme/hello-mcp@1.0.0" || l.Server != "hello" {
		t.Errorf("lock %+v", l)
	}
	if len(l.Packages) != 2 {
		t.Fatalf("packages %+v, want 2", l.Packages)
	}
	for _, p := range l.Packages {
		if p.Integrity != e.reg.Integrity(p.Name, p.Version) || !strings.HasPrefix(p.Resolved, e.reg.URL()) {
			t.Errorf("package %+v: integrity or resolved not the registry's (%s)", p, e.reg.Integrity(p.Name, p.Version))
		}
	}
	if l.Packages[0].Name != "@acme/hello-mcp" || l.Packages[1].Name != "berth-dep" || l.Packages[1].Version != "1.0.0" {
		t.Errorf("packages %+v", l.Packages)
	}
	if !strings.HasPrefix(l.Tree, "sha256:") || l.Files < 4 || l.Size <= 0 || !strings.HasPrefix(l.Digest(), "sha256:") {
		t.Errorf("tree %q files %d size %d digest %q", l.Tree, l.Files, l.Size, l.Digest())
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "berth-dep", "index.js")); err != nil {
		t.Error(err)
	}
	l2, _, err := e.resolve(t, "-y", "@acme/hello-mcp@1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if l2.Tree != l.Tree || l2.Digest() != l.Digest() {
		t.Errorf("two resolutions differ: tree %s and %s, lock %s and %s", l.Tree, l2.Tree, l.Digest(), l2.Digest())
	}
	e.reg.Close()
	cmd := exec.Command(filepath.Join(dir, filepath.FromSlash(l.Program)))
	cmd.Env = e.opts.Env
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hello"}}` + "\n")
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), "hello from dep") {
		t.Errorf("the staged program: %v: %s", err, out)
	}
}

// The lock is parsed back from the tree and gives the same packages.
func TestResolveNPMLockMatchesTree(t *testing.T) {
	e := newNPMEnv(t)
	l, dir, err := e.resolve(t, "-y", "--package=@acme/hello-mcp@1.1.0", "hello-mcp", "--flag")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := ParseNPMLock(data, e.reg.URL())
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 2 || pkgs[1].Version != "1.1.0" || pkgs[1].Integrity != l.Packages[1].Integrity {
		t.Errorf("packages %+v", pkgs)
	}
}

func TestResolveNPMRefuses(t *testing.T) {
	e := newNPMEnv(t)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"-y", "scripted@1.0.0"}, []string{"scripted@1.0.0 has an install script", "berth config set fetch-allow-scripts"}},
		{[]string{"-y", "no-sri@1.0.0"}, []string{"no-sri@1.0.0 has no sha512 integrity"}},
		{[]string{"-y", "two-bins@1.0.0"}, []string{"several programs (a, b)"}},
		{[]string{"-y", "--package=two-bins@1.0.0", "c"}, []string{`no program "c"`}},
		{[]string{"-y", "missing@1.0.0"}, []string{"server hello: resolving missing@1.0.0: npm install failed", "404"}},
	} {
		_, _, err := e.resolve(t, c.args...)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%q: %v, want %q", c.args, err, w)
			}
		}
	}
	f, _ := runtimefetch.Read("deno", []string{"run", "npm:a@1.0.0"})
	if _, err := Resolve(context.Background(), "x", f, t.TempDir(), e.opts); !errors.Is(err, ErrNotStaged) {
		t.Errorf("deno run: %v, want ErrNotStaged", err)
	}
}

// A package allowed by name runs its install script at trust, confined:
// it builds inside its tree and cannot write beside it.
func TestResolveNPMAllowedScriptConfined(t *testing.T) {
	if sup := sandbox.Probe(); sup.LandlockABI == 0 || !sup.UserNamespaces {
		t.Skipf("this host cannot confine install scripts: %v", sup.Notes)
	}
	e := newNPMEnv(t)
	e.opts.AllowScripts = []string{"scripted"}
	escape := filepath.Join(e.home, "escaped.txt")
	e.opts.Env = append(e.opts.Env, "ESCAPE="+escape)
	l, dir, err := e.resolve(t, "-y", "scripted@1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if !l.Packages[0].Scripts {
		t.Errorf("the lock does not say the script ran: %+v", l.Packages)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "scripted", "built.txt")); err != nil {
		t.Errorf("the script did not run: %v", err)
	}
	if _, err := os.Stat(escape); err == nil {
		t.Errorf("the install script wrote %s, outside its tree", escape)
	}
}

func FuzzParseNPMLock(f *testing.F) {
	f.Add([]byte(`{"lockfileVersion":3,"packages":{"":{"dependencies":{"a":"1.0.0"}},"node_modules/a":{"version":"1.0.0","resolved":"https://registry.npmjs.org/a/-/a-1.0.0.tgz","integrity":"sha512-`+strings.Repeat("A", 86)+`=="}}}`), "https://registry.npmjs.org/")
	f.Add([]byte(`{"lockfileVersion":2,"packages":{"node_modules/@s/b/node_modules/c":{"version":"2.0.0","resolved":"http://127.0.0.1:1/c/-/c-2.0.0.tgz","integrity":"sha512-x","hasInstallScript":true,"link":true}}}`), "http://127.0.0.1:1/")
	f.Fuzz(func(t *testing.T, data []byte, registry string) {
		pkgs, err := ParseNPMLock(data, registry)
		if err != nil {
			return
		}
		for _, p := range pkgs {
			if !strings.HasPrefix(p.Resolved, registry) || !strings.HasPrefix(p.Integrity, "sha512-") || p.Name == "" || p.Version == "" {
				t.Fatalf("accepted %+v from %q", p, registry)
			}
		}
	})
}
