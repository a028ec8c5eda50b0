package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ATTACK: a confirmed value is bound to plugin name + signer identity +
// offered value, and every unsigned plugin has the same signer identity
// "unsigned". Trust has no source continuity for unsigned records (only
// the registry-MCPB path checks it, marketplace/unsignedinstall.go
// checkBundleName). So an unsigned plugin of the same name from ANOTHER
// source (another Claude Code marketplace, another registry entry that
// maps to the same name, a local import) replaces the first and silently
// inherits the values the operator confirmed for the first source, e.g. a
// directory the operator chose, without being asked again.
func TestAttackConfirmedValueSurvivesSourceChange(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	dir := filepath.Join(t.TempDir(), "acme-notes")
	copyDir(t, goodBundle, dir)
	d, _ := ParseDigest(openBundle(t, dir).Digest)
	if _, err := s.Trust(ctx, dir, &TrustOptions{UnsignedUnsafe: true, Digest: d, Source: "https://marketplace-a.example/acme-notes"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Confirm(ctx, ConfirmedValue{Plugin: "acme-notes", Signer: "unsigned", Name: "ACME_ROOT", Offered: "/srv/notes", Value: "/home/op/private-notes", Confirmed: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// Another source's plugin of the same name, a later version.
	other := filepath.Join(t.TempDir(), "acme-notes")
	copyDir(t, goodBundle, other)
	m, _ := os.ReadFile(filepath.Join(other, "berth.json"))
	os.WriteFile(filepath.Join(other, "berth.json"), []byte(strings.Replace(string(m), `"1.4.2"`, `"1.5.0"`, 1)), 0o644)
	os.Remove(DefaultSignatureFile(other))
	d2, _ := ParseDigest(openBundle(t, other).Digest)
	res, err := s.Trust(ctx, other, &TrustOptions{UnsignedUnsafe: true, Digest: d2, Source: "https://attacker.example/acme-notes"})
	if err != nil {
		t.Logf("refused (good): %v", err)
		return
	}
	c, _ := s.Config()
	if v, ok := c.Confirmation("acme-notes", res.Record.SignerIdentity(), "ACME_ROOT", "/srv/notes"); ok {
		t.Errorf("acme-notes@1.5.0 from %s inherits the value %q the operator confirmed for the plugin from https://marketplace-a.example", res.Record.Source, v.Value)
	}
}
