package lock

import (
	"reflect"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/trust"
)

// FuzzParseLock: berth.lock is committed to a repository anyone may send
// a change to. Parsing never panics; what it accepts survives a round
// trip unchanged.
func FuzzParseLock(f *testing.F) {
	l := &Lock{LockVersion: 1}
	l.Set(Plugin{Name: "notes", Version: "1.0.0", Constraint: "^1", Digest: "sha256:" + strings.Repeat("1", 64),
		Signer:  Signer{Kind: trust.KindKey, Fingerprint: "sha256:" + strings.Repeat("2", 64)},
		Catalog: Catalog{Name: "acme", RootKeyIDs: []string{strings.Repeat("a", 64)}, TargetsVersion: 2}})
	f.Add(l.Marshal())
	l.SetCatalog(CatalogSource{Name: "acme", Source: "https://catalog.example/acme/", RootPin: "sha256:" + strings.Repeat("3", 64)})
	f.Add(l.Marshal())
	f.Add([]byte(`{"lockVersion": 1, "catalogs": [{"name": "acme", "source": "file:///etc", "rootPin": "sha256:x"}, {"name": "acme", "source": "\u0000", "rootPin": ""}], "plugins": []}`))
	l.Set(Plugin{Name: "filesystem", Version: "2026.8.31", Digest: "sha256:" + strings.Repeat("4", 64),
		Signer: Signer{Kind: SignerBuiltin}, Catalog: Catalog{Name: "builtin", Source: SourceBuiltin, BerthVersion: "0.1.0"}})
	f.Add(l.Marshal())
	f.Add([]byte(`{"lockVersion": 1, "catalogs": [{"name": "builtin", "source": "https://x/", "rootPin": "sha256:` + strings.Repeat("3", 64) + `"}], "plugins": [{"name": "fs", "version": "1.0.0", "digest": "sha256:` + strings.Repeat("4", 64) + `", "signer": {"kind": "builtin"}, "catalog": {"name": "builtin", "source": "builtin", "berthVersion": "0.1.0", "rootKeyIDs": []}}]}`))
	f.Add([]byte(`{"lockVersion": 1, "catalogs": null, "plugins": []}`))
	f.Add([]byte(`{"lockVersion": 1, "plugins": null}`))
	f.Add([]byte(`{"lockVersion": 1, "LockVersion": 2, "plugins": [{"name": "x", "name": "y"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Parse(data)
		if err != nil {
			return
		}
		again, err := Parse(l.Marshal())
		if err != nil {
			t.Fatalf("a lock berth accepted does not parse after Marshal: %v", err)
		}
		if !reflect.DeepEqual(again.Marshal(), l.Marshal()) {
			t.Fatal("round trip changed the lock")
		}
	})
}
