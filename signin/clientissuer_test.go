package signin

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// The operator's client, bound to the authorization server it was
// registered with, is used there (its secret reaches that token
// endpoint) and refused anywhere else, with an error naming both and the
// fix; a client secret with no issuer is refused too.
func TestOperatorClientBoundToIssuer(t *testing.T) {
	h := newHostileAS(t)
	tg := Target{Plugin: "acme", Server: "srv", Resource: h.rs.URL + "/mcp"}
	const secret = "operator-secret-0123456789"
	sent := func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		n := 0
		for _, s := range h.secrets {
			if s == secret {
				n++
			}
		}
		return n
	}
	for _, c := range []struct {
		issuer string
		want   string
	}{
		{"https://auth.example", "is for the authorization server https://auth.example, but the server names " + h.as.URL},
		{"", "has a client secret but names no authorization server"},
	} {
		o := Options{Secrets: newSecrets(t), Client: &Client{ClientID: "app", ClientSecret: secret, Issuer: c.issuer}, Ask: follow}
		_, err := Login(context.Background(), tg, o)
		var ce *ClientIssuerError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--forget-client") {
			t.Errorf("issuer %q: Login = %v, want a ClientIssuerError saying %q and the fix", c.issuer, err, c.want)
		}
		if n := sent(); n > 0 {
			t.Fatalf("issuer %q: the client secret reached %s %d time(s)", c.issuer, h.as.URL, n)
		}
	}
	sec := newSecrets(t)
	o := Options{Secrets: sec, Client: &Client{ClientID: "app", ClientSecret: secret, Issuer: h.as.URL}, Ask: follow}
	if _, err := Login(context.Background(), tg, o); err != nil {
		t.Fatalf("Login with the client bound to %s: %v", h.as.URL, err)
	}
	if sent() == 0 {
		t.Error("the client secret did not reach the authorization server the client is registered with")
	}
	// The sign-in does not apply once the registration names another
	// authorization server.
	st, err := LookupWith(sec, tg, &Client{ClientID: "app", Issuer: "https://auth.example"})
	if err != nil || st.SignedIn {
		t.Errorf("LookupWith another issuer = %+v, %v; want not signed in", st, err)
	}
}
