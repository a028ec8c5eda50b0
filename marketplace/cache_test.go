package marketplace

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/repo"
)

func openBundle(t testing.TB, src string) *bundle.Bundle {
	t.Helper()
	b, err := bundle.Open(context.Background(), src, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPublishAndRefresh(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	res := e.publish("acme-notes", "1.0.0")
	if !res.NewPlugin || res.Publish.TargetsVersion != 2 || res.Publish.TimestampVersion != 2 {
		t.Fatalf("first add: %+v %+v", res, res.Publish)
	}
	ci := e.addCatalog()
	if ci.Plugins != 1 || ci.TargetsVersion != 2 || ci.Stale {
		t.Fatalf("added: %+v", ci)
	}
	e.takeRequests()

	// Nothing changed: only the root probe and the timestamp.
	r, err := e.refresh()
	if err != nil {
		t.Fatal(err)
	}
	if r.Changed {
		t.Error("a refresh with nothing new changed the copy")
	}
	if got := e.takeRequests(); !slices.Equal(got, []string{"2.root.json", "timestamp.json"}) {
		t.Errorf("a refresh with nothing changed fetched %v, want only the root probe and the timestamp", got)
	}

	// A new version: timestamp, snapshot, targets and the catalog.
	e.publish("acme-notes", "1.1.0")
	r, err = e.refresh()
	if err != nil {
		t.Fatal(err)
	}
	if !r.Changed || r.TargetsVersion != 3 {
		t.Fatalf("refresh after a new version: %+v", r.CatalogInfo)
	}
	got := e.takeRequests()
	if len(got) != 5 || got[2] != "3.snapshot.json" || got[3] != "3.targets.json" || !strings.HasPrefix(got[4], "targets/") {
		t.Errorf("refresh after a change fetched %v", got)
	}
	l, err := e.cache.Load("acme")
	if err != nil {
		t.Fatal(err)
	}
	p := l.Catalog.Plugin("acme-notes")
	if p == nil || len(p.Versions) != 2 || p.Tier != catalog.TierCommunity || !slices.Equal(p.Tags, []string{"notes"}) {
		t.Fatalf("loaded: %+v", p)
	}
	if len(p.Signers) != 1 || p.Signers[0].Kind != "key" {
		t.Errorf("signers: %+v", p.Signers)
	}
	// The archive was copied in and matches.
	v := p.Version("1.1.0")
	if msg := repo.CheckServedFile(e.repoDir, v.URLs[0], v.Archive.Size, v.Archive.SHA256); msg != "" {
		t.Error(msg)
	}

	// Only the current copy and the previous one are kept.
	entries, _ := os.ReadDir(filepath.Join(e.dir, "home", "catalogs", "acme"))
	var copies int
	for _, en := range entries {
		if strings.HasPrefix(en.Name(), "v-") {
			copies++
		}
	}
	if copies != 2 {
		t.Errorf("%d copies kept, want 2", copies)
	}
}

func TestAddPinnedByRootFile(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	src, _ := ParseSource("file://" + e.repoDir)
	root := e.read("1.root.json")
	if _, err := e.cache.Add(e.ctx, "acme", src, RootPin{Root: root}); err != nil {
		t.Fatal(err)
	}
	// Adding the same name again is refused.
	if _, err := e.cache.Add(e.ctx, "acme", src, RootPin{Root: root}); err == nil || !strings.Contains(err.Error(), "added already") {
		t.Fatalf("second add: %v", err)
	}
}

func TestAddWrongPin(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	src, _ := ParseSource(e.repoDir)
	_, err := e.cache.Add(e.ctx, "acme", src, RootPin{SHA256: strings.Repeat("ab", 32)})
	wantKind(t, err, KindRootPin)
	// Another catalog's root is refused: its keys did not sign this one.
	other := newEnv(t, repo.Expiries{})
	_, err = e.cache.Add(e.ctx, "acme", src, RootPin{Root: other.read("1.root.json")})
	wantKind(t, err, KindBadSignature)
	if names, _ := e.cache.Names(); len(names) != 0 {
		t.Errorf("a refused add left %v", names)
	}
}

func TestStaleCopy(t *testing.T) {
	e := newEnv(t, repo.Expiries{Timestamp: time.Hour})
	e.publish("acme-notes", "1.0.0")
	e.addCatalog()
	e.clk.advance(2 * time.Hour)
	l, err := e.cache.Load("acme")
	if err != nil {
		t.Fatal(err)
	}
	if !l.Stale {
		t.Error("a copy past its timestamp's expiry is not stale")
	}
	_, err = e.refresh()
	ve := wantKind(t, err, KindExpired)
	if !strings.Contains(ve.Error(), "timestamp.json is expired") {
		t.Errorf("the message does not say which: %v", ve)
	}
	// The curator's cron job renews it.
	if _, err := e.repo().Refresh(e.ctx); err != nil {
		t.Fatal(err)
	}
	r, err := e.refresh()
	if err != nil {
		t.Fatal(err)
	}
	if r.Stale || !r.Changed {
		t.Errorf("after the curator's refresh: %+v", r.CatalogInfo)
	}
}
