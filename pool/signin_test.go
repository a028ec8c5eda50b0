//go:build unix

package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/zalando/go-keyring"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/secrets"
	"github.com/berth-mcp/berth/signin"
)

// oauthRemote is an MCP server that requires tokens of its own little
// authorization server (another origin on 127.0.0.1).
type oauthRemote struct {
	rs, as *httptest.Server
	mu     sync.Mutex
	tokens map[string]bool
	seen   []string // Authorization headers the MCP endpoint got
	n      int
	// refreshable: tokens come with a refresh token; refuse: the MCP
	// endpoint answers 401 to every token.
	refreshable, refuse bool
	grants              map[string]int // token requests by grant_type
}

func newOAuthRemote(t *testing.T, kind string) *oauthRemote {
	o := &oauthRemote{tokens: map[string]bool{}}
	mcpH := mcpHandler(kind)
	o.as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			json.NewEncoder(w).Encode(map[string]any{"issuer": o.as.URL, "authorization_endpoint": o.as.URL + "/authorize", "token_endpoint": o.as.URL + "/token",
				"registration_endpoint": o.as.URL + "/register", "response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"}})
		case "/register":
			w.WriteHeader(201)
			json.NewEncoder(w).Encode(map[string]any{"client_id": "c1", "redirect_uris": []string{}})
		case "/authorize":
			q := r.URL.Query()
			http.Redirect(w, r, q.Get("redirect_uri")+"?code=k&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
		case "/token":
			r.ParseForm()
			o.mu.Lock()
			o.n++
			tok := fmt.Sprintf("tok-%d", o.n)
			o.tokens[tok] = true
			if o.grants == nil {
				o.grants = map[string]int{}
			}
			o.grants[r.Form.Get("grant_type")]++
			ans := map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600}
			if o.refreshable {
				ans["refresh_token"] = fmt.Sprintf("rt-%d", o.n)
			}
			o.mu.Unlock()
			json.NewEncoder(w).Encode(ans)
		}
	}))
	o.rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"resource": o.rs.URL + "/mcp", "authorization_servers": []string{o.as.URL}})
			return
		}
		a := r.Header.Get("Authorization")
		o.mu.Lock()
		o.seen = append(o.seen, a)
		ok := o.tokens[strings.TrimPrefix(a, "Bearer ")] && !o.refuse
		o.mu.Unlock()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+o.rs.URL+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mcpH.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { o.rs.Close(); o.as.Close() })
	return o
}

func followSignIn(ctx context.Context, p signin.Prompt) error {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(p.URL)
	if err != nil {
		return err
	}
	resp.Body.Close()
	resp, err = c.Get(resp.Header.Get("Location"))
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// A remote that declares auth.oauth and has no sign-in: its start and a
// call fail with a *signin.NeedSignInError naming `berth login`, the
// server is not given up on, and after a sign-in (another process: berth
// login) the next call works without reopening the pool. The token goes
// only where the transport sets it: no declared header overrides it.
func TestRemoteSignIn(t *testing.T) {
	keyring.MockInitWithError(errors.New("no keychain in tests"))
	for _, kind := range []string{"streamable-http", "sse"} {
		t.Run(kind, func(t *testing.T) {
			o := newOAuthRemote(t, kind)
			sec := secrets.Open(filepath.Join(t.TempDir(), "secrets"), nil)
			f := newFixture(t)
			f.plugin("web", map[string]any{"api": remoteServer(o.rs.URL+"/mcp", kind, map[string]any{"auth": map[string]any{"oauth": map[string]any{}}})})
			p := f.open(func(opts *Options) { opts.SignIns = sec })
			st := status(t, p, "web__api")
			if st.State != StateFailed || st.GaveUp || !strings.Contains(st.LastError, "berth login web__api") {
				t.Fatalf("status before sign-in %+v", st)
			}
			_, err := p.Call(context.Background(), "web__api__echo", json.RawMessage(`{"text":"x"}`), nil)
			var ne *signin.NeedSignInError
			if !errors.As(err, &ne) || ne.Target.ID() != "web__api" {
				t.Fatalf("call before sign-in: %v", err)
			}
			tg := signin.Target{Plugin: "web", Server: "api", Resource: o.rs.URL + "/mcp"}
			if _, err := signin.Login(context.Background(), tg, signin.Options{Secrets: sec, Ask: followSignIn}); err != nil {
				t.Fatal(err)
			}
			if got := callText(t, p, "web__api__echo", `{"text":"signed"}`); got != "echo: signed" {
				t.Fatalf("%q %+v", got, status(t, p, "web__api"))
			}
			o.mu.Lock()
			defer o.mu.Unlock()
			if last := o.seen[len(o.seen)-1]; !strings.HasPrefix(last, "Bearer tok-") {
				t.Fatalf("the last request carried %q", last)
			}
		})
	}
}

// A running remote whose token the server stops accepting (no refresh
// token): a call without an asker fails with a *signin.NeedSignInError
// and leaves the connection up; the same call with an asker on its
// context (berth serve's URL-mode elicitation) signs in and runs.
func TestRemoteSignInAskOnCall(t *testing.T) {
	keyring.MockInitWithError(errors.New("no keychain in tests"))
	o := newOAuthRemote(t, "streamable-http")
	sec := secrets.Open(filepath.Join(t.TempDir(), "secrets"), nil)
	tg := signin.Target{Plugin: "web", Server: "api", Resource: o.rs.URL + "/mcp"}
	if _, err := signin.Login(context.Background(), tg, signin.Options{Secrets: sec, Ask: followSignIn}); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	f.plugin("web", map[string]any{"api": remoteServer(o.rs.URL+"/mcp", "streamable-http", map[string]any{"auth": map[string]any{"oauth": map[string]any{}}})})
	p := f.open(func(opts *Options) { opts.SignIns = sec })
	if got := callText(t, p, "web__api__echo", `{"text":"a"}`); got != "echo: a" {
		t.Fatalf("%q %+v", got, status(t, p, "web__api"))
	}
	o.mu.Lock()
	o.tokens = map[string]bool{} // the server revokes every token
	o.mu.Unlock()
	_, err := p.Call(context.Background(), "web__api__echo", json.RawMessage(`{"text":"b"}`), allow)
	var ne *signin.NeedSignInError
	if !errors.As(err, &ne) {
		t.Fatalf("call after revocation: %v", err)
	}
	if st := status(t, p, "web__api"); st.State != StateRunning {
		t.Fatalf("the connection did not stay up: %+v", st)
	}
	asked := 0
	ctx := signin.WithAsk(context.Background(), func(ctx context.Context, pr signin.Prompt) error {
		asked++
		if pr.Target.ID() != "web__api" || pr.Issuer != o.as.URL {
			t.Errorf("prompt %+v", pr)
		}
		return followSignIn(ctx, pr)
	})
	res, err := p.Call(ctx, "web__api__echo", json.RawMessage(`{"text":"c"}`), allow)
	if err != nil || asked != 1 || res.IsError {
		t.Fatalf("call with an asker: %v (asked %d)", err, asked)
	}
}

// The guard never puts a declared Authorization header over the token the
// sign-in sets (the manifest rules refuse the pair; the guard does not
// rely on them).
func TestGuardKeepsSignInAuthorization(t *testing.T) {
	keyring.MockInitWithError(errors.New("no keychain in tests"))
	var got string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Get("Authorization") }))
	defer ts.Close()
	g := &guard{id: "web__api", header: http.Header{"Authorization": {"Bearer from-env"}, "X-Team": {"blue"}}}
	var err error
	if g.ep, err = bundle.ParseEndpoint(ts.URL + "/mcp"); err != nil {
		t.Fatal(err)
	}
	g.base = &http.Transport{}
	h, err := signin.NewHandler(signin.Target{Plugin: "web", Server: "api", Resource: ts.URL + "/mcp"}, signin.Options{Secrets: secrets.Open(filepath.Join(t.TempDir(), "s"), nil)})
	if err != nil {
		t.Fatal(err)
	}
	for _, oauth := range []bool{false, true} {
		g.oauth = nil
		if oauth {
			g.oauth = h
		}
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", nil)
		req.Header.Set("Authorization", "Bearer signed-in")
		resp, err := g.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := map[bool]string{false: "Bearer from-env", true: "Bearer signed-in"}[oauth]
		if got != want {
			t.Fatalf("oauth %v: Authorization %q, want %q", oauth, got, want)
		}
	}
}

// A running remote that refuses the token berth renewed after its first
// 401 (a second 401 in a row): the call fails with a
// *signin.NeedSignInError naming berth login, after one refresh; the
// connection stays up (not taken for a crash, no "may or may not have
// run"), and once the server accepts tokens again the next call runs on
// it.
func TestRemoteSecond401NeedsSignIn(t *testing.T) {
	keyring.MockInitWithError(errors.New("no keychain in tests"))
	for _, kind := range []string{"streamable-http", "sse"} {
		t.Run(kind, func(t *testing.T) {
			o := newOAuthRemote(t, kind)
			o.refreshable = true
			sec := secrets.Open(filepath.Join(t.TempDir(), "secrets"), nil)
			tg := signin.Target{Plugin: "web", Server: "api", Resource: o.rs.URL + "/mcp"}
			if _, err := signin.Login(context.Background(), tg, signin.Options{Secrets: sec, Ask: followSignIn}); err != nil {
				t.Fatal(err)
			}
			f := newFixture(t)
			f.plugin("web", map[string]any{"api": remoteServer(o.rs.URL+"/mcp", kind, map[string]any{"auth": map[string]any{"oauth": map[string]any{}}})})
			p := f.open(func(opts *Options) { opts.SignIns = sec })
			if got := callText(t, p, "web__api__echo", `{"text":"a"}`); got != "echo: a" {
				t.Fatalf("%q %+v", got, status(t, p, "web__api"))
			}
			before := status(t, p, "web__api")
			o.mu.Lock()
			o.refuse = true
			o.mu.Unlock()
			_, err := p.Call(context.Background(), "web__api__echo", json.RawMessage(`{"text":"b"}`), allow)
			var ne *signin.NeedSignInError
			if !errors.As(err, &ne) || !strings.Contains(err.Error(), "berth login web__api") || strings.Contains(err.Error(), "may or may not") {
				t.Fatalf("a call refused twice in a row: %v\nwant a NeedSignInError naming berth login web__api", err)
			}
			o.mu.Lock()
			refreshes := o.grants["refresh_token"]
			o.refuse = false
			o.mu.Unlock()
			if refreshes != 1 {
				t.Errorf("%d refresh grants for the refused call; want 1", refreshes)
			}
			st := status(t, p, "web__api")
			if st.State != StateRunning || st.Restarts != before.Restarts {
				t.Fatalf("the server was taken for crashed: %+v (before: %+v)", st, before)
			}
			if got := callText(t, p, "web__api__echo", `{"text":"c"}`); got != "echo: c" {
				t.Fatalf("%q %+v", got, status(t, p, "web__api"))
			}
		})
	}
}
