package signin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/secrets"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// The revocation endpoint gets both tokens and the client secret: it is
// held to the authorization server's origin (its issuer's or its token
// endpoint's).
func TestRevocationEndpointHeldToAuthorizationServer(t *testing.T) {
	rules, err := rulesFor("http://127.0.0.1:8000/mcp")
	if err != nil {
		t.Fatal(err)
	}
	r := &record{Issuer: "http://127.0.0.1:9000", TokenURL: "http://127.0.0.1:9001/token"}
	for u, ok := range map[string]bool{
		"http://127.0.0.1:9000/revoke":    true,
		"http://127.0.0.1:9001/revoke":    true,
		"http://127.0.0.1:9002/revoke":    false,
		"http://localhost:9000/revoke":    false,
		"https://evil.example/revoke":     false,
		"http://evil.example:9000/revoke": false,
	} {
		r.RevokeURL = u
		if err := checkRevokeURL(rules, r); (err == nil) != ok {
			t.Errorf("checkRevokeURL(%s) = %v, want allowed %v", u, err, ok)
		}
	}
	var posted atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { posted.Add(1) }))
	defer other.Close()
	r.RevokeURL, r.AccessToken, r.ClientSecret = other.URL+"/revoke", "at", "s"
	r.Resource = "http://127.0.0.1:8000/mcp"
	if res := revoke(context.Background(), r); res.Problem == "" || res.Revoked() {
		t.Errorf("revoke at another origin = %+v; want refused", res)
	}
	if n := posted.Load(); n != 0 {
		t.Errorf("%d request(s) reached a revocation endpoint off the authorization server", n)
	}
}

// The authorization server's error at the redirect reaches messages
// without C1 controls, bidi overrides or other characters a terminal or a
// reader would not show as themselves.
func TestRedirectErrorTextEscaped(t *testing.T) {
	e := &AuthorizationError{Code: clip("access_denied"), Description: clip("no\u009b2J\u202eexe.txt\x1b[31m" + strings.Repeat("x", 500))}
	msg := e.Error()
	if strings.ContainsFunc(msg, func(r rune) bool { return unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) }) {
		t.Errorf("the error carries control/format characters: %q", msg)
	}
	if len(msg) > 400 {
		t.Errorf("the error is %d bytes long", len(msg))
	}
}

// A stored sign-in berth cannot read (a newer berth's, or damaged) is an
// error that names the fix: berth login replaces it, berth logout
// forgets it (and both do).
func TestUnreadableRecordNamesFix(t *testing.T) {
	sec := newSecrets(t)
	tg := Target{Plugin: "acme", Server: "srv", Resource: "https://mcp.example/mcp"}
	ts := tokenStore(sec)
	if _, err := ts.Set(context.Background(), recordName("acme", "srv"), `{"v":2}`, secrets.File, secrets.Binding{Plugin: "acme"}); err != nil {
		t.Fatal(err)
	}
	_, err := Lookup(sec, tg)
	if err == nil || !strings.Contains(err.Error(), "berth login acme__srv") || !strings.Contains(err.Error(), "berth logout acme__srv") {
		t.Fatalf("Lookup of an unreadable sign-in = %v, want an error naming berth login and berth logout", err)
	}
	if _, err := Logout(context.Background(), tg, Options{Secrets: sec}); err != nil {
		t.Fatalf("Logout: %v", err)
	}
	if st, err := Lookup(sec, tg); err != nil || st.SignedIn {
		t.Errorf("after logout: %+v, %v", st, err)
	}
}

// A step-up a human was asked for (here declined) is not asked for again
// at the next request within a minute; the request fails with the
// server's refusal instead.
func TestStepUpNotAskedAgainAtOnce(t *testing.T) {
	h := newHostileAS(t)
	h.rs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="write"`)
		w.WriteHeader(http.StatusForbidden)
	})
	tg := Target{Plugin: "acme", Server: "srv", Resource: h.rs.URL + "/mcp", OAuth: bundle.OAuth{Scopes: []string{"read"}, ClientID: "public-client"}}
	hd, err := NewHandler(tg, Options{Secrets: newSecrets(t)})
	if err != nil {
		t.Fatal(err)
	}
	var asks atomic.Int32
	ask := func(context.Context, Prompt) error { asks.Add(1); return errors.New("declined") }
	var errs []error
	for i := 0; i < 3; i++ {
		ctx := WithAsk(context.Background(), ask)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, tg.Resource, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		errs = append(errs, hd.Authorize(ctx, req, resp))
	}
	if n := asks.Load(); n != 1 {
		t.Errorf("the human was asked %d times for the same step-up in 3 requests, want 1", n)
	}
	var fe *ForbiddenError
	if !errors.As(errs[2], &fe) || !strings.Contains(errs[2].Error(), `"write"`) {
		t.Errorf("the third request: %v, want a ForbiddenError naming the scope", errs[2])
	}
}

// A server that pins no issuer and now names another authorization server
// than the one berth signed in to: its refusal of the old token says so
// (not a bare "sign in again"), and the sign-in page's prompt names the
// authorization server signed in to before.
func TestIssuerMoveAnnounced(t *testing.T) {
	h1, h2 := newHostileAS(t), newHostileAS(t)
	tg := Target{Plugin: "acme", Server: "srv", Resource: h1.rs.URL + "/mcp", OAuth: bundle.OAuth{ClientID: "public-client"}}
	sec := newSecrets(t)
	if _, err := Login(context.Background(), tg, Options{Secrets: sec, Ask: follow}); err != nil {
		t.Fatal(err)
	}
	h1.rs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			json.NewEncoder(w).Encode(map[string]any{"resource": h1.rs.URL + "/mcp", "authorization_servers": []string{h2.as.URL}})
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", resource_metadata="`+h1.rs.URL+`/.well-known/oauth-protected-resource/mcp"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	hd, err := NewHandler(tg, Options{Secrets: sec})
	if err != nil {
		t.Fatal(err)
	}
	send := func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, tg.Resource, nil)
		req.Header.Set("Authorization", "Bearer at")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return hd.Authorize(ctx, req, resp)
	}
	err = send(context.Background())
	var ne *NeedSignInError
	if !errors.As(err, &ne) || !strings.Contains(err.Error(), "now names the authorization server "+h2.as.URL+", not "+h1.as.URL) {
		t.Errorf("without a human: %v, want a NeedSignInError naming the move from %s to %s", err, h1.as.URL, h2.as.URL)
	}
	var shown Prompt
	ask := func(ctx context.Context, p Prompt) error { shown = p; return follow(ctx, p) }
	if err := send(WithAsk(context.Background(), ask)); err != nil {
		t.Fatalf("with a human: %v", err)
	}
	if shown.Issuer != h2.as.URL || shown.PreviousIssuer != h1.as.URL {
		t.Errorf("the prompt names %q, before %q; want %s, before %s", shown.Issuer, shown.PreviousIssuer, h2.as.URL, h1.as.URL)
	}
	if st, _ := Lookup(sec, tg); st.Issuer != h2.as.URL {
		t.Errorf("signed in at %q after the move, want %s", st.Issuer, h2.as.URL)
	}
}

// Review of issue 21: go-sdk's registration errors quote the server's
// answer whole; a client secret in it never reaches berth's error.
func TestExplainDropsQuotedAnswer(t *testing.T) {
	secret := "cs_" + strings.Repeat("Zq9", 12)
	asm := &oauthex.AuthServerMeta{Issuer: "https://as.example"}
	tg := Target{Plugin: "p", Server: "s", Resource: "https://mcp.example/mcp"}
	for _, err := range []error{
		fmt.Errorf("failed to register client: failed to decode successful registration response: invalid character (%s)", `{"client_id":"x","client_secret":"`+secret+`"`),
		fmt.Errorf("failed to register client: registration failed: client_secret=%s", secret),
	} {
		msg := explain(tg, asm, err).Error()
		if strings.Contains(msg, secret) || strings.Contains(msg, secret[:24]) {
			t.Errorf("the error carries the secret: %q", msg)
		}
		if !strings.Contains(msg, "failed to register client") || !strings.Contains(msg, "https://as.example") {
			t.Errorf("the error lost its sense: %q", msg)
		}
	}
}

// A step-up's error names the login that fixes it: with --scope.
func TestStepUpErrorNamesScopes(t *testing.T) {
	e := &NeedSignInError{Target: Target{Plugin: "p", Server: "s", Resource: "https://mcp.example/mcp"}, Reason: "it needs more scopes", StepUp: true, Scopes: []string{"admin", "write"}}
	if msg := e.Error(); !strings.Contains(msg, "run `berth login p__s --scope admin --scope write`") {
		t.Errorf("step-up error: %q", msg)
	}
}

// berth login --scope adds its scopes to the manifest's, not to every
// scope the server advertises: the review said "asking for scopes read".
func TestLoginScopeAddsToManifestScopes(t *testing.T) {
	f := newFakeAS(t)
	f.prmScopes = []string{"read", "write", "admin"}
	s := newSecrets(t)
	tg := f.target("acme")
	tg.OAuth.Scopes = []string{"read"}
	if _, err := Login(context.Background(), tg, Options{Secrets: s, Ask: follow}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(f.lastAuth.Get("scope")); slices.Contains(got, "write") || slices.Contains(got, "admin") {
		t.Fatalf("the first sign-in asked for %q, beyond the manifest's read", got)
	}
	if _, err := Login(context.Background(), tg, Options{Secrets: s, Ask: follow}, "admin"); err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(f.lastAuth.Get("scope"))
	if !slices.Contains(got, "read") || !slices.Contains(got, "admin") || slices.Contains(got, "write") {
		t.Errorf("berth login --scope admin asked for %q; want read and admin, never write", got)
	}
}
