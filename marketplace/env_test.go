package marketplace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/trust"
)

// clock is a settable clock for repositories and caches.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testEnv is a curator's repository, a publisher's key and an operator's
// cache, all real: real TUF metadata, real Ed25519 role keys, real
// Sigstore signatures.
type testEnv struct {
	t        testing.TB
	ctx      context.Context
	dir      string // the scratch root
	repoDir  string
	keyDir   string
	clk      *clock
	init     *repo.InitResult
	pubKey   []byte // publisher private key (PEM)
	pubPEM   []byte // and its public key
	verifier *trust.Verifier
	cache    *Cache
	requests []string
	mu       sync.Mutex
	// ociConfig is the Docker config directory of the test's registry.
	ociConfig string
}

func newEnv(t testing.TB, exp repo.Expiries) *testEnv {
	t.Helper()
	dir := t.TempDir()
	e := &testEnv{t: t, ctx: context.Background(), dir: dir, repoDir: filepath.Join(dir, "repo"), keyDir: filepath.Join(dir, "keys"),
		clk: &clock{t: time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)}}
	res, err := repo.Init(e.ctx, e.repoDir, e.keyDir, &repo.Options{Name: "acme", Expiries: exp, Now: e.clk.now})
	if err != nil {
		t.Fatal(err)
	}
	e.init = res
	priv, pub, err := trust.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	e.pubKey, e.pubPEM = priv, pub
	s, err := trust.NewKeySigner("acme", pub, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.verifier, err = trust.NewVerifier([]trust.Signer{s}, nil); err != nil {
		t.Fatal(err)
	}
	e.cache = OpenCache(filepath.Join(dir, "home", "catalogs"), &CacheOptions{Now: e.clk.now, Source: SourceOptions{Counter: e.count}})
	return e
}

func (e *testEnv) count(loc string) {
	e.mu.Lock()
	e.requests = append(e.requests, loc)
	e.mu.Unlock()
}

// takeRequests returns and clears the requests counted so far.
func (e *testEnv) takeRequests() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.requests
	e.requests = nil
	return r
}

func (e *testEnv) repo() *repo.Repository {
	e.t.Helper()
	r, err := repo.Open(e.repoDir, e.keyDir, &repo.Options{Now: e.clk.now})
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

const stdioManifest = `{
  "manifestVersion": 1,
  "name": %q,
  "version": %q,
  "description": "Notes search for your workspace",
  "publisher": {"name": "Acme", "url": "https://acme.example"},
  "license": "MIT",
  "requires": {"berth": ">=0.1.0"},
  "mcpServers": {
    "notes": {
      "stdio": {
        "command": "${bundle}/bin/notes-server",
        "args": ["--root", "${workspace}"],
        "env": {"NOTES_TOKEN": {"fromEnv": "ACME_NOTES_TOKEN"}}
      },
      "tools": {"allow": ["search_*"]}
    }%s
  }
}
`

// bundle writes a signed bundle directory; extra is appended to
// mcpServers (",\n\"x\": {...}").
func (e *testEnv) bundle(name, version, extra string) (string, []byte) {
	e.t.Helper()
	dir := filepath.Join(e.dir, "bundles", name+"-"+version+fmt.Sprint(len(extra)))
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		e.t.Fatal(err)
	}
	write := func(p, data string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(data), mode); err != nil {
			e.t.Fatal(err)
		}
	}
	write("berth.json", fmt.Sprintf(stdioManifest, name, version, extra), 0o644)
	write("bin/notes-server", "#!/bin/sh\necho notes\n", 0o755)
	write("README.md", "notes "+version+"\n", 0o644)
	return dir, e.sign(dir)
}

func (e *testEnv) sign(dir string) []byte {
	e.t.Helper()
	b := openBundle(e.t, dir)
	defer b.Close()
	sig, err := trust.Sign(e.ctx, b.Listing().Bytes(), e.pubKey)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(dir+".sigstore.json", sig, 0o644); err != nil {
		e.t.Fatal(err)
	}
	return sig
}

// publish adds name@version to the repository.
func (e *testEnv) publish(name, version string) *repo.AddResult {
	e.t.Helper()
	dir, sig := e.bundle(name, version, "")
	res, err := e.repo().Add(e.ctx, repo.AddRequest{Source: dir, Signature: sig, Verifier: e.verifier, Tags: []string{"notes"}})
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// addCatalog adds the repository to the cache as "acme", pinned by sha256.
func (e *testEnv) addCatalog() *CatalogInfo {
	e.t.Helper()
	src, err := ParseSource(e.repoDir)
	if err != nil {
		e.t.Fatal(err)
	}
	r, err := e.cache.Add(e.ctx, "acme", src, RootPin{SHA256: e.init.RootSHA256})
	if err != nil {
		e.t.Fatal(err)
	}
	return r.CatalogInfo
}

func (e *testEnv) refresh() (*RefreshResult, error) {
	return e.cache.Refresh(e.ctx, "acme")
}

func (e *testEnv) read(rel string) []byte {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join(e.repoDir, rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return data
}

func (e *testEnv) write(rel string, data []byte) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.repoDir, rel), data, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// wantKind checks that err is a VerifyError of kind, and untrusted.
func wantKind(t testing.TB, err error, kind VerifyKind) *VerifyError {
	t.Helper()
	var ve *VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v, want a %s refusal", err, kind)
	}
	if ve.Kind != kind {
		t.Fatalf("got a %s refusal, want %s:\n%v", ve.Kind, kind, err)
	}
	if !errors.Is(err, trust.ErrUntrusted) {
		t.Fatalf("a refusal must be untrusted (exit 4): %v", err)
	}
	return ve
}
