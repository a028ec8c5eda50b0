package browse

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// trustedFixture is the fixture with acme-notes 1.1.0 and 1.2.0 trusted
// on this machine, and 1.2.0 then revoked by the catalog (refreshed into
// the cache, as berth marketplace update does).
func trustedFixture(t *testing.T) (*fixture, *Site) {
	t.Helper()
	f := newFixture(t)
	paths, err := store.NewPaths(filepath.Join(f.dir, "home"))
	if err != nil {
		t.Fatal(err)
	}
	st := store.Open(paths, nil)
	pub, _ := os.ReadFile("testdata/publisher.pub")
	signer, err := trust.NewKeySigner("acme", pub, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddSigner(f.ctx, signer); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1.1.0", "1.2.0"} {
		if _, err := st.Trust(f.ctx, f.bundleDir("acme", "acme-notes", v), nil); err != nil {
			t.Fatal(err)
		}
	}
	f.status("acme", "acme-notes", "1.2.0", catalog.StatusRevoked, "the key that signed it leaked")
	if _, err := f.cache.Refresh(f.ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	return f, New(f.cache, &Options{Store: st, Resolve: &marketplace.ResolveOptions{Now: f.clk.now()}})
}

// TestBrowserTrustedRevoked: in a real browser, a trusted version the
// catalog revoked reads as revoked (a red badge), never as a green
// "matches catalog"; the badges say "trusted" (what the trust record
// means), not "installed"; the install box enables.
func TestBrowserTrustedRevoked(t *testing.T) {
	b := newBrowser(t)
	f, s := trustedFixture(t)
	token := NewToken()
	srv := httptest.NewServer(s.HandlerWithToken(token))
	defer srv.Close()
	b.do(chromedp.Navigate(srv.URL+"/?token="+token), chromedp.WaitVisible(chromedp.ID("q")))
	card := b.text(`li.card[data-key="acme/acme-notes"] .badges`)
	cls := value(b, chromedp.Evaluate[string](`document.querySelector('li.card[data-key="acme/acme-notes"] .badge.trusted').className`))
	if !strings.Contains(card, "trusted 1.2.0 · REVOKED by the catalog") || !strings.Contains(cls, "bad") {
		t.Errorf("the card of a revoked trusted version reads %q (class %q), want a bad \"trusted 1.2.0 · REVOKED by the catalog\"", card, cls)
	}
	if strings.Contains(card, "matches catalog") || strings.Contains(card, "installed") {
		t.Errorf("the card reads %q", card)
	}
	b.do(chromedp.Navigate(srv.URL+"/plugins/acme/acme-notes"), chromedp.WaitVisible(chromedp.ID("install-cmd")))
	head := b.text(".plugin-head .badges")
	if !strings.Contains(head, "trusted 1.2.0 · REVOKED by the catalog") || !strings.Contains(head, "trusted 1.1.0 · matches catalog") || strings.Contains(head, "installed") {
		t.Errorf("the plugin page's badges read %q", head)
	}
	versions := b.text("section.versions")
	if !strings.Contains(versions, "Trusted on this machine") || !strings.Contains(versions, "1.2.0: REVOKED by the catalog (the key that signed it leaked)") || strings.Contains(versions, "Installed here") {
		t.Errorf("the versions section reads %q", versions)
	}
	if got := b.text("#install-cmd"); got != "berth install acme-notes@^1.1 --catalog acme --enable" {
		t.Errorf("install command %q", got)
	}
	b.check(srv.URL + "/")
	_ = f
}

// TestExportNoLocalState: an export, meant for hosting, carries nothing
// of the machine that wrote it unless asked: no trusted versions, no
// trust times, no local catalog source; --with-local-state
// (ExportOptions.WithLocalState) puts them in.
func TestExportNoLocalState(t *testing.T) {
	f, s := trustedFixture(t)
	recs, err := s.o.Store.Records()
	if err != nil || len(recs) != 2 {
		t.Fatalf("records: %v %d", err, len(recs))
	}
	// What would give the exporter away: each trust time as the pages
	// print it, the word "trusted" badges use, the catalogs' local paths.
	var secrets []string
	for _, r := range recs {
		secrets = append(secrets, r.TrustedAt.UTC().Format("2006-01-02 15:04 UTC"))
	}
	secrets = append(secrets, `badge bad trusted`, `badge ok trusted`, "Trusted on this machine", f.dir, "added ")
	grep := func(dir string) map[string][]string {
		found := map[string][]string{}
		err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, sec := range secrets {
				if strings.Contains(string(data), sec) {
					found[sec] = append(found[sec], strings.TrimPrefix(p, dir))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return found
	}
	public := filepath.Join(t.TempDir(), "site")
	if _, err := s.Export(f.ctx, public, nil); err != nil {
		t.Fatal(err)
	}
	for sec, files := range grep(public) {
		t.Errorf("the export carries local state %q in %v", sec, files)
	}
	cats, _ := os.ReadFile(filepath.Join(public, "catalogs.html"))
	if !strings.Contains(string(cats), "a local directory or loopback address of the machine that exported this page (not shown") {
		t.Error("the catalogs page does not say the local source is left out")
	}
	// The served page still shows them; so does an export that asks.
	private := filepath.Join(t.TempDir(), "site")
	if _, err := s.Export(f.ctx, private, &ExportOptions{WithLocalState: true}); err != nil {
		t.Fatal(err)
	}
	found := grep(private)
	for _, sec := range secrets {
		if len(found[sec]) == 0 {
			t.Errorf("the export --with-local-state lacks %q", sec)
		}
	}
}
