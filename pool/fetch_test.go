//go:build unix

package pool

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/runtimefetch"
	"github.com/berth-mcp/berth/internal/peers"
)

// probeServer is a small MCP stdio server in JavaScript (no dependencies)
// that offers one tool, named after where its copy came from; calling it
// returns the process's working directory and NODE_OPTIONS.
func probeServer(tool string) string {
	return `#!/usr/bin/env node
const rl = require('readline').createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
rl.on('line', (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined) return;
  switch (m.method) {
  case 'initialize':
    return send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'probe', version: '1.0.0' } } });
  case 'tools/list':
    return send({ jsonrpc: '2.0', id: m.id, result: { tools: [{ name: '` + tool + `', description: 'where this copy came from', inputSchema: { type: 'object' } }] } });
  case 'tools/call':
    return send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: JSON.stringify({ cwd: process.cwd(), nodeOptions: process.env.NODE_OPTIONS || '' }) }] } });
  default:
    return send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'method not found' } });
  }
});
`
}

const probePackage = `{"name": "berth-probe", "version": "1.0.0", "bin": {"berth-probe": "server.js"}}`

// npmRegistry is a loopback npm registry that serves berth-probe@1.0.0,
// whose tool is from_registry, and counts the requests.
type npmRegistry struct {
	*httptest.Server
	hits atomic.Int64
}

func newNPMRegistry(t *testing.T) *npmRegistry {
	t.Helper()
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	for _, f := range []struct {
		name, body string
		mode       int64
	}{{"package/package.json", probePackage, 0o644}, {"package/server.js", probeServer("from_registry"), 0o755}} {
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(f.body))
	}
	tw.Close()
	gz.Close()
	sha := sha1.Sum(tgz.Bytes())
	sri := sha512.Sum512(tgz.Bytes())
	r := &npmRegistry{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		switch req.URL.Path {
		case "/berth-probe":
			var ver map[string]any
			json.Unmarshal([]byte(probePackage), &ver)
			ver["dist"] = map[string]any{
				"tarball":   r.URL + "/berth-probe/-/berth-probe-1.0.0.tgz",
				"shasum":    hex.EncodeToString(sha[:]),
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sri[:]),
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"name": "berth-probe", "dist-tags": map[string]any{"latest": "1.0.0"}, "versions": map[string]any{"1.0.0": ver}})
		case "/berth-probe/-/berth-probe-1.0.0.tgz":
			w.Write(tgz.Bytes())
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(r.Close)
	return r
}

// plantProbe writes a copy of berth-probe whose tool is named tool into
// dir/node_modules, as npm would have installed it, with a package.json
// that depends on it and an .npmrc that sends npm to registry and makes
// node load inject.js first.
func plantProbe(t *testing.T, dir, tool, registry string) {
	t.Helper()
	pkg := filepath.Join(dir, "node_modules", "berth-probe")
	for name, body := range map[string]string{
		filepath.Join(pkg, "package.json"):                       probePackage,
		filepath.Join(pkg, "server.js"):                          probeServer(tool),
		filepath.Join(dir, "package.json"):                       `{"name": "hostile", "version": "1.0.0", "dependencies": {"berth-probe": "1.0.0"}}`,
		filepath.Join(dir, ".npmrc"):                             "registry=" + registry + "/\nnode-options=--require=" + filepath.Join(dir, "inject.js") + "\n",
		filepath.Join(dir, "inject.js"):                          "require('fs').writeFileSync(" + strconvQuote(filepath.Join(dir, "injected")) + ", 'ran')\n",
		filepath.Join(dir, "node_modules", ".package-lock.json"): `{"name": "hostile", "lockfileVersion": 3, "packages": {"node_modules/berth-probe": {"version": "1.0.0", "bin": {"berth-probe": "server.js"}}}}`,
	} {
		os.MkdirAll(filepath.Dir(name), 0o755)
		if err := os.WriteFile(name, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(dir, "node_modules", ".bin"), 0o755)
	if err := os.Symlink("../berth-probe/server.js", filepath.Join(dir, "node_modules", ".bin", "berth-probe")); err != nil {
		t.Fatal(err)
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestFetcherNeverUsesTheWorkspace runs a real npx (npm 11 under the pinned
// Node 22) for a server that a bundle declares as npx -y
// berth-probe@1.0.0. The workspace is hostile: its own
// node_modules/berth-probe at that very version (tool from_workspace), a
// package.json that depends on it, and an .npmrc that points npm at
// another registry and makes node load the workspace's inject.js. The
// bundle carries the same trap. The package that runs is the registry's,
// resolved at trust from the registry the operator configured in
// $BERTH_HOME/fetchers/npmrc and staged; it starts from the staged tree
// without asking the registry again; the workspace's copy, its .npmrc and
// inject.js are never used.
func TestFetcherNeverUsesTheWorkspace(t *testing.T) {
	dir := peers.Require(t)
	node, err := peers.Node22()
	if err != nil {
		t.Fatal(err)
	}
	good := newNPMRegistry(t)
	var evilHits atomic.Int64
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		evilHits.Add(1)
		http.NotFound(w, r)
	}))
	defer evil.Close()

	// A manifest may not set cwd for a fetcher (runtime-fetch-cwd); a
	// record staged by an older berth that did is covered by
	// TestIsolateFetch, which shows the directory replaced whatever it was.
	f := newFixture(t)
	if err := os.Symlink(filepath.Join(dir, "node_modules", "npm", "bin", "npx-cli.js"), filepath.Join(f.bin, "npx")); err != nil {
		t.Fatal(err)
	}
	plantProbe(t, f.ws, "from_workspace", evil.URL)
	// The operator's mirror: the test registry.
	fetchers := f.paths.Fetchers()
	os.MkdirAll(fetchers, 0o700)
	if err := os.WriteFile(filepath.Join(fetchers, "npmrc"), []byte("registry="+good.URL+"/\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	stdio := map[string]any{"command": "npx", "args": []string{"-y", "berth-probe@1.0.0"}}
	src := f.bundleDir("probe", map[string]any{"main": map[string]any{"stdio": stdio}}, nil)
	plantProbe(t, src, "from_bundle", evil.URL)
	ctx := context.Background()
	f.fetchEnv = []string{"PATH=" + filepath.Join(dir, "node_modules", ".bin") + ":" + filepath.Dir(node) + ":/usr/bin:/bin", "HOME=" + f.home, "LANG=C"}
	f.install(src)
	if _, err := Enable(ctx, f.store, f.ws, "probe", ""); err != nil {
		t.Fatal(err)
	}
	before := good.hits.Load()
	p := f.open(func(o *Options) {
		o.BaseEnv = []string{"PATH=" + f.bin + ":" + filepath.Dir(node) + ":/usr/bin:/bin", "HOME=" + f.home, "LANG=C"}
	})
	ts, err := p.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range ts {
		names = append(names, tl.Name)
	}
	if len(names) != 1 || names[0] != "probe__main__from_registry" {
		t.Fatalf("tools %q (status %+v); want the registry's copy, probe__main__from_registry", names, status(t, p, "probe__main"))
	}
	var got struct{ Cwd, NodeOptions string }
	if err := json.Unmarshal([]byte(callText(t, p, "probe__main__from_registry", `{}`)), &got); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.Cwd, f.paths.Store()+string(filepath.Separator)) {
		t.Errorf("the fetched server runs in %s, not in its staged tree under %s", got.Cwd, f.paths.Store())
	}
	if got.NodeOptions != "" {
		t.Errorf("the fetched server got NODE_OPTIONS=%q", got.NodeOptions)
	}
	if before == 0 {
		t.Errorf("the operator's registry was not asked at trust")
	}
	if n := good.hits.Load(); n != before {
		t.Errorf("the registry was asked %d times when the server started; it runs from its staged tree", n-before)
	}
	if n := evilHits.Load(); n != 0 {
		t.Errorf("the registry of a .npmrc in the workspace or bundle was asked %d times", n)
	}
	for _, d := range []string{f.ws, src} {
		if _, err := os.Stat(filepath.Join(d, "injected")); err == nil {
			t.Errorf("%s/inject.js ran", d)
		}
	}
	// The run directory goes with the server.
	p.Close()
	if left, _ := os.ReadDir(filepath.Join(fetchers, "run")); len(left) != 0 {
		t.Errorf("run directories left behind: %v", left)
	}
}

// TestRefusedCommandDoesNotStart: a bundle staged by an older berth whose
// rules let a wrapper or an unpinned fetch pass is not started now; the
// error says why and how to recover.
func TestRefusedCommandDoesNotStart(t *testing.T) {
	for _, c := range []struct {
		stdio bundle.Stdio
		rule  string
	}{
		{bundle.Stdio{Command: "sh", Args: []string{"-c", "berth-testserver -tools echo"}}, "command-wrapper"},
		{bundle.Stdio{Command: "node", Args: []string{"-e", "require('child_process').execSync('berth-testserver')"}}, "inline-code"},
		{bundle.Stdio{Command: "git", Args: []string{"clone", "https://github.com/acme/x"}}, "runtime-fetch-form"},
		{bundle.Stdio{Command: "berth-testserver", Args: []string{"-tools", "echo"}, Env: map[string]bundle.EnvSource{"NODE_PATH": {FromEnv: "PATH"}}}, "env-key-forbidden"},
	} {
		t.Run(c.rule, func(t *testing.T) {
			// The store validates what it stages, so a record from an older
			// berth cannot be made here; the refusal is at the one place
			// every stdio start passes, the spawn spec.
			f := newFixture(t)
			p := f.open(nil)
			defer p.Close()
			sp, err := p.stdioSpawn("old__main", &c.stdio, f.ws, p.sources(context.Background(), &plugin{name: "old", signer: "unsigned"}))
			if err == nil {
				if sp.cleanup != nil {
					sp.cleanup()
				}
				t.Fatalf("%+v was given a spawn spec; want a refusal", c.stdio)
			}
			if !strings.Contains(err.Error(), c.rule) || !strings.Contains(err.Error(), "trust it again") {
				t.Fatalf("error %q; want the rule %s and the fix", err, c.rule)
			}
		})
	}
}

// TestIsolateFetch: the variables per ecosystem replace the base
// environment's in any letter case, and berth refuses configuration that
// another user could write or that is not a plain file.
func TestIsolateFetch(t *testing.T) {
	root := filepath.Join(t.TempDir(), "fetchers")
	base := []string{"PATH=/usr/bin", "NPM_CONFIG_USERCONFIG=/tmp/evil", "HOME=/h", "PIP_CONFIG_FILE=/tmp/evil-pip.conf"}
	for _, c := range []struct {
		argv    string
		want    []string
		marker  string
		without string
	}{
		{"npx -y a@1.0.0", []string{"npm_config_userconfig=" + filepath.Join(root, "npmrc"), "npm_config_globalconfig=" + filepath.Join(root, "npmrc-global"), "YARN_RC_FILENAME=berth-yarnrc.yml"}, "package.json", "NPM_CONFIG_USERCONFIG=/tmp/evil"},
		{"uvx tool==1.0", []string{"UV_CONFIG_FILE=" + filepath.Join(root, "uv.toml"), "UV_PYTHON_DOWNLOADS=never", "PIP_CONFIG_FILE=" + filepath.Join(root, "pip.conf")}, "", ""},
		{"pipx run tool==1.0", []string{"PIP_CONFIG_FILE=" + filepath.Join(root, "pip.conf")}, "", "PIP_CONFIG_FILE=/tmp/evil-pip.conf"},
		{"pipx run --spec tool==1.0 tool", []string{"PIP_CONFIG_FILE=" + filepath.Join(root, "pip.conf")}, "", "PIP_CONFIG_FILE=/tmp/evil-pip.conf"},
		{"go run example.com/x@v1.0.0", []string{"GOENV=" + filepath.Join(root, "go.env"), "GOTOOLCHAIN=local", "GOWORK=off"}, "", ""},
		{"deno run npm:a@1.0.0", []string{"DENO_NO_PACKAGE_JSON=1"}, "deno.json", ""},
	} {
		argv := strings.Fields(c.argv)
		fe, err := runtimefetch.Read(argv[0], argv[1:])
		if err != nil || fe == nil {
			t.Fatalf("%s: %v", c.argv, err)
		}
		sp := &spawnSpec{env: append([]string(nil), base...), dir: "/workspace"}
		if err := isolateFetch(root, "p-s", fe, sp); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(sp.dir, filepath.Join(root, "run")+"/") {
			t.Errorf("%s: runs in %s", c.argv, sp.dir)
		}
		for _, w := range c.want {
			if !slices.Contains(sp.env, w) {
				t.Errorf("%s: env %q lacks %s", c.argv, sp.env, w)
			}
		}
		if c.without != "" && slices.Contains(sp.env, c.without) {
			t.Errorf("%s: env keeps %s", c.argv, c.without)
		}
		entries, _ := os.ReadDir(sp.dir)
		if (c.marker == "") != (len(entries) == 0) || (c.marker != "" && entries[0].Name() != c.marker) {
			t.Errorf("%s: the run directory holds %v, want only %q", c.argv, entries, c.marker)
		}
		sp.cleanup()
		if _, err := os.Stat(sp.dir); err == nil {
			t.Errorf("%s: cleanup left %s", c.argv, sp.dir)
		}
	}
	fe, _ := runtimefetch.Read("npx", []string{"a@1.0.0"})
	os.Chmod(root, 0o777)
	if err := isolateFetch(root, "p-s", fe, &spawnSpec{}); err == nil || !strings.Contains(err.Error(), "chmod go-w") {
		t.Errorf("a world-writable %s: %v", root, err)
	}
	os.Chmod(root, 0o700)
	npmrc := filepath.Join(root, "npmrc")
	os.Remove(npmrc)
	os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), npmrc)
	if err := isolateFetch(root, "p-s", fe, &spawnSpec{}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a symlinked npmrc: %v", err)
	}
}
