package marketplace

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/store"
)

// BenchmarkInstall is berth install of a small bundle from a directory
// catalog into an empty store (resolve, download checked as it streams,
// validate, verify, review, check against the catalog's summary, add the
// scoped signer, stage, record), side by side with store.Trust of the
// same bundle from a local directory: the cost a catalog adds.
func BenchmarkInstall(b *testing.B) {
	e := newEnv(b, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	e.addCatalog()
	dir, _ := e.bundle("acme-notes", "1.0.0", "")
	p, _, err := e.cache.Plugin("acme", "acme-notes")
	if err != nil {
		b.Fatal(err)
	}
	refs, proposed, err := signerSets("acme-notes", p.Signers)
	if err != nil {
		b.Fatal(err)
	}
	fresh := func(i int) *store.Store {
		return store.Open(store.Paths{Root: filepath.Join(b.TempDir(), fmt.Sprint(i))}, nil)
	}
	b.Run("install-from-catalog", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if _, err := e.cache.Install(e.ctx, fresh(i), InstallRequest{Name: "acme-notes", Resolve: &ResolveOptions{Now: e.clk.now()}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("trust-local-dir", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if _, err := fresh(i).Trust(e.ctx, dir, &store.TrustOptions{AllowedSigners: refs, ProposedSigners: proposed}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkApplyStatus10k is what every refresh adds to find revocations:
// 20 trusted versions compared with the 10,000-plugin catalog, reading
// the index once (as ApplyStatus does) and, side by side, once per
// record (one Plugin call each).
func BenchmarkApplyStatus10k(b *testing.B) {
	e := bigCatalog(b, 10000)
	st := store.Open(store.Paths{Root: filepath.Join(e.dir, "home")}, nil)
	var names []string
	for i := 0; i < 10000; i += 500 {
		name := fmt.Sprintf("%s-plugin-%05d", []string{"notes", "git", "weather", "files", "search", "calendar", "mail", "sql", "docs", "slack"}[i%10], i)
		names = append(names, name)
		rec := store.Record{Name: name, Version: "1.0.0", Digest: fmt.Sprintf("sha256:%064x", len(name)*1000), Signer: &store.SignerRef{Kind: "key", Name: "k", Fingerprint: "sha256:" + fmt.Sprintf("%064x", 1)},
			ReviewHash: "x", Source: "bench", TrustedAt: time.Now(), Catalog: &store.CatalogOrigin{Name: "acme", RootKeyIDs: []string{"a"}, TargetsVersion: 1}}
		data, _ := json.Marshal(rec)
		p := st.Paths().Record(name, "1.0.0")
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("one-index-read", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.cache.ApplyStatus(e.ctx, st, "acme"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("index-read-per-record", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.Records(); err != nil {
				b.Fatal(err)
			}
			for _, n := range names {
				if _, _, err := e.cache.Plugin("acme", n); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
