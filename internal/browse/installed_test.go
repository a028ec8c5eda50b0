package browse

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// TestInstalledBadge: "matches catalog" comes from berth's own trust
// records, written by the install pipeline after it verified the bundle:
// the same digest and an allowed signer match; another bundle under the
// same version does not.
func TestInstalledBadge(t *testing.T) {
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
	if _, err := st.Trust(f.ctx, f.bundleDir("acme", "acme-notes", "1.2.0"), nil); err != nil {
		t.Fatal(err)
	}
	// acme-cloud 2.1.0, but not the bundle the catalog lists.
	other := filepath.Join(f.dir, "other-cloud")
	if out, err := exec.Command("cp", "-a", f.bundleDir("acme", "acme-cloud", "2.1.0"), other).CombinedOutput(); err != nil {
		t.Fatalf("%s", out)
	}
	os.WriteFile(filepath.Join(other, "EXTRA.txt"), []byte("not in the catalog's bundle\n"), 0o644)
	b, err := bundle.Open(f.ctx, other, nil)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := trust.Sign(f.ctx, b.Listing().Bytes(), f.priv)
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Trust(f.ctx, other, &store.TrustOptions{Signature: sig}); err != nil {
		t.Fatal(err)
	}
	s := New(f.cache, &Options{Store: st, Resolve: &marketplace.ResolveOptions{Now: f.clk.now()}})
	srv := newServer(t, s)
	index := get(t, srv, "/").body
	if !strings.Contains(index, ">trusted 1.2.0 · matches catalog</li>") || !strings.Contains(index, ">trusted 2.1.0 · differs from catalog</li>") {
		t.Errorf("index: no trusted badges")
	}
	notes := get(t, srv, "/plugins/acme/acme-notes").body
	if !strings.Contains(notes, "1.2.0: matches the catalog (berth's trust record has the digest it lists, signed by key &#34;acme&#34; (sha256:") {
		t.Errorf("acme-notes: no matches-catalog line:\n%s", notes[strings.Index(notes, "Trusted on this machine"):])
	}
	cloud := get(t, srv, "/plugins/acme/acme-cloud").body
	if !strings.Contains(cloud, "2.1.0: differs from the catalog: the installed bundle has digest sha256:") {
		t.Errorf("acme-cloud: no differs line")
	}
	// beta's acme-notes is another plugin of the same name: its 0.9.0 is
	// not installed, whatever acme's records say.
	if strings.Contains(get(t, srv, "/plugins/beta/acme-notes").body, "trusted 1.2.0") {
		t.Errorf("beta's page shows acme's install")
	}
}
