package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every unsigned plugin has the signer identity "unsigned", so a value the
// operator confirmed is bound to the record's source as well
// (Record.ConfirmSource): an unsigned plugin of the same name from another
// source (another marketplace, another registry entry, a local import from
// elsewhere) does not inherit it and is asked again, while a later version
// from the same registry entry keeps it.
func TestConfirmedValueBoundToUnsignedSource(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	dir := filepath.Join(t.TempDir(), "acme-notes")
	copyDir(t, goodBundle, dir)
	d, _ := ParseDigest(openBundle(t, dir).Digest)
	first, err := s.Trust(ctx, dir, &TrustOptions{UnsignedUnsafe: true, Digest: d, Source: "https://registry-a.example/v0/servers/acme%2Fnotes/versions/1.4.2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Confirm(ctx, ConfirmedValue{Plugin: "acme-notes", Signer: first.Record.SignerIdentity(), Source: first.Record.ConfirmSource(), Name: "ACME_ROOT", Offered: "/srv/notes", Value: "/home/op/private-notes", Confirmed: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// Another source's plugin of the same name, a later version.
	other := filepath.Join(t.TempDir(), "acme-notes")
	copyDir(t, goodBundle, other)
	m, _ := os.ReadFile(filepath.Join(other, "berth.json"))
	os.WriteFile(filepath.Join(other, "berth.json"), []byte(strings.Replace(string(m), `"1.4.2"`, `"1.5.0"`, 1)), 0o644)
	os.Remove(DefaultSignatureFile(other))
	d2, _ := ParseDigest(openBundle(t, other).Digest)
	// An install from a catalog (SameSource) is refused, naming both
	// sources and berth revoke.
	_, err = s.Trust(ctx, other, &TrustOptions{UnsignedUnsafe: true, SameSource: true, Digest: d2, Source: "https://attacker.example/acme-notes"})
	var sc *SourceChangeError
	if !errors.As(err, &sc) || !strings.Contains(err.Error(), "registry-a.example") || !strings.Contains(err.Error(), "attacker.example") || !strings.Contains(err.Error(), "berth revoke acme-notes") {
		t.Fatalf("another source's acme-notes@1.5.0 with SameSource: %v", err)
	}
	// Trusted by hand, it is trusted, but the value is not carried over.
	res, err := s.Trust(ctx, other, &TrustOptions{UnsignedUnsafe: true, Digest: d2, Source: "https://attacker.example/acme-notes"})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.Config()
	if v, ok := c.Confirmation("acme-notes", res.Record.SignerIdentity(), res.Record.ConfirmSource(), "ACME_ROOT", "/srv/notes"); ok {
		t.Errorf("acme-notes@1.5.0 from %s inherits the value %q the operator confirmed for the plugin from registry-a.example", res.Record.Source, v.Value)
	}
	// The next version of the same registry entry keeps it.
	if _, ok := c.Confirmation("acme-notes", "unsigned", "https://registry-a.example/v0/servers/acme%2Fnotes", "ACME_ROOT", "/srv/notes"); !ok {
		t.Errorf("the value is not bound to the registry entry (%+v)", c.Confirmed)
	}
}

// SourceOrigin drops a registry entry's version and nothing else.
func TestSourceOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"https://r.example/v0/servers/io.github.acme%2Ftiny/versions/1.0.0":  "https://r.example/v0/servers/io.github.acme%2Ftiny",
		"https://r.example/v0/servers/io.github.acme%2Ftiny/versions/v2.0.0": "https://r.example/v0/servers/io.github.acme%2Ftiny",
		"/home/op/market/plugins/acme":                                       "/home/op/market/plugins/acme",
		"/home/op/versions/1.0.0":                                            "/home/op/versions/1.0.0",
		"https://market.example/plugins/acme":                                "https://market.example/plugins/acme",
	} {
		if got := SourceOrigin(in); got != want {
			t.Errorf("SourceOrigin(%q) = %q, want %q", in, got, want)
		}
	}
}
