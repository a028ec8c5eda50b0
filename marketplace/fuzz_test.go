package marketplace

import (
	"reflect"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/lock"
	"github.com/berth-mcp/berth/trust"
)

// FuzzParseCatalog: a catalog comes from a source berth does not control
// (before verification, and a curator's hand edits after). Parsing never
// panics; what it accepts passes every rule and survives a round trip.
func FuzzParseCatalog(f *testing.F) {
	s := (&testEnv{t: f}).catalogSigner()
	p := genPlugin("notes", "Take notes", catalog.TierCommunity, []string{"notes"}, s, "1.0.0", "2.0.0-rc.1")
	p.Versions[0].Summary.Tools = []catalog.Tool{{Server: "main", Name: "search", Description: "Search notes"}}
	p.Versions[0].Summary.ContextTokens = catalog.EstimateTokens(p.Versions[0].Summary.Tools)
	p.Versions[1].Status, p.Versions[1].Reason = catalog.StatusDeprecated, "use 2.0.0"
	cat := &catalog.Catalog{CatalogVersion: 1, Name: "acme", Plugins: []*catalog.Plugin{p}}
	f.Add(cat.Marshal())
	f.Add([]byte(`{"catalogVersion": 1, "plugins": [{"name": "x"}, 1, null, []]}`))
	f.Add([]byte(`{"catalogVersion": 1, "plugins": []}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, ps, err := catalog.Parse(data)
		if err != nil {
			return
		}
		for _, p := range c.Plugins {
			if errs := catalog.CheckPlugin(p, "x"); catalog.HasErrors(errs) {
				t.Fatalf("accepted an entry that breaks rules: %v", errs)
			}
		}
		for _, p := range ps {
			if p.Rule == "" || p.Message == "" {
				t.Fatalf("a problem without rule or message: %+v", p)
			}
		}
		again, ps2, err := catalog.Parse(c.Marshal())
		if err != nil || catalog.HasErrors(ps2) || len(again.Plugins) != len(c.Plugins) {
			t.Fatalf("round trip: %v %v (%d vs %d plugins)", err, ps2, len(again.Plugins), len(c.Plugins))
		}
	})
}

// FuzzParseLock: berth.lock is committed to a repository anyone may send
// a change to. Parsing never panics; what it accepts survives a round
// trip unchanged.
func FuzzParseLock(f *testing.F) {
	l := &lock.Lock{LockVersion: 1}
	l.Set(lock.Plugin{Name: "notes", Version: "1.0.0", Constraint: "^1", Digest: "sha256:" + strings.Repeat("1", 64),
		Signer:  lock.Signer{Kind: trust.KindKey, Fingerprint: "sha256:" + strings.Repeat("2", 64)},
		Catalog: lock.Catalog{Name: "acme", RootKeyIDs: []string{strings.Repeat("a", 64)}, TargetsVersion: 2}})
	f.Add(l.Marshal())
	f.Add([]byte(`{"lockVersion": 1, "plugins": null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := lock.Parse(data)
		if err != nil {
			return
		}
		again, err := lock.Parse(l.Marshal())
		if err != nil {
			t.Fatalf("a lock berth accepted does not parse after Marshal: %v", err)
		}
		if !reflect.DeepEqual(again.Marshal(), l.Marshal()) {
			t.Fatal("round trip changed the lock")
		}
	})
}
