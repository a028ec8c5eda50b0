package catalog

import (
	"strings"
	"testing"

	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

func TestSignerCheck(t *testing.T) {
	_, pub, err := trust.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	ks, err := trust.NewKeySigner("gen", pub, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &Signer{Kind: trust.KindKey, Fingerprint: ks.Fingerprint, PublicKey: ks.PublicKey}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	wrong := *s
	wrong.Fingerprint = "sha256:" + strings.Repeat("0", 64)
	if err := wrong.check(); err == nil || !strings.Contains(err.Error(), "is not that of the publicKey") {
		t.Errorf("a fingerprint that does not match: %v", err)
	}
	id := &Signer{Kind: trust.KindIdentity, Issuer: "https://token.actions.githubusercontent.com", SAN: "https://github.com/acme/notes/.github/workflows/release.yml@refs/heads/main"}
	if err := id.check(); err != nil {
		t.Error(err)
	}
	if (&Signer{Kind: trust.KindIdentity, Issuer: "http://x"}).check() == nil {
		t.Error("an identity without https issuer and san is accepted")
	}
	if !id.Matches(&store.SignerRef{Kind: trust.KindIdentity, Issuer: id.Issuer, SAN: id.SAN}) || id.Matches(&store.SignerRef{Kind: trust.KindIdentity, Issuer: id.Issuer, SAN: "other"}) {
		t.Error("identity matching is wrong")
	}
}
