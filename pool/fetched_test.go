//go:build unix

package pool

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/store"
)

// A server fetched with npx runs from the tree staged at trust, with the
// registry stopped: no npm, no registry. A changed file of the tree is
// drift at the next boundary, and the server is stopped.
func TestStagedFetchedServer(t *testing.T) {
	bin := testkit.PeersBin(t)
	reg := testkit.NewNPMRegistry(t,
		testkit.NPMPackage{Name: "dep", Version: "1.0.0", Files: map[string]string{"index.js": `module.exports = "hello from dep";`}},
		testkit.NPMPackage{Name: "hello-mcp", Version: "1.0.0", Dependencies: map[string]string{"dep": "1.0.0"},
			Bin: map[string]string{"hello-mcp": "bin/server.js"}, Files: map[string]string{"bin/server.js": testkit.MCPServerJS("dep")}},
	)
	f := newFixture(t)
	os.MkdirAll(f.paths.Fetchers(), 0o700)
	if err := os.WriteFile(filepath.Join(f.paths.Fetchers(), "npmrc"), []byte("registry="+reg.URL()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.fetchEnv = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + f.home, "LANG=C"}
	stdio := map[string]any{"command": "npx", "args": []string{"-y", "hello-mcp@1.0.0", "--root", "${workspace}"}}
	rec := f.plugin("hello", map[string]any{"main": map[string]any{"stdio": stdio}})
	l := rec.LockOf("main")
	if l == nil {
		t.Fatal("no lock recorded")
	}
	reg.Close()
	hits := reg.Requests
	// npm and npx are not even on the server's PATH: only node is.
	nodeOnly := t.TempDir()
	if err := os.Symlink(filepath.Join(bin, "node"), filepath.Join(nodeOnly, "node")); err != nil {
		t.Fatal(err)
	}
	p := f.open(func(o *Options) {
		o.BaseEnv = []string{"PATH=" + nodeOnly + ":/usr/bin:/bin", "HOME=" + f.home, "LANG=C"}
	})
	if got := callText(t, p, "hello__main__hello", `{}`); got != "hello from dep" {
		t.Fatalf("call: %q (status %+v)", got, status(t, p, "hello__main"))
	}
	st := status(t, p, "hello__main")
	if st.Fetched == nil || !st.Fetched.Staged || st.Fetched.Lock != l.Digest() || st.Fetched.Tree != l.Tree {
		t.Errorf("status fetched %+v", st.Fetched)
	}
	if reg.Requests != hits {
		t.Errorf("the registry was asked at start")
	}
	sp, err := p.stagedSpawn("hello__main", &bundle.Stdio{Command: "npx", Args: []string{"-y", "hello-mcp@1.0.0", "--root", "${workspace}"}}, f.ws, l, p.sources(context.Background(), &plugin{name: "hello", signer: "unsigned"}))
	if err != nil {
		t.Fatal(err)
	}
	tree := f.paths.Snapshot(treeDigest(l.Tree))
	if len(sp.fetchedTrees) != 1 || sp.fetchedTrees[0] != tree || sp.dir != tree || strings.Join(sp.argv[1:], " ") != "--root "+f.ws {
		t.Errorf("spawn spec %+v", sp)
	}
	// Drift in the tree.
	file := filepath.Join(tree, "node_modules", "dep", "index.js")
	os.Chmod(filepath.Dir(file), 0o755)
	os.Chmod(file, 0o644)
	if err := os.WriteFile(file, []byte(`module.exports = "changed";`), 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the change of the tree to be drift", func() bool {
		p.Tools(context.Background())
		return status(t, p, "hello__main").State == StateDrifted
	})
	st = status(t, p, "hello__main")
	if !errors.Is(st.Err, store.ErrDrift) || !strings.Contains(st.LastError, "node_modules/dep/index.js") || !strings.Contains(st.LastError, "server main") {
		t.Fatalf("status after a change of the tree: %v", st.LastError)
	}
	if ts, _ := p.Tools(context.Background()); len(ts) != 0 {
		t.Errorf("a drifted plugin's tools are offered: %v", ts)
	}
}

// A record of an older berth has no lock, and deno is not staged: such a
// server fetches at start, and status says so and, for npm, how to stage
// it.
func TestUnstagedFetchStatus(t *testing.T) {
	bin := testkit.PeersBin(t)
	reg := testkit.NewNPMRegistry(t, testkit.NPMPackage{Name: "hello-mcp", Version: "1.0.0", Bin: "s.js", Files: map[string]string{"s.js": testkit.MCPServerJS("")}})
	f := newFixture(t)
	os.MkdirAll(f.paths.Fetchers(), 0o700)
	os.WriteFile(filepath.Join(f.paths.Fetchers(), "npmrc"), []byte("registry="+reg.URL()+"\n"), 0o600)
	f.fetchEnv = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + f.home, "LANG=C"}
	rec := f.plugin("old", map[string]any{"main": map[string]any{"stdio": map[string]any{"command": "npx", "args": []string{"-y", "hello-mcp@1.0.0"}}}})
	if rec.LockOf("main") == nil {
		t.Fatal("no lock")
	}
	// As an older berth wrote it: no lock.
	rec.Fetched = nil
	data, _ := json.Marshal(rec)
	if err := os.WriteFile(f.paths.Record("old", "1.0.0"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	f.plugin("denoed", map[string]any{"main": map[string]any{"stdio": map[string]any{"command": "deno", "args": []string{"run", "npm:hello-mcp@1.0.0"}}}})
	p, err := Open(context.Background(), f.store, f.ws, f.options())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	for id, want := range map[string]string{"old__main": "re-trust it", "denoed__main": "not deno run"} {
		st := status(t, p, id)
		if st.Fetched == nil || st.Fetched.Staged || !strings.Contains(st.Fetched.Note, "fetched from the registry at every start") || !strings.Contains(st.Fetched.Note, want) {
			t.Errorf("%s: status fetched %+v", id, st.Fetched)
		}
	}
}
