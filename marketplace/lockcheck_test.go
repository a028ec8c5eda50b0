package marketplace_test

import (
	"strings"
	"testing"

	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/lock"
	"github.com/berth-mcp/berth/store"
)

// These tests of marketplace/lock live here, as an external test package,
// because they need this package's test environment (a signed catalog in
// a cache); lock imports marketplace, so its own tests cannot build one.

// The lock entry of an installed version pins its catalog and signer.
func TestLockEntry(t *testing.T) {
	e := marketplace.NewTestEnv(t)
	e.Publish("acme-notes", "1.0.0")
	e.Publish("acme-notes", "1.1.0")
	ci := e.AddCatalog()
	st := e.Store()
	if _, err := e.Install(st, marketplace.InstallRequest{Name: "acme-notes", Constraint: "~1.0"}); err != nil {
		t.Fatal(err)
	}
	sg, err := st.Signers()
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Install(st, marketplace.InstallRequest{Name: "acme-notes"})
	if err != nil || res.Version.Version != "1.1.0" {
		t.Fatalf("%+v %v", res, err)
	}
	l, err := lock.Entry(res.Trust.Record)
	if err != nil || l.Version != "1.1.0" || l.Catalog.TargetsVersion != ci.TargetsVersion || len(sg) != 1 || l.Signer.Fingerprint != sg[0].Fingerprint {
		t.Fatalf("lock entry %+v %v", l, err)
	}
}

func TestCheckLockAndOutdated(t *testing.T) {
	e := marketplace.NewTestEnv(t)
	e.Publish("acme-notes", "1.0.0")
	e.Publish("acme-tools", "1.0.0")
	e.AddCatalog()
	st := e.Store()
	ws := t.TempDir()
	lk := &lock.Lock{LockVersion: lock.FormatVersion}
	for _, n := range []string{"acme-notes", "acme-tools"} {
		res, err := e.Install(st, marketplace.InstallRequest{Name: n, Constraint: "^1"})
		if err != nil {
			t.Fatal(err)
		}
		l, err := lock.Entry(res.Trust.Record)
		if err != nil {
			t.Fatal(err)
		}
		lk.Set(l)
	}
	enable := func(name, version, digest string) {
		if _, err := st.Update(e.Ctx(), func(s *store.State) error {
			s.Workspace(ws).Plugins[name] = &store.Enablement{Version: version, Digest: digest}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	kinds := func(prune bool) string {
		t.Helper()
		d, err := lock.Check(e.Cache(), st, ws, lk, &lock.CheckOptions{Prune: prune})
		if err != nil {
			t.Fatal(err)
		}
		var ks []string
		for _, x := range d {
			ks = append(ks, x.Name+":"+string(x.Kind))
		}
		return strings.Join(ks, " ")
	}
	if got := kinds(false); got != "acme-notes:missing acme-tools:missing" {
		t.Fatalf("nothing enabled: %s", got)
	}
	n, tl := lk.Plugins[0], lk.Plugins[1]
	enable(n.Name, n.Version, n.Digest)
	enable(tl.Name, tl.Version, tl.Digest)
	enable("extra", "1.0.0", n.Digest)
	if got := kinds(false); got != "" {
		t.Fatalf("in step: %s", got)
	}
	if got := kinds(true); got != "extra:not-locked" {
		t.Fatalf("pruning: %s", got)
	}
	// Other digest, other version, other signer, older catalog, other root.
	l2 := *lk
	l2.Plugins = append([]lock.Plugin(nil), lk.Plugins...)
	l2.Plugins[0].Digest = "sha256:" + strings.Repeat("4", 64)
	l2.Plugins[1].Signer.Fingerprint = "sha256:" + strings.Repeat("5", 64)
	d, _ := lock.Check(e.Cache(), st, ws, &l2, nil)
	if len(d) != 2 || d[0].Kind != lock.DiffDigest || d[1].Kind != lock.DiffSigner {
		t.Fatalf("%v", d)
	}
	l2.Plugins[0] = n
	l2.Plugins[0].Version = "1.1.0"
	l2.Plugins[1] = tl
	l2.Plugins[1].Catalog.TargetsVersion += 5
	d, _ = lock.Check(e.Cache(), st, ws, &l2, nil)
	if len(d) != 2 || d[0].Kind != lock.DiffVersion || d[1].Kind != lock.DiffCatalogOlder || !strings.Contains(d[1].Detail, "rolled back") {
		t.Fatalf("%v", d)
	}
	l2.Plugins[1] = tl
	l2.Plugins[1].Catalog.RootKeyIDs = []string{strings.Repeat("6", 64)}
	l2.Plugins[0] = n
	l2.Plugins[0].Catalog.Name = "gone"
	d, _ = lock.Check(e.Cache(), st, ws, &l2, nil)
	if len(d) != 2 || d[0].Kind != lock.DiffCatalogMissing || d[1].Kind != lock.DiffCatalogRoot {
		t.Fatalf("%v", d)
	}

	// outdated: a new version within the constraint, and one outside.
	e.Publish("acme-notes", "1.2.0")
	e.Publish("acme-notes", "2.0.0")
	if _, err := e.Cache().Refresh(e.Ctx(), "acme"); err != nil {
		t.Fatal(err)
	}
	out, err := lock.ListOutdated(e.Cache(), st, map[string]string{"acme-tools": "~1.0"}, &marketplace.ResolveOptions{Now: e.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].Name != "acme-notes" || out[0].Current != "1.0.0" || out[0].Wanted != "1.2.0" || out[0].Latest != "2.0.0" || !out[0].Upgrade || out[0].Status != catalog.StatusActive ||
		out[1].Constraint != "~1.0" || out[1].Upgrade || out[1].Wanted != "1.0.0" {
		t.Fatalf("%+v %+v", out[0], out[1])
	}
}
