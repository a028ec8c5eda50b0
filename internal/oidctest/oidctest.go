//go:build unix

// Package oidctest runs a real authorization server, oidc-provider (a
// certified OpenID provider, pinned in testdata/peers), in front of
// TypeScript SDK MCP servers that require its tokens, for berth's sign-in
// tests. The server is testdata/peers/oidc/server.mjs; its doc comment says
// what it configures (dynamic registration, PKCE, resource indicators, JWT
// access tokens with a short TTL, rotated refresh tokens, the devInteractions
// login and consent pages, one whoami tool per resource).
//
// [Start] runs it under the peers' Node 22 (skipping the test, or failing it
// with BERTH_REQUIRE_PEERS=1, when the peers are missing), [Server.Events]
// returns what it observed (token grants, registrations, requests to each
// resource, never a token), and [Consent] completes a sign-in over HTTP the
// way a human in a browser would: it opens the authorization URL, posts the
// login and consent forms and follows the redirects to the client's loopback
// listener.
package oidctest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/peers"
)

// Resource is one MCP server behind the provider.
type Resource struct {
	Name string `json:"name"`
	// AuthorizationServers, when set, replaces the provider's issuer in the
	// resource's protected-resource metadata (an attacker's document).
	AuthorizationServers []string `json:"authorizationServers,omitempty"`
	// RedirectTo, when set, answers every POST to the resource that carries
	// an Authorization header with a 307 to this URL (a redirect to another
	// origin); without one, the usual 401, so that a client can sign in.
	RedirectTo string `json:"redirectTo,omitempty"`
	// ClaimResourceOf, when set, names another resource whose URL this
	// one's protected-resource metadata gives as its own (a server that
	// asks for another server's token, to replay it there).
	ClaimResourceOf string `json:"claimResourceOf,omitempty"`
	// StepUpScope, when set, adds a tool "admin" whose call needs this
	// scope besides Config.Scope: without it the resource answers 403
	// insufficient_scope naming both (a step-up).
	StepUpScope string `json:"stepUpScope,omitempty"`
}

// Config configures the provider and its resources.
type Config struct {
	// AccessTokenTTL is the access tokens' lifetime in seconds (default 60).
	AccessTokenTTL int `json:"accessTokenTTL,omitempty"`
	// Resources are the MCP servers (default one named "a").
	Resources []Resource `json:"resources,omitempty"`
	// IssuerHost is the host in the provider's issuer (default 127.0.0.1;
	// "localhost": an authorization server on another host than the
	// resources, though it listens on 127.0.0.1 too).
	IssuerHost string `json:"issuerHost,omitempty"`
	// Scope is the one scope each resource requires (default "mcp:tools").
	Scope string `json:"scope,omitempty"`

	TokenFile string `json:"tokenFile,omitempty"` // set by Start
}

// Event is one thing the server observed. Event is "token" (a request to
// the token endpoint: GrantType, Status, Error, RefreshToken), "register"
// (dynamic registration: ClientID, GrantTypes, RedirectURIs), "revocation",
// "mcp" (a request to a resource: Resource is its name, Bearer whether it
// carried a token, Aud and Sub that token's claims, TokenSHA256 its hash) or
// "server_error".
type Event struct {
	Event        string   `json:"event"`
	GrantType    string   `json:"grant_type,omitempty"`
	Status       int      `json:"status,omitempty"`
	Error        string   `json:"error,omitempty"`
	ErrorDesc    string   `json:"error_description,omitempty"`
	RefreshToken bool     `json:"refresh_token,omitempty"`
	ExpiresIn    int      `json:"expires_in,omitempty"`
	ClientID     string   `json:"client_id,omitempty"`
	GrantTypes   []string `json:"grant_types,omitempty"`
	RedirectURIs []string `json:"redirect_uris,omitempty"`
	AppType      string   `json:"application_type,omitempty"`
	AuthMethod   string   `json:"token_endpoint_auth_method,omitempty"`
	Resource     any      `json:"resource,omitempty"`
	Method       string   `json:"method,omitempty"`
	Bearer       bool     `json:"bearer,omitempty"`
	Aud          any      `json:"aud,omitempty"`
	Sub          string   `json:"sub,omitempty"`
	TokenSHA256  string   `json:"token_sha256,omitempty"`
	Message      string   `json:"message,omitempty"`
	Hint         string   `json:"token_type_hint,omitempty"`
}

// Server is a running provider and its resources. Safe for concurrent use.
type Server struct {
	Issuer    string            // the provider's issuer, http://127.0.0.1:PORT
	JWKS      string            // its JWKS URL
	Resources map[string]string // resource name -> its MCP URL (http://127.0.0.1:PORT/mcp)

	tokenFile string
	mu        sync.Mutex
	events    []Event
	changed   chan struct{} // closed and replaced on every event
	stderr    *lockedBuffer
}

// Start runs the server for the rest of the test.
func Start(t testing.TB, c Config) *Server {
	t.Helper()
	c.TokenFile = filepath.Join(t.TempDir(), "issued-tokens")
	arg, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cmd := peers.Command(ctx, t, "node", filepath.Join("oidc", "server.mjs"), string(arg))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.StdinPipe(); err != nil { // closed when the test ends: the server exits
		t.Fatal(err)
	}
	s := &Server{tokenFile: c.TokenFile, changed: make(chan struct{}), stderr: &lockedBuffer{}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("oidctest: starting %s: %v", cmd, err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("oidctest: the provider's stderr:\n%s", s.stderr.String())
			for _, e := range s.Events() {
				b, _ := json.Marshal(e)
				t.Logf("oidctest: event %s", b)
			}
		}
	})

	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		first := true
		for sc.Scan() {
			if first {
				first = false
				var hello struct {
					Issuer    string            `json:"issuer"`
					JWKS      string            `json:"jwks"`
					Resources map[string]string `json:"resources"`
				}
				err := json.Unmarshal(sc.Bytes(), &hello)
				if err == nil && hello.Issuer == "" {
					err = fmt.Errorf("no issuer in %q", sc.Text())
				}
				s.Issuer, s.JWKS, s.Resources = hello.Issuer, hello.JWKS, hello.Resources
				ready <- err
				continue
			}
			var e Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				continue
			}
			s.mu.Lock()
			s.events = append(s.events, e)
			close(s.changed)
			s.changed = make(chan struct{})
			s.mu.Unlock()
		}
		if first {
			ready <- fmt.Errorf("the server exited before it was ready: %v", sc.Err())
		}
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("oidctest: %v\nstderr:\n%s", err, s.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("oidctest: the server was not ready after 60s\nstderr:\n%s", s.stderr.String())
	}
	return s
}

// Events returns a copy of what the server observed so far.
func (s *Server) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.events...)
}

// Count returns how many events so far match.
func (s *Server) Count(match func(Event) bool) int {
	n := 0
	for _, e := range s.Events() {
		if match(e) {
			n++
		}
	}
	return n
}

// Wait waits until at least n events match, or fails the test after timeout.
func (s *Server) Wait(t testing.TB, timeout time.Duration, n int, what string, match func(Event) bool) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if s.Count(match) >= n {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("oidctest: waited %s for %d event(s) %s; saw %d", timeout, n, what, s.Count(match))
		}
	}
}

// Tokens returns every access and refresh token the provider issued so far
// (for tests that look for them where they must not be).
func (s *Server) Tokens(t testing.TB) (access, refresh []string) {
	t.Helper()
	b, err := os.ReadFile(s.tokenFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		kind, tok, ok := strings.Cut(line, " ")
		if !ok || tok == "" {
			continue
		}
		switch kind {
		case "access":
			access = append(access, tok)
		case "refresh":
			refresh = append(refresh, tok)
		}
	}
	return access, refresh
}

// Refuse makes the named resource answer 401 invalid_token, from now on,
// to the token whose sha256 is hash, or to every token when hash is "".
func (s *Server) Refuse(t testing.TB, resource, hash string) {
	t.Helper()
	u, ok := s.Resources[resource]
	if !ok {
		t.Fatalf("oidctest: no resource %q", resource)
	}
	body := `{"all": true}`
	if hash != "" {
		body = fmt.Sprintf(`{"sha256": %q}`, hash)
	}
	resp, err := http.Post(strings.TrimSuffix(u, "/mcp")+"/_test/refuse", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("oidctest: refusing tokens at %s: %s", resource, resp.Status)
	}
}

// IsToken matches a token endpoint request of the grant type ("" for any)
// that succeeded.
func IsToken(grantType string) func(Event) bool {
	return func(e Event) bool {
		return e.Event == "token" && e.Status == http.StatusOK && (grantType == "" || e.GrantType == grantType)
	}
}

// IsCall matches a request to the named resource that carried a token and
// was answered 200.
func IsCall(resource string) func(Event) bool {
	return func(e Event) bool {
		return e.Event == "mcp" && e.Resource == resource && e.Bearer && e.Status == http.StatusOK
	}
}

var (
	formAction  = regexp.MustCompile(`<form[^>]*action="([^"]+)"[^>]*method="post"`)
	formPrompt  = regexp.MustCompile(`name="prompt" value="([a-z]+)"`)
	errorNotice = regexp.MustCompile(`(?s)<pre>(.*?)</pre>|<p>(.*?)</p>`)
)

// Consent completes a sign-in at the provider the way a human in a browser
// would: it opens authURL, signs in as login (the token's subject), grants
// consent, and follows the redirects until one leaves the provider's origin
// (the client's loopback redirect), and returns that redirect's URL. It
// fails when authURL is not at issuer, when the provider answers an error
// page or redirects with an error, or when the loopback listener answers an
// HTTP error.
func Consent(ctx context.Context, issuer, authURL, login string) (*url.URL, error) {
	iss, err := url.Parse(issuer)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(authURL)
	if err != nil {
		return nil, fmt.Errorf("oidctest: authorization URL %q: %w", authURL, err)
	}
	if u.Scheme != iss.Scheme || u.Host != iss.Host {
		return nil, fmt.Errorf("oidctest: authorization URL %s is not at the issuer %s", authURL, issuer)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	for step := 0; step < 8; step++ {
		resp, err := c.Do(req)
		if err != nil {
			return nil, fmt.Errorf("oidctest: %s %s: %w", req.Method, req.URL, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		final := resp.Request.URL
		if final.Host != iss.Host {
			if e := final.Query().Get("error"); e != "" {
				return final, fmt.Errorf("oidctest: the provider redirected with error %s: %s", e, final.Query().Get("error_description"))
			}
			if resp.StatusCode >= 400 {
				return final, fmt.Errorf("oidctest: the loopback redirect %s answered %s: %s", final.Redacted(), resp.Status, strings.TrimSpace(string(body)))
			}
			return final, nil
		}
		page := string(body)
		action, prompt := formAction.FindStringSubmatch(page), formPrompt.FindStringSubmatch(page)
		if resp.StatusCode != http.StatusOK || action == nil || prompt == nil {
			msg := page
			if m := errorNotice.FindAllString(page, -1); m != nil {
				msg = strings.Join(m, " ")
			}
			return final, fmt.Errorf("oidctest: the provider answered %s at %s: %s", resp.Status, final.Path, html.UnescapeString(msg))
		}
		form := url.Values{"prompt": {prompt[1]}}
		switch prompt[1] {
		case "login":
			form.Set("login", login)
			form.Set("password", "any password")
		case "consent":
		default:
			return final, fmt.Errorf("oidctest: unexpected prompt %q at %s", prompt[1], final)
		}
		next, err := final.Parse(html.UnescapeString(action[1]))
		if err != nil {
			return final, err
		}
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, next.String(), strings.NewReader(form.Encode()))
		if err != nil {
			return final, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return nil, fmt.Errorf("oidctest: no redirect out of the provider after 8 forms")
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
