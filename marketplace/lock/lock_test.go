package lock

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

func TestLockRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if l, err := Read(dir); l != nil || err != nil {
		t.Fatalf("missing lock: %v %v", l, err)
	}
	id := strings.Repeat("ab", 32)
	l := &Lock{LockVersion: 1}
	l.Set(Plugin{Name: "zeta", Version: "1.0.0", Digest: "sha256:" + strings.Repeat("1", 64), Signer: Signer{Kind: trust.KindKey, Fingerprint: "sha256:" + strings.Repeat("2", 64)}, Catalog: Catalog{Name: "acme", RootKeyIDs: []string{id}, TargetsVersion: 7}})
	l.Set(Plugin{Name: "alpha", Version: "2.0.0-rc.1", Constraint: "^2.0.0-0", Digest: "sha256:" + strings.Repeat("3", 64), Signer: Signer{Kind: trust.KindIdentity, Issuer: "https://accounts.google.com", SAN: "a@example.com"}, Catalog: Catalog{Name: "acme", RootKeyIDs: []string{id}, TargetsVersion: 7}})
	if err := Write(dir, l); err != nil {
		t.Fatal(err)
	}
	got, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Plugins) != 2 || got.Plugins[0].Name != "alpha" {
		t.Fatalf("%+v", got)
	}
	if p, ok := got.Plugin("zeta"); !ok || p.Catalog.TargetsVersion != 7 || !p.Signer.Matches(&store.SignerRef{Kind: trust.KindKey, Fingerprint: "sha256:" + strings.Repeat("2", 64)}) {
		t.Errorf("zeta: %+v", p)
	}
	fi, _ := os.Stat(filepath.Join(dir, File))
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("berth.lock has mode %o", fi.Mode().Perm())
	}
	// Bad locks name every problem.
	for doc, want := range map[string]string{
		`{"lockVersion": 2, "plugins": []}`:         "lockVersion is 2",
		`{"lockVersion": 1, "plugins": [], "x": 1}`: "unknown field",
		`{"lockVersion": 1, "plugins": [{"name": "A", "version": "1", "digest": "x", "signer": {"kind": "key"}, "catalog": {"name": "", "rootKeyIDs": [], "targetsVersion": 0}}]}`: "must be a plugin name",
	} {
		_, err := Parse([]byte(doc))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", doc, err)
		}
	}
	_, err = Parse([]byte(`{"lockVersion": 1, "plugins": [{"name": "A", "version": "1", "digest": "x", "signer": {"kind": "key"}, "catalog": {"name": "", "rootKeyIDs": [], "targetsVersion": 0}}]}`))
	for _, want := range []string{"digest", "fingerprint", "catalog", "rootKeyIDs is empty", "targetsVersion"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the lock error does not mention %s: %v", want, err)
		}
	}
	if err := Write(dir, &Lock{Plugins: []Plugin{{Name: "x"}}}); err == nil {
		t.Error("an invalid lock was written")
	}
}
