//go:build unix

package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/fetched"
	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/trust"
)

// fetchedBundle writes a bundle whose one server runs spec with npx.
func fetchedBundle(t *testing.T, version, spec string) string {
	t.Helper()
	dir := t.TempDir()
	m := `{"manifestVersion": 1, "name": "hello", "version": "` + version + `", "description": "a fetched server",
  "publisher": {"name": "Acme"},
  "mcpServers": {"hello": {"stdio": {"command": "npx", "args": ["-y", "` + spec + `"]}}}}`
	if err := os.WriteFile(filepath.Join(dir, "berth.json"), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func fetchStore(t *testing.T) (*Store, *testkit.NPMRegistry, *fetched.Options) {
	t.Helper()
	bin := testkit.PeersBin(t)
	reg := testkit.NewNPMRegistry(t,
		testkit.NPMPackage{Name: "dep", Version: "1.0.0", Files: map[string]string{"index.js": `module.exports = "dep";`}},
		testkit.NPMPackage{Name: "hello-mcp", Version: "1.0.0", Dependencies: map[string]string{"dep": "1.0.0"},
			Bin: "bin/server.js", Files: map[string]string{"bin/server.js": testkit.MCPServerJS("dep")}},
	)
	s := newStore(t)
	t.Cleanup(func() { makeTreeWritable(s.paths.Root) })
	if err := os.MkdirAll(s.paths.Fetchers(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.paths.Fetchers(), fetched.NPMUserConfig), []byte("registry="+reg.URL()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + t.TempDir(), "LANG=C"}
	return s, reg, &fetched.Options{Env: env}
}

func makeTreeWritable(root string) {
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
}

func trustFetched(t *testing.T, s *Store, src string, o *fetched.Options) (*TrustResult, error) {
	t.Helper()
	b := openBundle(t, src)
	var saw []*fetched.Lock
	res, err := s.Trust(context.Background(), src, &TrustOptions{UnsignedUnsafe: true, Digest: mustDigest(b.Digest), Fetch: o,
		Confirm: func(c *Candidate) error { saw = c.Fetched; return nil }})
	if err == nil && len(saw) != len(res.Record.Fetched) {
		t.Errorf("Confirm saw %d locks, the record has %d", len(saw), len(res.Record.Fetched))
	}
	return res, err
}

// Trust resolves a fetched server before Confirm, stages its tree
// read-only and content-addressed, and records the lock; GC keeps the
// tree; Verify catches a changed file of it, offline.
func TestTrustStagesFetchedTree(t *testing.T) {
	s, reg, o := fetchStore(t)
	res, err := trustFetched(t, s, fetchedBundle(t, "1.0.0", "hello-mcp@1.0.0"), o)
	if err != nil {
		t.Fatal(err)
	}
	reg.Close()
	l := res.Record.LockOf("hello")
	if l == nil || len(l.Packages) != 2 || l.Program != "node_modules/.bin/hello-mcp" {
		t.Fatalf("lock %+v", l)
	}
	tree, err := s.FetchedTree(l)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(tree, "node_modules", "dep", "index.js"))
	if err != nil || fi.Mode().Perm()&0o222 != 0 {
		t.Fatalf("staged file: %v %v", fi, err)
	}
	if _, err := s.GC(context.Background()); err != nil {
		t.Fatal(err)
	}
	v, err := trust.NewVerifier(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep := s.Verify(context.Background(), res.Record, v); rep.Err != nil {
		t.Fatalf("verify after gc: %v", rep.Err)
	}
	// A file of the tree changed.
	os.Chmod(filepath.Join(tree, "node_modules", "dep"), 0o755)
	os.Chmod(filepath.Join(tree, "node_modules", "dep", "index.js"), 0o644)
	if err := os.WriteFile(filepath.Join(tree, "node_modules", "dep", "index.js"), []byte(`module.exports = "evil";`), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := s.Verify(context.Background(), res.Record, v)
	if !errors.Is(rep.Err, ErrDrift) || !strings.Contains(rep.Err.Error(), "node_modules/dep/index.js") || !strings.Contains(rep.Err.Error(), "server hello") {
		t.Fatalf("verify of a changed tree: %v", rep.Err)
	}
}

// A record whose lock was edited is caught by Verify against the tree's
// own lock file.
func TestVerifyFetchedLock(t *testing.T) {
	s, _, o := fetchStore(t)
	res, err := trustFetched(t, s, fetchedBundle(t, "1.0.0", "hello-mcp@1.0.0"), o)
	if err != nil {
		t.Fatal(err)
	}
	rec := *res.Record
	l := *rec.Fetched[0]
	l.Packages = append([]fetched.Package(nil), l.Packages...)
	l.Packages[0].Version = "1.0.1"
	rec.Fetched = []*fetched.Lock{&l}
	v, _ := trust.NewVerifier(nil, nil)
	if rep := s.Verify(context.Background(), &rec, v); rep.Err == nil || !strings.Contains(rep.Err.Error(), "not the recorded lock") {
		t.Fatalf("verify of an edited lock: %v", rep.Err)
	}
}

// A failed resolution fails the trust, naming the server and the package,
// and records nothing.
func TestTrustFetchFailureNamesServer(t *testing.T) {
	s, _, o := fetchStore(t)
	_, err := trustFetched(t, s, fetchedBundle(t, "1.0.0", "missing-pkg@1.0.0"), o)
	var fe *FetchError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "server hello") || !strings.Contains(err.Error(), "missing-pkg@1.0.0") {
		t.Fatalf("err %v", err)
	}
	if recs, _ := s.Records(); len(recs) != 0 {
		t.Errorf("records %v", recs)
	}
	if m, _ := filepath.Glob(filepath.Join(s.paths.Fetchers(), "stage", "*")); len(m) != 0 {
		t.Errorf("leftovers %v", m)
	}
}

// GC removes a resolution a crash left in fetchers/stage once it is a day
// old, never one that may still be resolving.
func TestGCRemovesStaleStageDirs(t *testing.T) {
	s := newStore(t)
	stage := filepath.Join(s.paths.Fetchers(), "stage")
	old, fresh := filepath.Join(stage, "main-1"), filepath.Join(stage, "main-2")
	for _, d := range []string{old, fresh} {
		if err := os.MkdirAll(filepath.Join(d, "node_modules"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	day := s.now().Add(-25 * time.Hour)
	os.Chtimes(old, day, day)
	if _, err := s.GC(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); err == nil {
		t.Error("a day-old stage directory was kept")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("a fresh stage directory was removed")
	}
}
