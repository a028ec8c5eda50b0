package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/signin"
)

// berth logout's sentence names exactly the tokens the server confirmed
// revoked, and for each other one why and until when it stays valid.
func TestLogoutText(t *testing.T) {
	now := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	exp := now.Add(4*time.Minute + 12*time.Second)
	rt := signin.TokenRevocation{Kind: "refresh token", Revoked: true}
	at := signin.TokenRevocation{Kind: "access token", ExpiresAt: exp, Why: "the revocation endpoint answered 400 unsupported_token_type: it cannot revoke this kind of token"}
	for _, c := range []struct {
		name      string
		r         signin.LogoutResult
		want, not []string
	}{
		{"jwt access token", signin.LogoutResult{SignedIn: true, Issuer: "https://auth.example", RevocationEndpoint: true, Tokens: []signin.TokenRevocation{rt, at}},
			[]string{"confirmed it revoked the refresh token.", "It did not revoke the access token (the revocation endpoint answered 400 unsupported_token_type", "stays valid at https://mcp.example/mcp until it expires at 2026-12-02 14:04:12 UTC (in 4m12s)."},
			[]string{"the access token.", "their revocation"}},
		{"both revoked", signin.LogoutResult{SignedIn: true, Issuer: "https://auth.example", RevocationEndpoint: true, Tokens: []signin.TokenRevocation{rt, {Kind: "access token", Revoked: true, ExpiresAt: exp}}},
			[]string{"confirmed it revoked the refresh token and the access token."}, []string{"stays valid"}},
		{"no endpoint", signin.LogoutResult{SignedIn: true, Issuer: "https://auth.example", Tokens: []signin.TokenRevocation{{Kind: "refresh token"}, {Kind: "access token", ExpiresAt: exp}}},
			[]string{"names no revocation endpoint (RFC 7009), so it revoked none of them.", "The refresh token stays valid at the authorization server", "The access token stays valid at https://mcp.example/mcp until it expires at 2026-12-02 14:04:12 UTC"}, []string{"confirmed"}},
		{"not signed in", signin.LogoutResult{}, []string{"acme__api: not signed in"}, []string{"Signed out", "revoked"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := logoutText("acme__api", "https://mcp.example/mcp", &c.r, now)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("%s\nwant %q", got, w)
				}
			}
			for _, n := range c.not {
				if strings.Contains(got, n) {
					t.Errorf("%s\nmust not say %q", got, n)
				}
			}
		})
	}
}
