package marketplace

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/importer"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/foreign"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

const marketFixture = "../testdata/claude-marketplace"

// copyMarket copies the fixture marketplace into a temp directory (tests
// change it).
func copyMarket(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "market")
	if out, err := exec.Command("cp", "-a", marketFixture, dst).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return dst
}

func addMarket(t *testing.T, c *Cache, src string) (*RefreshResult, error) {
	t.Helper()
	s, err := ClaudeMarketplaceSource(src)
	if err != nil {
		t.Fatal(err)
	}
	return c.AddClaudeMarketplace(context.Background(), "team", s)
}

// Every entry berth cannot carry is named with its reason and skipped;
// the plugin inside the marketplace's directory lists, unsigned, and
// installs only by the digest show gives.
func TestClaudeMarketplace(t *testing.T) {
	dir := copyMarket(t)
	// A symlink that leads out of the marketplace.
	outside := t.TempDir()
	if out, err := exec.Command("cp", "-a", filepath.Join(dir, "plugins", "acme-db"), filepath.Join(outside, "linked")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := os.Symlink(filepath.Join(outside, "linked"), filepath.Join(dir, "plugins", "linked")); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	c := OpenCache(filepath.Join(home, "catalogs"), nil)
	r, err := addMarket(t, c, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		" marketplace-entry-syntax",
		"Acme DB marketplace-entry-name",
		"absolute marketplace-entry-source",
		"acme-db marketplace-entry-duplicate",
		"atlassian marketplace-entry-source",
		"escape marketplace-entry-source",
		"escape-clean marketplace-entry-source",
		"gh-tools marketplace-entry-source",
		"renamed marketplace-entry-name",
		"typescript-lsp marketplace-entry-source",
	}
	if got := problemSet(r.Problems); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r.Plugins != 2 || !r.Unsigned || r.Kind != KindClaudeMarketplace {
		t.Errorf("info %+v", r.CatalogInfo)
	}
	for _, p := range r.Problems {
		if p.Plugin == "escape" && !strings.Contains(p.Message, "leaves the marketplace") {
			t.Errorf("escape: %s", p)
		}
	}

	// A symlinked plugin directory that leads outside is refused too.
	data, _ := os.ReadFile(filepath.Join(dir, ".claude-plugin", "marketplace.json"))
	linked := strings.Replace(string(data), `{"name": "renamed", "source": "./plugins/acme-db"}`, `{"name": "acme-db-linked", "source": "./plugins/linked"}`, 1)
	if _, ps, err := foreign.ParseClaudeMarketplace([]byte(linked), dir); err != nil || !strings.Contains(problemsText(ps), "leads outside the marketplace") {
		t.Errorf("symlink: %v %s", err, problemsText(ps))
	}

	ctx := context.Background()
	sh, err := c.ShowUnsigned(ctx, "team", "acme-db", "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Open(ctx, filepath.Join(dir, "plugins", "acme-db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if sh.Digest != b.Digest || sh.Shown != "1.2.0" || sh.Review == nil {
		t.Errorf("show %+v, digest of the directory %s", sh, b.Digest)
	}
	b.Close()
	res, err := c.Search(Query{Text: "acme-db"}, nil)
	if err != nil || len(res.Results) != 1 || !res.Results[0].Unsigned {
		t.Errorf("search %+v %v", res, err)
	}

	st := store.Open(store.Paths{Root: filepath.Join(home, "state")}, nil)
	req := UnsignedInstallRequest{Catalog: "team", Name: "acme-db", AllowUnsigned: true}
	var pe *UnsignedPinError
	if _, err := c.InstallUnsigned(ctx, st, req); !errors.As(err, &pe) || pe.Digest != sh.Digest {
		t.Fatalf("install without --digest: %v", err)
	}
	req.Digest, _ = store.ParseDigest(sh.Digest)
	got, err := c.InstallUnsigned(ctx, st, req)
	if err != nil {
		t.Fatal(err)
	}
	if rec := got.Trust.Record; !rec.Unsigned || rec.Name != "acme-db" || rec.Digest != sh.Digest {
		t.Errorf("record %+v", rec)
	}

	// The plugin directory swapped for a symlink out of the marketplace
	// after it was listed: install refuses, whatever the digest.
	pd := filepath.Join(dir, "plugins", "acme-db")
	if err := os.Rename(pd, pd+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "linked"), pd); err != nil {
		t.Fatal(err)
	}
	if _, err := c.InstallUnsigned(ctx, st, req); !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "outside the marketplace") {
		t.Errorf("install through a swapped symlink: %v", err)
	}
}

func problemsText(ps []*catalog.Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.String() + "\n")
	}
	return b.String()
}

// A marketplace.json read from a URL lists nothing it cannot fetch: its
// relative sources are skipped with the reason.
func TestClaudeMarketplaceURL(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(marketFixture, ".claude-plugin", "marketplace.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(data) }))
	defer srv.Close()
	c := newRegistryCache(t, nil)
	r, err := addMarket(t, c, srv.URL+"/marketplace.json")
	if err != nil {
		t.Fatal(err)
	}
	if r.Plugins != 0 || !strings.Contains(problemsText(r.Problems), "the marketplace was read from a URL") {
		t.Errorf("%d plugins, problems:\n%s", r.Plugins, problemsText(r.Problems))
	}
	if r.Source != srv.URL+"/marketplace.json" {
		t.Errorf("source %s", r.Source)
	}
	for _, bad := range []string{"http://example.com/marketplace.json", t.TempDir()} {
		if _, err := ClaudeMarketplaceSource(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// A plugin whose plugin.json has no version lists, shows and installs
// with the version berth derives from its content; changed content is a
// new version, which install then picks: the one the marketplace offers
// now, whatever its digits.
func TestClaudeMarketplaceVersionless(t *testing.T) {
	dir := copyMarket(t)
	home := t.TempDir()
	c := OpenCache(filepath.Join(home, "catalogs"), nil)
	if _, err := addMarket(t, c, dir); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pd := filepath.Join(dir, "plugins", "noversion")
	derived := func() string {
		b, err := bundle.Open(ctx, pd, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if v, err := importer.PluginVersion(ctx, pd); err != nil || v != b.Manifest.Version {
			t.Fatalf("the marketplace lists %q (%v), the import gives %s", v, err, b.Manifest.Version)
		}
		return b.Manifest.Version
	}
	v1 := derived()
	sh, err := c.ShowUnsigned(ctx, "team", "noversion", "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sh.Install != v1 || sh.Shown != v1 || sh.Review.Version != v1 || sh.Review.ImportedFrom.DerivedVersion == nil {
		t.Fatalf("show: install %q, shown %q, review %q; want %s", sh.Install, sh.Shown, sh.Review.Version, v1)
	}
	st := store.Open(store.Paths{Root: filepath.Join(home, "state")}, nil)
	req := UnsignedInstallRequest{Catalog: "team", Name: "noversion", AllowUnsigned: true}
	req.Digest, _ = store.ParseDigest(sh.Digest)
	got, err := c.InstallUnsigned(ctx, st, req)
	if err != nil {
		t.Fatal(err)
	}
	if got.Trust.Record.Version != v1 {
		t.Errorf("installed %s, want %s", got.Trust.Record.Version, v1)
	}
	// New content until its derived version sorts below v1 by its digits:
	// the marketplace offers it now, so it is what install picks.
	for i := 0; ; i++ {
		if err := os.WriteFile(filepath.Join(pd, "NOTES.md"), []byte(strings.Repeat("x", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		if v := derived(); v < v1 {
			break
		}
	}
	v2 := derived()
	if _, err := c.Refresh(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	sh, err = c.ShowUnsigned(ctx, "team", "noversion", "", nil, nil)
	if err != nil || sh.Install != v2 {
		t.Fatalf("after the change: install %q (%v), want %s", sh.Install, err, v2)
	}
	if !bundle.VersionNewer(v1, v2) || bundle.VersionNewer(v2, v2) || bundle.VersionLess(v2, v1) || bundle.VersionLess(v1, v2) {
		t.Errorf("%s and %s ordered by their digits", v1, v2)
	}
}
