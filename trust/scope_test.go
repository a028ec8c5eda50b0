package trust_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/internal/sigtest"
	"github.com/berth-mcp/berth/trust"
)

// A signer scoped to a plugin verifies that plugin's bundles only: never
// another plugin's, and never a signature checked for no plugin, with a
// key or with a certificate identity, alone or beside other signers.
func TestScopedSignerNeverVerifiesAnotherPlugin(t *testing.T) {
	ctx := context.Background()
	listing := loadCosign(t).listing
	priv, pub, err := trust.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	keySig, err := trust.Sign(ctx, listing, priv)
	if err != nil {
		t.Fatal(err)
	}
	vsig := sigtest.NewVirtualSigstore(t)
	idSig := vsig.SignIdentity(t, testSAN, testIssuer, listing, sigtest.IdentityOpts{})

	key := mustKeySigner(t, "acme-notes-key", pub, nil)
	key.Plugin = "acme-notes"
	id := identitySigner(t, "acme-notes-ci", testIssuer, testSAN, "", vsig.RootPath)
	id.Plugin = "acme-notes"
	_, otherPub, err := trust.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	unrelated := mustKeySigner(t, "unrelated", otherPub, nil)

	for _, c := range []struct {
		name   string
		signer trust.Signer
		sig    []byte
	}{{"key", key, keySig}, {"identity", id, idSig}} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.signer.Validate(); err != nil {
				t.Fatal(err)
			}
			v := mustVerifier(t, []trust.Signer{unrelated, c.signer}, nil)
			res, err := v.VerifyPlugin(ctx, "acme-notes", listing, c.sig)
			if err != nil {
				t.Fatalf("the plugin it is scoped to: %v", err)
			}
			if res.Signer.Name != c.signer.Name || res.Signer.Plugin != "acme-notes" {
				t.Fatalf("accepted by %+v", res.Signer)
			}
			for _, plugin := range []string{"acme-other", "acme-notes2", "acme"} {
				_, err := v.VerifyPlugin(ctx, plugin, listing, c.sig)
				var ve *trust.VerificationError
				if !errors.As(err, &ve) || !errors.Is(err, trust.ErrUntrusted) {
					t.Fatalf("%s: a signer scoped to acme-notes verified it: %v", plugin, err)
				}
				if !strings.Contains(err.Error(), "scoped to plugin acme-notes only, and this is a bundle of "+plugin) {
					t.Errorf("%s: the refusal does not say why:\n%v", plugin, err)
				}
			}
			if _, err := v.Verify(ctx, listing, c.sig); !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "checked for no plugin") {
				t.Fatalf("Verify with no plugin: %v", err)
			}
			// The same key or identity unscoped verifies for any plugin:
			// the scope is what refuses, not the signature.
			open := c.signer
			open.Plugin = ""
			if _, err := mustVerifier(t, []trust.Signer{open}, nil).VerifyPlugin(ctx, "acme-other", listing, c.sig); err != nil {
				t.Fatalf("unscoped: %v", err)
			}
		})
	}
}

func TestScopedSignerValidateAndString(t *testing.T) {
	_, pub, err := trust.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	s := mustKeySigner(t, "acme-notes-key", pub, nil)
	s.Plugin = "acme-notes"
	if got := s.String(); !strings.HasSuffix(got, ", for plugin acme-notes only") || !strings.HasPrefix(got, `key "acme-notes-key" (sha256:`) {
		t.Errorf("String() = %q", got)
	}
	for _, bad := range []string{"Acme", "-acme", "acme_notes", strings.Repeat("a", 65), "../x"} {
		s.Plugin = bad
		if err := s.Validate(); !errors.Is(err, trust.ErrInvalidSigner) || !strings.Contains(err.Error(), "is not a plugin name") {
			t.Errorf("plugin %q: %v", bad, err)
		}
		if _, err := trust.NewVerifier([]trust.Signer{s}, nil); err == nil {
			t.Errorf("plugin %q: NewVerifier accepted it", bad)
		}
	}
}
