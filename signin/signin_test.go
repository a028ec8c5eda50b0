package signin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zalando/go-keyring"
	"golang.org/x/oauth2"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/secrets"
)

func TestMain(m *testing.M) {
	// No keychain in the tests: the store falls back to its file.
	keyring.MockInitWithError(errors.New("no keychain in tests"))
	os.Exit(m.Run())
}

// fakeAS is an authorization server and a protected MCP resource, both on
// 127.0.0.1 (two origins).
type fakeAS struct {
	t          *testing.T
	as, rs     *httptest.Server
	mu         sync.Mutex
	cimd       bool
	dcr        bool
	issuer     string // "" means the AS's own URL
	prmRes     string // "" means the resource's URL
	ttl        int
	codes      map[string]string // code → client
	access     map[string]string // access token → resource
	refresh    map[string]bool   // live refresh tokens
	n          int
	authReqs   atomic.Int32
	regs       atomic.Int32
	refreshN   atomic.Int32
	revoked    atomic.Int32
	lastAuth   url.Values
	tokenDelay time.Duration
	deny       bool
	noIssuer   bool     // the metadata names no issuer
	issParam   bool     // the metadata advertises iss (RFC 9207), the answer carries none
	jwtAccess  bool     // access tokens cannot be revoked (400 unsupported_token_type)
	swapReg    bool     // the second metadata fetch names another registration endpoint
	prmScopes  []string // the PRM's scopes_supported; nil means read
	prmHits    atomic.Int32
	asmHits    atomic.Int32
}

func newFakeAS(t *testing.T) *fakeAS {
	f := &fakeAS{t: t, dcr: true, ttl: 3600, codes: map[string]string{}, access: map[string]string{}, refresh: map[string]bool{}}
	f.as = httptest.NewServer(http.HandlerFunc(f.serveAS))
	f.rs = httptest.NewServer(http.HandlerFunc(f.serveRS))
	t.Cleanup(func() { f.as.Close(); f.rs.Close() })
	return f
}

func (f *fakeAS) resource() string { return f.rs.URL + "/mcp" }

func (f *fakeAS) serveRS(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/.well-known/oauth-protected-resource/mcp":
		f.prmHits.Add(1)
		res := f.prmRes
		if res == "" {
			res = f.resource()
		}
		scopes := f.prmScopes
		if scopes == nil {
			scopes = []string{"read"}
		}
		json.NewEncoder(w).Encode(map[string]any{"resource": res, "authorization_servers": []string{f.as.URL}, "scopes_supported": scopes})
	case "/mcp":
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		f.mu.Lock()
		res, ok := f.access[tok]
		f.mu.Unlock()
		if !ok || res != f.resource() {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="invalid_token", resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, f.rs.URL))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Write([]byte("ok"))
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeAS) serveAS(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		f.asmHits.Add(1)
		iss := f.issuer
		if iss == "" && !f.noIssuer {
			iss = f.as.URL
		}
		m := map[string]any{
			"issuer": iss, "authorization_endpoint": f.as.URL + "/authorize", "token_endpoint": f.as.URL + "/token",
			"revocation_endpoint": f.as.URL + "/revoke", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}, "scopes_supported": []string{"read", "offline_access"},
			"client_id_metadata_document_supported": f.cimd, "token_endpoint_auth_methods_supported": []string{"none", "client_secret_post"},
		}
		if f.issParam {
			m["authorization_response_iss_parameter_supported"] = true
		}
		if f.dcr {
			m["registration_endpoint"] = f.as.URL + "/register"
			if f.swapReg && f.asmHits.Load() > 1 {
				m["registration_endpoint"] = f.as.URL + "/register-elsewhere"
			}
		}
		json.NewEncoder(w).Encode(m)
	case "/register":
		f.regs.Add(1)
		var md map[string]any
		json.NewDecoder(r.Body).Decode(&md)
		md["client_id"] = "dcr-client"
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(md)
	case "/authorize":
		f.authReqs.Add(1)
		q := r.URL.Query()
		f.mu.Lock()
		f.lastAuth = q
		f.n++
		code := fmt.Sprintf("code-%d", f.n)
		f.codes[code] = q.Get("client_id")
		f.mu.Unlock()
		if q.Get("code_challenge_method") != "S256" || q.Get("resource") != f.resource() {
			f.t.Errorf("authorization request without PKCE S256 or resource: %v", q)
		}
		if f.deny {
			http.Redirect(w, r, q.Get("redirect_uri")+"?error=access_denied&error_description=the+user+said+no&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
			return
		}
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	case "/token":
		if f.tokenDelay > 0 {
			time.Sleep(f.tokenDelay)
		}
		r.ParseForm()
		f.mu.Lock()
		defer f.mu.Unlock()
		switch r.Form.Get("grant_type") {
		case "authorization_code":
			if _, ok := f.codes[r.Form.Get("code")]; !ok {
				w.WriteHeader(400)
				json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant"})
				return
			}
			delete(f.codes, r.Form.Get("code"))
		case "refresh_token":
			f.refreshN.Add(1)
			if !f.refresh[r.Form.Get("refresh_token")] || r.Form.Get("resource") != f.resource() {
				w.WriteHeader(400)
				json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant"})
				return
			}
			delete(f.refresh, r.Form.Get("refresh_token")) // rotated: one use
		}
		f.n++
		at, rt := fmt.Sprintf("at-%d", f.n), fmt.Sprintf("rt-%d", f.n)
		f.access[at] = f.resource()
		f.refresh[rt] = true
		json.NewEncoder(w).Encode(map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": f.ttl, "refresh_token": rt, "scope": "read offline_access"})
	case "/revoke":
		r.ParseForm()
		if f.jwtAccess && r.Form.Get("token_type_hint") == "access_token" {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"error": "unsupported_token_type", "error_description": "token " + r.Form.Get("token") + " is a JWT"})
			return
		}
		f.revoked.Add(1)
		f.mu.Lock()
		delete(f.refresh, r.Form.Get("token"))
		delete(f.access, r.Form.Get("token"))
		f.mu.Unlock()
	default:
		http.NotFound(w, r)
	}
}

// follow is an asker that plays the browser: it opens the authorization
// URL and follows the authorization server's redirect to berth's loopback
// listener.
func follow(ctx context.Context, p Prompt) error {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(p.URL)
	if err != nil {
		return err
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if loc == "" {
		return fmt.Errorf("no redirect from %s", p.URL)
	}
	resp, err = c.Get(loc)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

func newSecrets(t *testing.T) *secrets.Store {
	return secrets.Open(filepath.Join(t.TempDir(), "secrets"), nil)
}

func (f *fakeAS) target(plugin string) Target {
	return Target{Plugin: plugin, Server: "srv", Resource: f.resource(), OAuth: bundle.OAuth{}}
}

// call makes a request to the resource through h as go-sdk's transport does.
func call(t *testing.T, h *Handler, resource string) (int, error) {
	t.Helper()
	ctx := context.Background()
	for attempt := 0; ; attempt++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, resource, nil)
		ts, err := h.TokenSource(ctx)
		if err != nil {
			return 0, err
		}
		if ts != nil {
			if tok, err := ts.Token(); err == nil {
				tok.SetAuthHeader(req)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		if resp.StatusCode == http.StatusUnauthorized && attempt == 0 {
			if err := h.Authorize(ctx, req, resp); err != nil {
				return resp.StatusCode, err
			}
			continue
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
}

func TestLoginDynamicRegistrationAndCall(t *testing.T) {
	f := newFakeAS(t)
	s := newSecrets(t)
	tg := f.target("acme")
	st, err := Login(context.Background(), tg, Options{Secrets: s, Ask: follow})
	if err != nil {
		t.Fatal(err)
	}
	if !st.SignedIn || st.ClientID != "dcr-client" || st.Issuer != f.as.URL || !st.Refreshable {
		t.Fatalf("state %+v", st)
	}
	// berth checks the metadata before go-sdk's handler fetches it again
	// (docs/signin.md): two fetches of each per sign-in, no more.
	if f.prmHits.Load() != 2 || f.asmHits.Load() != 2 {
		t.Errorf("metadata fetched %d (resource) and %d (authorization server) times for one sign-in, want 2 and 2", f.prmHits.Load(), f.asmHits.Load())
	}
	// (go-sdk's scope union does not keep an order.)
	if got := strings.Fields(f.lastAuth.Get("scope")); len(got) != 2 || !slices.Contains(got, "read") || !slices.Contains(got, "offline_access") {
		t.Errorf("asked for scopes %q, want read and offline_access", got)
	}
	h, _ := NewHandler(tg, Options{Secrets: s})
	if code, err := call(t, h, f.resource()); err != nil || code != 200 {
		t.Fatalf("call = %d, %v", code, err)
	}
	// Never in the main store: no fromEnv name reaches it.
	if list, _ := s.List(); len(list) != 0 {
		t.Errorf("the sign-in is in the main secret store: %+v", list)
	}
	// A second login reuses the registered client.
	if _, err := Login(context.Background(), tg, Options{Secrets: s, Ask: follow}); err != nil {
		t.Fatal(err)
	}
	if f.regs.Load() != 1 {
		t.Errorf("registered %d times, want once", f.regs.Load())
	}
}

func TestRegistrationOrder(t *testing.T) {
	for _, tc := range []struct {
		name     string
		manifest string
		client   *Client
		cimd     bool
		want     string
		regs     int32
	}{
		{"manifest client ID first", "manifest-id", &Client{ClientID: "op-id", MetadataDocumentURL: "https://op.example/client.json"}, true, "manifest-id", 0},
		{"operator client ID before a metadata document", "", &Client{ClientID: "op-id", MetadataDocumentURL: "https://op.example/client.json"}, true, "op-id", 0},
		{"metadata document when advertised", "", &Client{MetadataDocumentURL: "https://op.example/client.json"}, true, "https://op.example/client.json", 0},
		{"no metadata document when not advertised", "", &Client{MetadataDocumentURL: "https://op.example/client.json"}, false, "dcr-client", 1},
		{"dynamic registration last", "", nil, true, "dcr-client", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAS(t)
			f.cimd = tc.cimd
			tg := f.target("acme")
			tg.OAuth.ClientID = tc.manifest
			st, err := Login(context.Background(), tg, Options{Secrets: newSecrets(t), Client: tc.client, Ask: follow})
			if err != nil {
				t.Fatal(err)
			}
			if f.lastAuth.Get("client_id") != tc.want || st.ClientID != tc.want || f.regs.Load() != tc.regs {
				t.Fatalf("client_id %q (stored %q), %d registrations; want %q, %d", f.lastAuth.Get("client_id"), st.ClientID, f.regs.Load(), tc.want, tc.regs)
			}
		})
	}
}

func TestIssuerPinMismatch(t *testing.T) {
	f := newFakeAS(t)
	tg := f.target("acme")
	tg.OAuth.Issuer = "https://login.example.com"
	_, err := Login(context.Background(), tg, Options{Secrets: newSecrets(t), Ask: follow})
	var ie *IssuerMismatchError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "pins") {
		t.Fatalf("err = %v, want an issuer mismatch", err)
	}
	if f.authReqs.Load() != 0 {
		t.Fatal("an authorization request was made before the pin was checked")
	}
}

func TestMetadataIssuerMismatch(t *testing.T) {
	f := newFakeAS(t)
	f.issuer = "http://127.0.0.1:1/other"
	_, err := Login(context.Background(), f.target("acme"), Options{Secrets: newSecrets(t), Ask: follow})
	if err == nil || f.authReqs.Load() != 0 {
		t.Fatalf("err = %v, %d authorization requests; want a refusal before any", err, f.authReqs.Load())
	}
}

func TestAuthServerElsewhereOverHTTPRefused(t *testing.T) {
	rules := netRules{loopback: true}
	if _, err := rules.checkURL("the authorization server", "http://auth.example.com"); err == nil {
		t.Fatal("plain http to another, non-loopback host was allowed")
	}
	if _, err := (netRules{}).checkURL("the authorization server", "http://127.0.0.1:9"); err == nil {
		t.Fatal("plain http to loopback was allowed for a non-loopback resource")
	}
	if _, err := rules.checkURL("the authorization server", "http://127.0.0.1:9"); err != nil {
		t.Fatalf("loopback AS for a loopback resource: %v", err)
	}
	// And end to end: the PRM names an http AS on another host.
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"resource": "http://" + r.Host + "/mcp", "authorization_servers": []string{"http://auth.example.com"}})
			return
		}
		w.WriteHeader(401)
	}))
	defer rs.Close()
	_, err := Login(context.Background(), Target{Plugin: "acme", Server: "srv", Resource: rs.URL + "/mcp"}, Options{Secrets: newSecrets(t), Ask: follow})
	if err == nil || !strings.Contains(err.Error(), "plain http") {
		t.Fatalf("err = %v", err)
	}
}

func TestResourceMismatch(t *testing.T) {
	f := newFakeAS(t)
	f.prmRes = "https://evil.example/mcp"
	_, err := Login(context.Background(), f.target("acme"), Options{Secrets: newSecrets(t), Ask: follow})
	var re *ResourceMismatchError
	if !errors.As(err, &re) || f.authReqs.Load() != 0 {
		t.Fatalf("err = %v (%d authorization requests), want a resource mismatch before any", err, f.authReqs.Load())
	}
}

func TestRefreshPersisted(t *testing.T) {
	f := newFakeAS(t)
	f.ttl = 2 // refreshed in its last half second
	s := newSecrets(t)
	tg := f.target("acme")
	if _, err := Login(context.Background(), tg, Options{Secrets: s, Ask: follow}); err != nil {
		t.Fatal(err)
	}
	before, _ := readRecord(context.Background(), s, tg)
	h, _ := NewHandler(tg, Options{Secrets: s})
	if code, err := call(t, h, f.resource()); err != nil || code != 200 || f.refreshN.Load() != 0 {
		t.Fatalf("call with a fresh token = %d, %v (%d refreshes)", code, err, f.refreshN.Load())
	}
	time.Sleep(1600 * time.Millisecond)
	if code, err := call(t, h, f.resource()); err != nil || code != 200 {
		t.Fatalf("call = %d, %v", code, err)
	}
	after, _ := readRecord(context.Background(), s, tg)
	if f.refreshN.Load() == 0 || after.RefreshToken == before.RefreshToken || after.AccessToken == before.AccessToken {
		t.Fatalf("no refresh persisted: %d refreshes, %q → %q", f.refreshN.Load(), before.RefreshToken, after.RefreshToken)
	}
	// A new handler (another process) uses the rotated refresh token.
	h2, _ := NewHandler(tg, Options{Secrets: s})
	if code, err := call(t, h2, f.resource()); err != nil || code != 200 {
		t.Fatalf("second call = %d, %v", code, err)
	}
}

func TestRefreshOn401(t *testing.T) {
	f := newFakeAS(t)
	s := newSecrets(t)
	tg := f.target("acme")
	if _, err := Login(context.Background(), tg, Options{Secrets: s, Ask: follow}); err != nil {
		t.Fatal(err)
	}
	// The server forgets the access token (invalid_token) before expiry.
	f.mu.Lock()
	f.access = map[string]string{}
	f.mu.Unlock()
	h, _ := NewHandler(tg, Options{Secrets: s})
	if code, err := call(t, h, f.resource()); err != nil || code != 200 || f.refreshN.Load() != 1 {
		t.Fatalf("call = %d, %v after %d refreshes", code, err, f.refreshN.Load())
	}
}

func TestConcurrentRefreshTwoStores(t *testing.T) {
	f := newFakeAS(t)
	f.ttl = 1
	f.tokenDelay = 50 * time.Millisecond
	dir := filepath.Join(t.TempDir(), "secrets")
	tg := f.target("acme")
	if _, err := Login(context.Background(), tg, Options{Secrets: secrets.Open(dir, nil), Ask: follow}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(900 * time.Millisecond) // every process must refresh now
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, _ := NewHandler(tg, Options{Secrets: secrets.Open(dir, nil)})
			ts, _ := h.TokenSource(context.Background())
			if ts == nil {
				errs <- errors.New("no token source")
				return
			}
			if _, err := ts.Token(); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if f.refreshN.Load() == 0 {
		t.Fatal("no process refreshed")
	}
	rec, _ := readRecord(context.Background(), secrets.Open(dir, nil), tg)
	f.mu.Lock()
	live := f.refresh[rec.RefreshToken]
	f.mu.Unlock()
	if rec == nil || !live {
		t.Fatalf("the stored refresh token is not the live one: the token was lost (%+v)", rec)
	}
}

func TestNeverAnotherPluginsSignIn(t *testing.T) {
	f := newFakeAS(t)
	s := newSecrets(t)
	if _, err := Login(context.Background(), f.target("acme"), Options{Secrets: s, Ask: follow}); err != nil {
		t.Fatal(err)
	}
	h, _ := NewHandler(f.target("other"), Options{Secrets: s})
	if ts, _ := h.TokenSource(context.Background()); ts != nil {
		t.Fatal("another plugin got a token source")
	}
	_, err := call(t, h, f.resource())
	var ne *NeedSignInError
	if !errors.As(err, &ne) || !strings.Contains(err.Error(), "berth login other__srv") {
		t.Fatalf("err = %v, want a NeedSignInError naming berth login other__srv", err)
	}
	// A stored sign-in for another resource is not used either.
	tg := f.target("acme")
	tg.Resource = f.rs.URL + "/other"
	if st, _ := Lookup(s, tg); st.SignedIn {
		t.Fatal("a sign-in for another resource counts")
	}
	h3, _ := NewHandler(tg, Options{Secrets: s})
	if ts, _ := h3.TokenSource(context.Background()); ts != nil {
		t.Fatal("a token for another resource was offered")
	}
}

func TestLogoutRevokes(t *testing.T) {
	f := newFakeAS(t)
	s := newSecrets(t)
	tg := f.target("acme")
	if _, err := Login(context.Background(), tg, Options{Secrets: s, Ask: follow}); err != nil {
		t.Fatal(err)
	}
	revoked, err := Logout(context.Background(), tg, Options{Secrets: s})
	if err != nil || !revoked || f.revoked.Load() == 0 {
		t.Fatalf("Logout = %v, %v (%d revocations)", revoked, err, f.revoked.Load())
	}
	if st, _ := Lookup(s, tg); st.SignedIn {
		t.Fatal("still signed in after logout")
	}
	if _, err := Login(context.Background(), tg, Options{Secrets: s, Ask: follow}); err != nil {
		t.Fatal(err)
	}
	if err := ForgetPlugin(context.Background(), s, "acme"); err != nil {
		t.Fatal(err)
	}
	if st, _ := Lookup(s, tg); st.SignedIn {
		t.Fatal("still signed in after ForgetPlugin")
	}
}

func TestRedirectListener(t *testing.T) {
	get := func(u string) int {
		resp, err := http.Get(u)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	t.Run("state mismatch", func(t *testing.T) {
		ln, err := listenRedirect(0)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.close()
		if !strings.HasPrefix(ln.URL(), "http://127.0.0.1:") || !strings.HasSuffix(ln.URL(), "/callback") {
			t.Fatalf("redirect URI %s", ln.URL())
		}
		ln.expect("good")
		if c := get(ln.URL() + "?code=x&state=bad"); c != 400 {
			t.Fatalf("wrong state answered %d", c)
		}
		if c := get(ln.URL() + "?code=x"); c != 400 {
			t.Fatalf("no state answered %d", c)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := ln.wait(ctx, time.Minute); err == nil {
			t.Fatal("a wrong state was delivered")
		}
	})
	t.Run("one use", func(t *testing.T) {
		ln, _ := listenRedirect(0)
		defer ln.close()
		ln.expect("s")
		if c := get(ln.URL() + "?code=x&state=s"); c != 200 {
			t.Fatalf("first answer %d", c)
		}
		if c := get(ln.URL() + "?code=y&state=s"); c != 410 {
			t.Fatalf("second answer %d, want 410", c)
		}
		cb, err := ln.wait(context.Background(), time.Second)
		if err != nil || cb.code != "x" {
			t.Fatalf("got %+v, %v", cb, err)
		}
		ln.close()
		if c := get(ln.URL() + "?code=z&state=s"); c != 0 {
			t.Fatalf("the listener still answers after close: %d", c)
		}
	})
	t.Run("access denied", func(t *testing.T) {
		ln, _ := listenRedirect(0)
		defer ln.close()
		ln.expect("s")
		get(ln.URL() + "?error=access_denied&error_description=no+thanks&state=s")
		_, err := ln.wait(context.Background(), time.Second)
		var ae *AuthorizationError
		if !errors.As(err, &ae) || ae.Code != "access_denied" || !strings.Contains(err.Error(), "declined") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("declared port", func(t *testing.T) {
		ln, _ := listenRedirect(0)
		port := ln.ln.Addr().(interface{ String() string }).String()
		defer ln.close()
		var p int
		fmt.Sscanf(port[strings.LastIndex(port, ":")+1:], "%d", &p)
		if _, err := listenRedirect(p); err == nil || !strings.Contains(err.Error(), "redirectPort") {
			t.Fatalf("a busy declared port: %v", err)
		}
	})
}

func TestNeedSignInError(t *testing.T) {
	e := &NeedSignInError{Target: Target{Plugin: "acme", Server: "srv", Resource: "https://mcp.example/"}, Reason: "not signed in"}
	if !strings.Contains(e.Error(), "berth login acme__srv") {
		t.Fatal(e.Error())
	}
}

func TestLoginDeclined(t *testing.T) {
	f := newFakeAS(t)
	f.deny = true
	s := newSecrets(t)
	_, err := Login(context.Background(), f.target("acme"), Options{Secrets: s, Ask: follow})
	var ae *AuthorizationError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "acme__srv") || !strings.Contains(err.Error(), "declined") {
		t.Fatalf("err = %v", err)
	}
	if st, _ := Lookup(s, f.target("acme")); st.SignedIn {
		t.Fatal("signed in after a refusal")
	}
	// No asker: a NeedSignInError, no authorization request.
	_, err = Login(context.Background(), f.target("acme"), Options{Secrets: s})
	var ne *NeedSignInError
	if !errors.As(err, &ne) {
		t.Fatalf("without an asker: %v", err)
	}
}

// The redirect listener answers only to its own sign-in: an answer with
// another state is ignored, and the flow still completes with the right one.
func TestLoginIgnoresForeignAnswer(t *testing.T) {
	f := newFakeAS(t)
	s := newSecrets(t)
	ask := func(ctx context.Context, p Prompt) error {
		u, _ := url.Parse(p.URL)
		redirect := u.Query().Get("redirect_uri")
		resp, err := http.Get(redirect + "?code=stolen&state=forged")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("a forged state was answered %d", resp.StatusCode)
		}
		return follow(ctx, p)
	}
	if _, err := Login(context.Background(), f.target("acme"), Options{Secrets: s, Ask: ask}); err != nil {
		t.Fatal(err)
	}
}

// Two processes refused the same token at once: one refreshes, the other
// finds the new token under the lock and uses it (one refresh, not two).
func TestRefreshOn401TwoProcessesOnce(t *testing.T) {
	f := newFakeAS(t)
	f.tokenDelay = 30 * time.Millisecond
	dir := filepath.Join(t.TempDir(), "secrets")
	tg := f.target("acme")
	if _, err := Login(context.Background(), tg, Options{Secrets: secrets.Open(dir, nil), Ask: follow}); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.access = map[string]string{}
	f.mu.Unlock()
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, _ := NewHandler(tg, Options{Secrets: secrets.Open(dir, nil)})
			if code, err := call(t, h, f.resource()); err != nil || code != 200 {
				t.Errorf("call = %d, %v", code, err)
			}
		}()
	}
	wg.Wait()
	if n := f.refreshN.Load(); n != 1 {
		t.Fatalf("%d refreshes, want 1", n)
	}
}

// go-sdk's handler fetches the metadata again; what it registers at and
// exchanges the code at must be what berth checked.
func TestMetadataSwappedBetweenFetches(t *testing.T) {
	f := newFakeAS(t)
	f.swapReg = true
	_, err := Login(context.Background(), f.target("acme"), Options{Secrets: newSecrets(t), Ask: follow})
	if err == nil || !strings.Contains(err.Error(), "register-elsewhere") || f.regs.Load() != 0 || f.authReqs.Load() != 0 {
		t.Fatalf("err = %v (%d registrations, %d authorization requests)", err, f.regs.Load(), f.authReqs.Load())
	}
}

// A sign-in stored in the same second as the one a running handler read
// (the index's stamp has whole seconds) is seen at the next request: by
// another process (a second store on the same directory) or by another
// handler of this one. Once the stamp has settled, a request reads only
// the index, not the value.
func TestHandlerSeesWriteInSameSecond(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "secrets")
	tg := Target{Plugin: "acme", Server: "srv", Resource: "https://mcp.example/mcp"}
	put := func(s *secrets.Store, access string) time.Time {
		t.Helper()
		err := updateRecord(context.Background(), s, tg.Plugin, tg.Server, func(*record) (*record, error) {
			return &record{Plugin: tg.Plugin, Server: tg.Server, Resource: tg.Resource, Issuer: "https://auth.example", ClientID: "c", Registration: regDynamic, TokenURL: "https://auth.example/token", AccessToken: access, RefreshToken: "rt", Expiry: time.Now().Add(time.Hour)}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		e, _, err := tokenStore(s).Lookup(recordName(tg.Plugin, tg.Server))
		if err != nil {
			t.Fatal(err)
		}
		return e.Updated
	}
	token := func(h *Handler) string {
		t.Helper()
		ts, err := h.TokenSource(context.Background())
		if err != nil || ts == nil {
			t.Fatalf("TokenSource = %v, %v", ts, err)
		}
		tok, err := ts.Token()
		if err != nil {
			t.Fatal(err)
		}
		return tok.AccessToken
	}
	for _, other := range []string{"another process", "another handler"} {
		t.Run(other, func(t *testing.T) {
			for attempt := 0; ; attempt++ {
				// Start just after a second begins, so both writes share it.
				time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 20*time.Millisecond)))
				mine := secrets.Open(dir, nil)
				h, _ := NewHandler(tg, Options{Secrets: mine})
				s1 := put(secrets.Open(dir, nil), "at-first-"+other)
				if got := token(h); got != "at-first-"+other {
					t.Fatalf("token = %q, want the stored at-first", got)
				}
				w := secrets.Open(dir, nil)
				if other == "another handler" {
					w = mine
				}
				s2 := put(w, "at-second-"+other)
				if !s1.Equal(s2) {
					if attempt < 3 {
						continue // the second changed between the writes: again
					}
					t.Fatalf("the two writes never fell in one second (%v, %v)", s1, s2)
				}
				if got := token(h); got != "at-second-"+other {
					t.Fatalf("after a sign-in stored in the same second, the handler sends %q, want at-second", got)
				}
				return
			}
		})
	}
	t.Run("settled stamp reads only the index", func(t *testing.T) {
		s := secrets.Open(dir, nil)
		put(s, "at-settled")
		h, _ := NewHandler(tg, Options{Secrets: s})
		time.Sleep(3 * time.Second) // stampSettled and a second
		if got := token(h); got != "at-settled" {
			t.Fatalf("token = %q", got)
		}
		// Replace the value behind the index's back: a handler that reads
		// only the index goes on with what it has.
		vf := tokenStore(s).ValuesFile()
		b, err := os.ReadFile(vf)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(vf, []byte(strings.ReplaceAll(string(b), "at-settled", "at-sneaked")), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := token(h); got != "at-settled" {
			t.Fatalf("with a settled stamp the handler read the value again (got %q)", got)
		}
	})
}

// Logout says which tokens the server confirmed revoked: an access token
// the server cannot revoke (a JWT: 400 unsupported_token_type) is
// reported as not revoked, with its expiry, never as confirmed; the
// token itself appears nowhere in the result.
func TestSignOutPerToken(t *testing.T) {
	f := newFakeAS(t)
	f.jwtAccess = true
	s := newSecrets(t)
	tg := f.target("acme")
	if _, err := Login(context.Background(), tg, Options{Secrets: s, Ask: follow}); err != nil {
		t.Fatal(err)
	}
	rec, _ := readRecord(context.Background(), s, tg)
	res, err := SignOut(context.Background(), tg, Options{Secrets: s})
	if err != nil {
		t.Fatal(err)
	}
	if !res.SignedIn || !res.RevocationEndpoint || len(res.Tokens) != 2 {
		t.Fatalf("result %+v", res)
	}
	rt, at := res.Tokens[0], res.Tokens[1]
	if rt.Kind != "refresh token" || !rt.Revoked || at.Kind != "access token" || at.Revoked || !at.ExpiresAt.Equal(rec.Expiry) || !strings.Contains(at.Why, "400 unsupported_token_type") {
		t.Fatalf("tokens %+v", res.Tokens)
	}
	if res.Revoked() {
		t.Fatal("Revoked() with the access token not revoked")
	}
	if err := res.Err(); err == nil || strings.Contains(err.Error(), rec.AccessToken) || strings.Contains(at.Why, rec.AccessToken) {
		t.Fatalf("Err() = %v (Why %q)", err, at.Why)
	}
	if st, _ := Lookup(s, tg); st.SignedIn {
		t.Fatal("still signed in after SignOut")
	}
	// Nothing to forget: not signed in, nothing revoked.
	res, err = SignOut(context.Background(), tg, Options{Secrets: s})
	if err != nil || res.SignedIn || len(res.Tokens) != 0 || res.Revoked() {
		t.Fatalf("second SignOut = %+v, %v", res, err)
	}
}

// berth's refusals read as a sentence to a person at a terminal: the
// thing, the rule, the fix; never empty quotes, never a token or code.
func TestRefusalMessagesRead(t *testing.T) {
	check := func(t *testing.T, err error, want ...string) {
		t.Helper()
		if err == nil {
			t.Fatal("no refusal")
		}
		msg := err.Error()
		if strings.Contains(msg, `""`) {
			t.Errorf("the message has empty quotes: %s", msg)
		}
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Errorf("the message %q\nlacks %q", msg, w)
			}
		}
	}
	t.Run("http authorization server in the metadata", func(t *testing.T) {
		rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(map[string]any{"resource": "http://" + r.Host + "/mcp", "authorization_servers": []string{"http://192.0.2.2:44929"}})
				return
			}
			w.WriteHeader(401)
		}))
		defer rs.Close()
		_, err := Login(context.Background(), Target{Plugin: "acme", Server: "srv", Resource: rs.URL + "/mcp"}, Options{Secrets: newSecrets(t), Ask: follow})
		check(t, err, "in its protected-resource metadata, the authorization server http://192.0.2.2:44929 uses plain http; the sign-in goes only over https", "tell the server's operator")
	})
	t.Run("metadata names no issuer", func(t *testing.T) {
		f := newFakeAS(t)
		f.noIssuer = true
		_, err := Login(context.Background(), f.target("acme"), Options{Secrets: newSecrets(t), Ask: follow})
		check(t, err, "the metadata of the authorization server "+f.as.URL+" names no issuer, not its own address", "refuses to sign in there")
	})
	t.Run("metadata names another issuer", func(t *testing.T) {
		f := newFakeAS(t)
		f.issuer = "http://127.0.0.1:1/other"
		_, err := Login(context.Background(), f.target("acme"), Options{Secrets: newSecrets(t), Ask: follow})
		check(t, err, `names the issuer "http://127.0.0.1:1/other", not its own address`)
	})
	t.Run("pinned issuer", func(t *testing.T) {
		f := newFakeAS(t)
		tg := f.target("acme")
		tg.OAuth.Issuer = "https://login.example.com"
		_, err := Login(context.Background(), tg, Options{Secrets: newSecrets(t), Ask: follow})
		check(t, err, "the server names the authorization server "+f.as.URL+", but its manifest pins the issuer https://login.example.com", "auth.oauth.issuer")
	})
	t.Run("no iss in the answer", func(t *testing.T) {
		f := newFakeAS(t)
		f.issParam = true
		_, err := Login(context.Background(), f.target("acme"), Options{Secrets: newSecrets(t), Ask: follow})
		var ie *IssuerMismatchError
		if !errors.As(err, &ie) {
			t.Fatalf("err = %v, want an issuer mismatch", err)
		}
		check(t, err, "the answer to the sign-in names no issuer", "sign in again")
		if strings.Contains(err.Error(), "code-") {
			t.Errorf("the message shows the code: %v", err)
		}
	})
	t.Run("no endpoint", func(t *testing.T) {
		_, err := (netRules{}).checkURL("the token endpoint", "")
		check(t, err, "the token endpoint is not given")
	})
	t.Run("token error", func(t *testing.T) {
		secret := "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"
		msg := tokenErrorText(&oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: "refresh token " + secret + " was revoked"})
		if strings.Contains(msg, secret) || !strings.Contains(msg, "invalid_grant") {
			t.Errorf("tokenErrorText = %q", msg)
		}
		msg = tokenErrorText(&oauth2.RetrieveError{Response: &http.Response{Status: "400 Bad Request"}, Body: []byte(secret)})
		if strings.Contains(msg, secret) || !strings.Contains(msg, "400 Bad Request") {
			t.Errorf("tokenErrorText = %q", msg)
		}
	})
}
