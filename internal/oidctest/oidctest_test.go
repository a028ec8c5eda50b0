//go:build unix

package oidctest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/berth-mcp/berth/internal/oidctest"
)

// TestProvider checks the harness itself with a plain OAuth client (no
// berth): registration, PKCE, consent over HTTP, a tool call with the token,
// the token refused at the other resource, expiry and a rotated refresh.
// If this fails, the sign-in tests that use the harness say nothing.
func TestProvider(t *testing.T) {
	srv := oidctest.Start(t, oidctest.Config{AccessTokenTTL: 2, Resources: []oidctest.Resource{{Name: "a"}, {Name: "b"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The resource answers 401 with its metadata, which names the provider.
	resp, err := http.Post(srv.Resources["a"], "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Fatalf("unauthenticated POST: %s, WWW-Authenticate %q; want 401 with resource_metadata", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	getJSON(t, strings.Replace(srv.Resources["a"], "/mcp", "/.well-known/oauth-protected-resource/mcp", 1), &prm)
	if prm.Resource != srv.Resources["a"] || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != srv.Issuer {
		t.Fatalf("protected-resource metadata %+v; want resource %s at %s", prm, srv.Resources["a"], srv.Issuer)
	}
	var asm struct {
		Issuer        string   `json:"issuer"`
		Authorization string   `json:"authorization_endpoint"`
		Token         string   `json:"token_endpoint"`
		Registration  string   `json:"registration_endpoint"`
		Scopes        []string `json:"scopes_supported"`
		ISS           bool     `json:"authorization_response_iss_parameter_supported"`
	}
	getJSON(t, srv.Issuer+"/.well-known/openid-configuration", &asm)
	if asm.Registration == "" || !asm.ISS {
		t.Fatalf("provider metadata %+v: want a registration endpoint and the iss parameter", asm)
	}

	// A loopback listener, as a native client has.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	redirect := fmt.Sprintf("http://%s/callback", ln.Addr())
	got := make(chan url.Values, 1)
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Query()
		fmt.Fprintln(w, "signed in")
	}))

	var reg struct {
		ClientID string `json:"client_id"`
	}
	postJSON(t, asm.Registration, map[string]any{
		"redirect_uris":              []string{redirect},
		"application_type":           "native",
		"token_endpoint_auth_method": "none",
		"grant_types":                []string{"authorization_code", "refresh_token"},
	}, &reg)
	conf := &oauth2.Config{
		ClientID:    reg.ClientID,
		Endpoint:    oauth2.Endpoint{AuthURL: asm.Authorization, TokenURL: asm.Token, AuthStyle: oauth2.AuthStyleInParams},
		RedirectURL: redirect,
		Scopes:      []string{"mcp:tools", "offline_access"},
	}
	verifier := oauth2.GenerateVerifier()
	resource := oauth2.SetAuthURLParam("resource", srv.Resources["a"])

	// PKCE is required: an authorization request without it is refused.
	if _, err := oidctest.Consent(ctx, srv.Issuer, conf.AuthCodeURL("s0", resource), "alice"); err == nil || !strings.Contains(err.Error(), "requires PKCE") {
		t.Fatalf("a request without PKCE: %v; want it refused: PKCE is required", err)
	}
	<-got

	if _, err := oidctest.Consent(ctx, srv.Issuer, conf.AuthCodeURL("s1", resource, oauth2.S256ChallengeOption(verifier)), "alice"); err != nil {
		t.Fatal(err)
	}
	q := <-got
	if q.Get("state") != "s1" || q.Get("iss") != srv.Issuer || q.Get("code") == "" {
		t.Fatalf("the loopback redirect carried %v; want state s1, iss %s and a code", q, srv.Issuer)
	}
	tok, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier), resource)
	if err != nil {
		t.Fatal(err)
	}
	if tok.RefreshToken == "" {
		t.Fatal("no refresh token for offline_access")
	}

	if out := whoami(ctx, t, srv.Resources["a"], tok.AccessToken); !strings.Contains(out, `"sub":"alice"`) {
		t.Fatalf("whoami at a: %s", out)
	}
	// The token for a is refused by b (its audience is a).
	if out := whoami(ctx, t, srv.Resources["b"], tok.AccessToken); !strings.Contains(out, "Unauthorized") {
		t.Fatalf("a's token at b: %s; want 401", out)
	}

	// It expires; the refresh token gets a new one and is rotated.
	time.Sleep(3 * time.Second)
	if out := whoami(ctx, t, srv.Resources["a"], tok.AccessToken); !strings.Contains(out, "Unauthorized") {
		t.Fatalf("an expired token at a: %s; want 401", out)
	}
	tok2, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatal(err)
	}
	if tok2.RefreshToken == "" || tok2.RefreshToken == tok.RefreshToken {
		t.Fatal("the refresh token was not rotated")
	}
	if out := whoami(ctx, t, srv.Resources["a"], tok2.AccessToken); !strings.Contains(out, `"sub":"alice"`) {
		t.Fatalf("whoami after refresh: %s", out)
	}
	if _, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); err == nil {
		t.Fatal("the rotated-out refresh token still works")
	}
	if n := srv.Count(oidctest.IsToken("refresh_token")); n != 1 {
		t.Fatalf("%d successful refresh grants observed; want 1", n)
	}
	access, refresh := srv.Tokens(t)
	if len(access) != 2 || len(refresh) != 2 {
		t.Fatalf("issued tokens recorded: %d access, %d refresh; want 2 and 2", len(access), len(refresh))
	}
}

// whoami calls the tool with the bearer token; it returns the tool's text or
// the error.
func whoami(ctx context.Context, t *testing.T, endpoint, token string) string {
	t.Helper()
	hc := &http.Client{Transport: bearer{token}}
	c := mcp.NewClient(&mcp.Implementation{Name: "oidctest", Version: "0"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return err.Error()
	}
	defer s.Close()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		return err.Error()
	}
	return res.Content[0].(*mcp.TextContent).Text
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func postJSON(t *testing.T, u string, body, v any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(u, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}
