package store

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestOAuthClients(t *testing.T) {
	ctx := context.Background()
	paths, err := NewPaths(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st := Open(paths, nil)
	oc := OAuthClient{ClientID: "berth-at-acme", ClientSecretName: "ACME_CLIENT_SECRET", Issuer: "https://auth.acme.example"}
	if err := st.SetOAuthClient(ctx, "acme__notes", oc); err != nil {
		t.Fatal(err)
	}
	if err := st.SetOAuthClient(ctx, "other__api", OAuthClient{ClientMetadataURL: "https://me.example/berth.json"}); err != nil {
		t.Fatal(err)
	}
	c, err := st.Config()
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := c.OAuthClientFor("acme__notes"); !ok || got != oc {
		t.Fatalf("OAuthClientFor = %+v, %v", got, ok)
	}
	for _, bad := range []struct {
		id string
		oc OAuthClient
	}{
		{"acme", oc},
		{"Acme__notes", oc},
		{"acme__notes", OAuthClient{ClientSecretName: "X"}},
		// A client secret is bound to the authorization server that
		// issued it: no issuer, or one that is not an https issuer, is
		// refused.
		{"acme__notes", OAuthClient{ClientID: "x", ClientSecretName: "X"}},
		{"acme__notes", OAuthClient{ClientID: "x", ClientSecretName: "X", Issuer: "http://auth.acme.example"}},
		{"acme__notes", OAuthClient{ClientID: "x", Issuer: "https://auth.acme.example/?q=1"}},
		{"acme__notes", OAuthClient{ClientID: "x", ClientSecretName: "not a name"}},
		{"acme__notes", OAuthClient{ClientMetadataURL: "http://me.example/berth.json"}},
		{"acme__notes", OAuthClient{ClientMetadataURL: "https://me.example/"}},
		{"acme__notes", OAuthClient{ClientID: " x"}},
	} {
		if err := st.SetOAuthClient(ctx, bad.id, bad.oc); err == nil {
			t.Errorf("SetOAuthClient(%q, %+v) = nil, want a refusal", bad.id, bad.oc)
		}
	}
	gone, err := st.ForgetOAuthClients(ctx, "acme")
	if err != nil || len(gone) != 1 || gone[0] != "acme__notes" {
		t.Fatalf("ForgetOAuthClients = %v, %v", gone, err)
	}
	if c, err = st.Config(); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.OAuthClientFor("acme__notes"); ok {
		t.Error("acme__notes is still configured after ForgetOAuthClients")
	}
	if _, ok := c.OAuthClientFor("other__api"); !ok {
		t.Error("ForgetOAuthClients(acme) dropped other__api")
	}
}

// A hand-edited config.json whose oauthClients berth would not use, or
// that holds a field it does not know (a clientSecret value, say), is
// refused, never used or dropped.
func TestOAuthClientsStrict(t *testing.T) {
	for name, body := range map[string]string{
		"secret value": `{"signers":[],"oauthClients":{"acme__notes":{"clientId":"x","clientSecret":"s3cr3t"}}}`,
		"http cimd":    `{"signers":[],"oauthClients":{"acme__notes":{"clientMetadataUrl":"http://me.example/c.json"}}}`,
		"bad key":      `{"signers":[],"oauthClients":{"acme":{"clientId":"x"}}}`,
		"empty":        `{"signers":[],"oauthClients":{"acme__notes":{}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			paths, err := NewPaths(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(paths.Root, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(paths.Config(), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = Open(paths, nil).Config()
			var fe *FileError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), "oauthClients") {
				t.Fatalf("Config() = %v, want a *FileError naming oauthClients", err)
			}
		})
	}
}
