//go:build unix

package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/oidctest"
)

// The sign-in end to end against a real authorization server
// (internal/oidctest: oidc-provider with dynamic registration, PKCE,
// resource indicators, 4 s JWT access tokens and rotated refresh tokens, in
// front of a TypeScript SDK MCP server that requires its tokens), through
// the berth executable as an operator and Claude Desktop use it: trust and
// enable a plugin that declares the remote with auth.oauth, berth login
// --no-browser (the test signs in and consents over HTTP as the human
// would), a tool call through berth serve on stdio, no refresh while the
// token is fresh, the access token expiring and the next call refreshing
// it (the provider sees a refresh_token grant, the call carries the new
// token, a new serve refreshes with the stored, rotated refresh token),
// berth logout, and the next call, in the running serve and a new one,
// asking for a sign-in with an error that names berth login.
func TestSignInOIDC(t *testing.T) {
	// berth refreshes a token in the last quarter of its life (at most a
	// minute before expiry): a 4 s token is fresh for 3 s. The test lets
	// it expire.
	const ttl, fresh = 4, 3 * time.Second
	srv := oidctest.Start(t, oidctest.Config{AccessTokenTTL: ttl, Resources: []oidctest.Resource{{Name: "a"}}})
	h := newOIDCHome(t)
	h.install(t, "hosted", map[string]string{"api": remoteJSON(srv.Resources["a"], fmt.Sprintf(`{"issuer": %q}`, srv.Issuer))})

	// Before any sign-in, a call through serve asks for one.
	s := h.serve(t)
	if text, isErr := s.call(t, "hosted__api__whoami"); !isErr || !strings.Contains(text, "berth login hosted__api") {
		t.Fatalf("a call before any sign-in answered (error %v): %s\nwant an error naming berth login hosted__api", isErr, text)
	}
	s.close(t)

	h.login(t, srv, "hosted__api", "alice")
	issued := time.Now()
	if n := srv.Count(oidctest.IsToken("authorization_code")); n != 1 {
		t.Fatalf("%d authorization_code grants after berth login; want 1", n)
	}

	s = h.serve(t)
	text, isErr := s.call(t, "hosted__api__whoami")
	if isErr || !strings.Contains(text, `"sub":"alice"`) || !strings.Contains(text, srv.Resources["a"]) {
		t.Fatalf("whoami after berth login answered (error %v): %s", isErr, text)
	}
	if time.Since(issued) < fresh {
		if n := srv.Count(oidctest.IsToken("refresh_token")); n != 0 {
			t.Errorf("%d refresh grants while the token was fresh", n)
		}
	}
	srv.Wait(t, 10*time.Second, 1, "a call with a token", oidctest.IsCall("a"))
	firstToken := lastBearer(srv, "a")
	_, refreshBefore := srv.Tokens(t)

	// The access token expires; the next call refreshes it quietly.
	time.Sleep(time.Until(issued.Add(ttl*time.Second + time.Second)))
	text, isErr = s.call(t, "hosted__api__whoami")
	if isErr || !strings.Contains(text, `"sub":"alice"`) {
		t.Fatalf("whoami once the access token expired answered (error %v): %s", isErr, text)
	}
	if n := srv.Count(oidctest.IsToken("refresh_token")); n == 0 {
		t.Fatal("no refresh_token grant at the provider once the access token expired")
	}
	srv.Wait(t, 10*time.Second, 1, "a call with the refreshed access token", func(e oidctest.Event) bool {
		return e.Event == "mcp" && e.Resource == "a" && e.Bearer && e.Status == 200 && e.TokenSHA256 != firstToken
	})
	if n := srv.Count(func(e oidctest.Event) bool { return e.Event == "token" && e.Status != 200 }); n != 0 {
		t.Fatalf("%d token requests failed at the provider", n)
	}
	// The rotated refresh token is the one berth kept: the provider
	// accepts only the newest, so another berth process must find it. A
	// new serve, once the refreshed token expired too, refreshes with what
	// is stored.
	_, refreshAfter := srv.Tokens(t)
	if len(refreshAfter) <= len(refreshBefore) {
		t.Fatal("the provider issued no new refresh token")
	}
	s.close(t)
	refreshed := time.Now()
	grants := srv.Count(oidctest.IsToken("refresh_token"))
	time.Sleep(time.Until(refreshed.Add(ttl*time.Second + time.Second)))
	s = h.serve(t)
	if text, isErr := s.call(t, "hosted__api__whoami"); isErr || !strings.Contains(text, `"sub":"alice"`) {
		t.Fatalf("a new berth serve could not use the stored, rotated refresh token (error %v): %s", isErr, text)
	}
	if n := srv.Count(oidctest.IsToken("refresh_token")); n <= grants {
		t.Errorf("the new serve did not refresh the expired token (%d refresh grants before, %d after)", grants, n)
	}
	if n := srv.Count(func(e oidctest.Event) bool { return e.Event == "token" && e.Status != 200 }); n != 0 {
		t.Fatalf("%d token requests failed at the provider: the stored refresh token was not the rotated one", n)
	}

	// logout forgets the sign-in: the running serve and a new one ask for
	// a sign-in again.
	out, code := h.berth(t, "logout", "hosted__api")
	if code != 0 {
		t.Fatalf("berth logout: exit %d\n%s", code, out)
	}
	if text, isErr := s.call(t, "hosted__api__whoami"); !isErr || !strings.Contains(text, "berth login hosted__api") {
		t.Fatalf("a call in the running serve after berth logout answered (error %v): %s\nwant an error naming berth login hosted__api", isErr, text)
	}
	s.close(t)
	s = h.serve(t)
	if text, isErr := s.call(t, "hosted__api__whoami"); !isErr || !strings.Contains(text, "berth login hosted__api") {
		t.Fatalf("a call in a new serve after berth logout answered (error %v): %s\nwant an error naming berth login hosted__api", isErr, text)
	}
	s.close(t)
}

// The sign-in asked through the client: a client that declared URL-mode
// elicitation calls a tool of a remote no one signed in to; berth serve
// asks it to open the sign-in page (naming the plugin, the server and the
// authorization server), the human signs in at the real provider, and the
// very call goes on and answers.
//
// On a 2025-11-25 session (Claude Desktop's) berth sends the elicitation
// during the call; on a 2026-07-28 session it answers the call with an
// input request, which go-sdk's client follows and retries.
func TestSignInOIDCThroughClient(t *testing.T) {
	srv := oidctest.Start(t, oidctest.Config{Resources: []oidctest.Resource{{Name: "a"}}})
	for _, proto := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(proto, func(t *testing.T) { signInThroughClient(t, srv, proto) })
	}
}

func signInThroughClient(t *testing.T, srv *oidctest.Server, proto string) {
	h := newOIDCHome(t)
	h.install(t, "hosted", map[string]string{"api": remoteJSON(srv.Resources["a"], fmt.Sprintf(`{"issuer": %q}`, srv.Issuer))})

	var mu sync.Mutex
	var asked []*mcp.ElicitParams
	consented := make(chan error, 4)
	s := h.serveWith(t, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params)
			mu.Unlock()
			if req.Params.Mode != "url" {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			// The human opens the page after accepting.
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				_, err := oidctest.Consent(ctx, srv.Issuer, req.Params.URL, "carol")
				consented <- err
			}()
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	}, &mcp.ClientSessionOptions{ProtocolVersion: proto})
	text, isErr := s.call(t, "hosted__api__whoami")
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 {
		t.Fatalf("berth serve sent %d elicitations; want 1 (call answered error %v: %s)", len(asked), isErr, text)
	}
	if err := <-consented; err != nil {
		t.Fatalf("signing in at the URL berth serve sent: %v", err)
	}
	if isErr || !strings.Contains(text, `"sub":"carol"`) {
		t.Fatalf("the call that asked for the sign-in answered (error %v): %s", isErr, text)
	}
	msg := asked[0].Message
	t.Logf("the elicitation's message:\n%s", msg)
	for _, want := range []string{"hosted", "api", srv.Issuer} {
		if !strings.Contains(msg, want) {
			t.Errorf("the elicitation's message does not name %q:\n%s", want, msg)
		}
	}
	// Signed in now: the next call needs no human.
	if text, isErr := s.call(t, "hosted__api__whoami"); isErr || len(asked) != 1 {
		t.Fatalf("the next call (error %v, %d elicitations): %s", isErr, len(asked), text)
	}
}

// Step-up against the real provider: a tool whose call the resource answers
// 403 insufficient_scope for want of a scope the sign-in did not ask for.
// A client that cannot open a page gets an error naming berth login and
// the scope; berth login --scope signs in for it and the call runs. A
// client with URL-mode elicitation is asked (the message names the
// scope), the human consents, and the very call runs.
func TestSignInOIDCStepUp(t *testing.T) {
	srv := oidctest.Start(t, oidctest.Config{Resources: []oidctest.Resource{{Name: "a", StepUpScope: "mcp:admin"}}})
	pin := fmt.Sprintf(`{"issuer": %q}`, srv.Issuer)

	t.Run("login", func(t *testing.T) {
		h := newOIDCHome(t)
		h.install(t, "hosted", map[string]string{"api": remoteJSON(srv.Resources["a"], pin)})
		h.login(t, srv, "hosted__api", "alice")
		s := h.serve(t)
		if text, isErr := s.call(t, "hosted__api__whoami"); isErr {
			t.Fatalf("whoami: %s", text)
		}
		text, isErr := s.call(t, "hosted__api__admin")
		if !isErr || !strings.Contains(text, "berth login hosted__api") || !strings.Contains(text, "mcp:admin") {
			t.Fatalf("a call that needs more scope answered (error %v): %s\nwant an error naming berth login hosted__api and mcp:admin", isErr, text)
		}
		s.close(t)
		if _, err := h.tryLogin(t, srv, "hosted__api", "alice", "--scope", "mcp:admin"); err != nil {
			t.Fatalf("berth login --scope mcp:admin: %v", err)
		}
		s = h.serve(t)
		if text, isErr := s.call(t, "hosted__api__admin"); isErr || !strings.Contains(text, "mcp:admin") {
			t.Fatalf("the call after berth login --scope mcp:admin answered (error %v): %s", isErr, text)
		}
	})

	t.Run("elicitation", func(t *testing.T) {
		h := newOIDCHome(t)
		h.install(t, "hosted", map[string]string{"api": remoteJSON(srv.Resources["a"], pin)})
		h.login(t, srv, "hosted__api", "alice")
		var mu sync.Mutex
		var asked []string
		consented := make(chan error, 4)
		s := h.serveWith(t, &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
			ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				asked = append(asked, req.Params.Message)
				mu.Unlock()
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					defer cancel()
					_, err := oidctest.Consent(ctx, srv.Issuer, req.Params.URL, "alice")
					consented <- err
				}()
				return &mcp.ElicitResult{Action: "accept"}, nil
			},
		}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		text, isErr := s.call(t, "hosted__api__admin")
		mu.Lock()
		defer mu.Unlock()
		if len(asked) != 1 {
			t.Fatalf("berth serve sent %d elicitations for a step-up; want 1 (call answered error %v: %s)", len(asked), isErr, text)
		}
		if err := <-consented; err != nil {
			t.Fatalf("consenting to the step-up: %v", err)
		}
		if isErr || !strings.Contains(text, "mcp:admin") {
			t.Fatalf("the call that asked for the step-up answered (error %v): %s", isErr, text)
		}
		if !strings.Contains(asked[0], "mcp:admin") {
			t.Errorf("the step-up's message does not name the scope mcp:admin:\n%s", asked[0])
		}
	})
}

// A token the resource refuses (401 invalid_token) while berth still
// thinks it fresh, as after a revocation behind berth's back: berth
// refreshes once and the call runs with the new token. When the resource
// refuses every token, the call fails naming berth login after one
// refresh, not in a loop.
func TestSignInOIDCInvalidToken(t *testing.T) {
	srv := oidctest.Start(t, oidctest.Config{Resources: []oidctest.Resource{{Name: "a"}}})
	h := newOIDCHome(t)
	h.install(t, "hosted", map[string]string{"api": remoteJSON(srv.Resources["a"], fmt.Sprintf(`{"issuer": %q}`, srv.Issuer))})
	h.login(t, srv, "hosted__api", "alice")
	s := h.serve(t)
	if text, isErr := s.call(t, "hosted__api__whoami"); isErr {
		t.Fatalf("whoami: %s", text)
	}
	srv.Wait(t, 10*time.Second, 1, "a call with a token", oidctest.IsCall("a"))
	first := lastBearer(srv, "a")
	srv.Refuse(t, "a", first)
	if text, isErr := s.call(t, "hosted__api__whoami"); isErr || !strings.Contains(text, `"sub":"alice"`) {
		t.Fatalf("the call after the resource refused the token answered (error %v): %s", isErr, text)
	}
	if n := srv.Count(oidctest.IsToken("refresh_token")); n != 1 {
		t.Errorf("%d refresh grants after one refused token; want 1", n)
	}
	srv.Wait(t, 10*time.Second, 1, "a call with the new token", func(e oidctest.Event) bool {
		return e.Event == "mcp" && e.Bearer && e.Status == 200 && e.TokenSHA256 != first
	})

	srv.Refuse(t, "a", "")
	before := srv.Count(oidctest.IsToken("refresh_token"))
	text, isErr := s.call(t, "hosted__api__whoami")
	if !isErr || !strings.Contains(text, "berth login hosted__api") {
		t.Errorf("a call whose every token is refused answered (error %v): %s\nwant an error naming berth login hosted__api", isErr, text)
	}
	if n := srv.Count(oidctest.IsToken("refresh_token")) - before; n > 1 {
		t.Errorf("%d refresh grants for one call whose tokens are all refused; want at most 1", n)
	}
}

// Two berth processes whose access token expired refresh at once: the
// provider rotates the refresh token on use and treats a reused one as
// stolen, so without the store's lock one of them (and then every later
// call) would fail. Every call answers, and so does the next one.
func TestSignInOIDCConcurrentRefresh(t *testing.T) {
	// A 10 s token expires; the one refreshed then is fresh for 7.5 s
	// (signin refreshes in the last quarter of a token's life), long
	// enough for the five calls.
	srv := oidctest.Start(t, oidctest.Config{AccessTokenTTL: 10, Resources: []oidctest.Resource{{Name: "a"}}})
	h := newOIDCHome(t)
	h.install(t, "hosted", map[string]string{"api": remoteJSON(srv.Resources["a"], fmt.Sprintf(`{"issuer": %q}`, srv.Issuer))})
	h.login(t, srv, "hosted__api", "alice")
	time.Sleep(11 * time.Second)
	const n = 4
	outs := make([]string, n)
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], codes[i] = h.berth(t, "call", "hosted__api__whoami", "--workspace", h.ws)
		}()
	}
	wg.Wait()
	for i := range n {
		if codes[i] != 0 || !strings.Contains(outs[i], "alice") {
			t.Errorf("concurrent call %d: exit %d\n%s", i, codes[i], outs[i])
		}
	}
	if out, code := h.berth(t, "call", "hosted__api__whoami", "--workspace", h.ws); code != 0 || !strings.Contains(out, "alice") {
		t.Fatalf("the call after the concurrent refreshes: exit %d\n%s", code, out)
	}
	if bad := srv.Count(func(e oidctest.Event) bool { return e.Event == "token" && e.Status != 200 }); bad != 0 {
		t.Errorf("%d token requests failed at the provider (a reused refresh token)", bad)
	}
	// One process refreshes; the others, once they hold the lock, find the
	// fresh token it stored.
	if g := srv.Count(oidctest.IsToken("refresh_token")); g != 1 {
		t.Errorf("%d refresh grants for %d concurrent calls and one after; want 1", g, n)
	}
}

// berth login and logout alone against the real provider, without serve:
// dynamic registration of a native loopback client, PKCE, the resource
// indicator, the status of the sign-in, and logout revoking at the
// provider (RFC 7009) and forgetting.
func TestLoginOIDC(t *testing.T) {
	srv := oidctest.Start(t, oidctest.Config{Resources: []oidctest.Resource{{Name: "a"}}})
	h := newOIDCHome(t)
	h.install(t, "hosted", map[string]string{"api": remoteJSON(srv.Resources["a"], fmt.Sprintf(`{"issuer": %q}`, srv.Issuer))})
	out := h.login(t, srv, "hosted__api", "alice")
	if !strings.Contains(out, srv.Issuer) {
		t.Errorf("berth login does not name the authorization server %s:\n%s", srv.Issuer, out)
	}
	var codeGrants []oidctest.Event
	for _, e := range srv.Events() {
		switch {
		case e.Event == "register" && (e.Status != 201 || len(e.RedirectURIs) != 1 || !strings.HasPrefix(e.RedirectURIs[0], "http://127.0.0.1:") || e.AppType != "native"):
			t.Errorf("berth registered %+v; want a native client with one loopback redirect URI (RFC 8252)", e)
		case e.Event == "token" && e.GrantType == "authorization_code":
			codeGrants = append(codeGrants, e)
		}
	}
	if len(codeGrants) != 1 || codeGrants[0].Status != 200 || fmt.Sprint(codeGrants[0].Resource) != srv.Resources["a"] || !codeGrants[0].RefreshToken {
		t.Fatalf("authorization_code grants %+v; want one, for resource %s, with a refresh token", codeGrants, srv.Resources["a"])
	}
	out, _ = h.berth(t, "status", "--workspace", h.ws)
	if !strings.Contains(out, "alice") {
		t.Errorf("berth status does not name the subject alice:\n%s", out)
	}
	out = h.must(t, "logout", "hosted__api")
	// oidc-provider revokes the refresh token but not a JWT access token
	// (400 unsupported_token_type): logout says exactly that, and until
	// when the access token stays valid, never that both were revoked.
	if !strings.Contains(out, "confirmed it revoked the refresh token.") || !strings.Contains(out, "It did not revoke the access token (the revocation endpoint answered 400 unsupported_token_type") ||
		!strings.Contains(out, "stays valid at "+srv.Resources["a"]+" until it expires at ") {
		t.Errorf("berth logout says:\n%s\nwant the refresh token confirmed revoked and the access token valid until its expiry", out)
	}
	srv.Wait(t, 10*time.Second, 1, "revocation (berth logout)", func(e oidctest.Event) bool { return e.Event == "revocation" && e.Status == 200 })
	time.Sleep(500 * time.Millisecond)
	for _, e := range srv.Events() {
		if e.Event == "revocation" {
			t.Logf("revocation at the provider: hint %q, status %d %s %s", e.Hint, e.Status, e.Error, e.ErrorDesc)
		}
	}
	out, _ = h.berth(t, "status", "--workspace", h.ws)
	if !strings.Contains(out, "berth login hosted__api") {
		t.Errorf("berth status after logout does not say how to sign in:\n%s", out)
	}
}

// lastBearer is the hash of the last token resource res received.
func lastBearer(srv *oidctest.Server, res string) string {
	var last string
	for _, e := range srv.Events() {
		if e.Event == "mcp" && e.Resource == res && e.Bearer {
			last = e.TokenSHA256
		}
	}
	return last
}

// oidcHome is one operator's berth: its BERTH_HOME, HOME and workspace, a
// file secret store (no Secret Service), and every output of its commands.
type oidcHome struct {
	root, home, berthHome, ws string
	env                       []string

	mu      sync.Mutex
	outputs bytes.Buffer
}

func newOIDCHome(t *testing.T) *oidcHome {
	t.Helper()
	root := t.TempDir()
	h := &oidcHome{root: root, home: filepath.Join(root, "home"), ws: filepath.Join(root, "ws")}
	h.berthHome = filepath.Join(h.home, "berth")
	for _, d := range []string{h.home, h.ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h.env = []string{
		"BERTH_HOME=" + h.berthHome,
		"HOME=" + h.home,
		"XDG_CONFIG_HOME=" + filepath.Join(h.home, "config"),
		"DBUS_SESSION_BUS_ADDRESS=unix:path=" + filepath.Join(root, "no-bus"),
		"BROWSER=/bin/false",
	}
	return h
}

func (h *oidcHome) record(b []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.outputs.Write(b)
}

func (h *oidcHome) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command("berth", args...)
	cmd.Env = append(os.Environ(), h.env...)
	return cmd
}

// berth runs the berth executable and returns its combined output and exit
// code.
func (h *oidcHome) berth(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, err := h.cmd(args...).CombinedOutput()
	h.record(out)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("berth %s: %v", strings.Join(args, " "), err)
	}
	return string(out), code
}

func (h *oidcHome) must(t *testing.T, args ...string) string {
	t.Helper()
	out, code := h.berth(t, args...)
	if code != 0 {
		t.Fatalf("berth %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// remoteJSON is a remote server's declaration with auth.oauth.
func remoteJSON(url, oauth string) string {
	return fmt.Sprintf(`{"remote": {"transport": "streamable-http", "url": %q, "auth": {"oauth": %s}, "network": {"hosts": ["127.0.0.1"]}}}`, url, oauth)
}

// install writes a plugin with these servers (name -> declaration), trusts
// it unsigned, enables it in the workspace and allows its tools.
func (h *oidcHome) install(t *testing.T, plugin string, servers map[string]string) {
	t.Helper()
	dir := filepath.Join(h.root, "bundles", plugin)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var decl []string
	for name, s := range servers {
		decl = append(decl, fmt.Sprintf("%q: %s", name, s))
	}
	manifest := fmt.Sprintf(`{"manifestVersion": 1, "name": %q, "version": "1.0.0", "description": "a hosted test plugin", "mcpServers": {%s}}`, plugin, strings.Join(decl, ", "))
	if err := os.WriteFile(filepath.Join(dir, "berth.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	d := strings.Fields(h.must(t, "digest", dir))
	h.must(t, "trust", "--yes", "--allow-unsigned", "--digest", d[len(d)-1], dir)
	h.must(t, "enable", plugin, "--workspace", h.ws)
	h.must(t, "policy", "set", plugin+"__*", "allow")
}

var urlInText = regexp.MustCompile(`https?://[^\s"'<>]+`)

// login runs berth login TARGET --no-browser, signs in as subject at the
// URL it prints, and waits for it to finish.
func (h *oidcHome) login(t *testing.T, srv *oidctest.Server, target, subject string) string {
	t.Helper()
	out, err := h.tryLogin(t, srv, target, subject)
	if err != nil {
		t.Fatalf("berth login %s: %v\n%s", target, err, out)
	}
	return out
}

// tryLogin is login that returns the failure: berth login's exit, or the
// sign-in at the provider.
func (h *oidcHome) tryLogin(t *testing.T, srv *oidctest.Server, target, subject string, extra ...string) (string, error) {
	t.Helper()
	return h.tryLoginWith(t, srv, target, func(u string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_, err := oidctest.Consent(ctx, srv.Issuer, u, subject)
		return err
	}, extra...)
}

// tryLoginWith runs berth login TARGET --no-browser and calls open with the
// first authorization URL at srv.Issuer it prints on stderr.
func (h *oidcHome) tryLoginWith(t *testing.T, srv *oidctest.Server, target string, open func(string) error, extra ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := h.cmd(append([]string{"login", target, "--no-browser"}, extra...)...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var errText bytes.Buffer
	found := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(io.TeeReader(stderr, &errText))
		for sc.Scan() {
			for _, u := range urlInText.FindAllString(sc.Text(), -1) {
				if strings.HasPrefix(u, srv.Issuer+"/") && strings.Contains(u, "client_id=") {
					select {
					case found <- u:
					default:
					}
				}
			}
		}
	}()
	var signErr error
	select {
	case u := <-found:
		signErr = open(u)
	case <-done:
	case <-ctx.Done():
		signErr = fmt.Errorf("berth login printed no authorization URL at %s in 90s", srv.Issuer)
	}
	if signErr != nil {
		cmd.Process.Kill()
	}
	<-done
	werr := cmd.Wait()
	out := stdout.String() + errText.String()
	h.record([]byte(out))
	if signErr != nil {
		return out, signErr
	}
	return out, werr
}

// oidcServe is a berth serve on stdio with a go-sdk client: the path
// Claude Desktop uses.
type oidcServe struct {
	h      *oidcHome
	cmd    *exec.Cmd
	cs     *mcp.ClientSession
	stderr bytes.Buffer
}

func (h *oidcHome) serve(t *testing.T) *oidcServe {
	t.Helper()
	return h.serveWith(t, nil, nil)
}

func (h *oidcHome) serveWith(t *testing.T, opts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions) *oidcServe {
	t.Helper()
	s := &oidcServe{h: h, cmd: h.cmd("serve", "--workspace", h.ws)}
	s.cmd.Stderr = &s.stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "oidc-test", Version: "1"}, opts)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: s.cmd}, sopts)
	if err != nil {
		t.Fatalf("connect to berth serve: %v\n%s", err, s.stderr.String())
	}
	s.cs = cs
	t.Cleanup(func() { s.close(t) })
	return s
}

// call calls a tool and returns its text and whether it is an error (a
// tool error or an MCP error).
func (s *oidcServe) call(t *testing.T, name string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	if err != nil {
		return err.Error(), true
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func (s *oidcServe) close(t *testing.T) {
	if s.cs == nil {
		return
	}
	s.cs.Close()
	s.cmd.Wait()
	s.cs = nil
	s.h.record(s.stderr.Bytes())
	if t.Failed() {
		t.Logf("berth serve's stderr:\n%s", s.stderr.String())
	}
}
