package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/signin"
)

// fakeOAuth is an authorization server (RFC 8414 metadata, dynamic
// registration, PKCE S256, refresh, RFC 7009 revocation) in front of an
// MCP server that requires its tokens (RFC 9728 metadata, 401 with
// resource_metadata), each on its own 127.0.0.1 origin. Its /authorize
// consents at once: it redirects to the redirect URI with a code, as a
// human's browser would after clicking "allow".
type fakeOAuth struct {
	as, rs *httptest.Server

	mu      sync.Mutex
	clients map[string]string // client_id → redirect URI
	secrets map[string]string // client_id → secret, for a confidential client
	// secretUsed counts token requests that authenticated with a secret.
	secretUsed int
	codes      map[string]fakeGrant
	access     map[string]fakeGrant // live access tokens
	refresh    map[string]fakeGrant
	issued     []string // every token ever issued, to look for leaks
	revoked    []string
}

type fakeGrant struct {
	client, challenge, redirect, resource string
	scopes                                []string
	expires                               time.Time
}

func newFakeOAuth(t *testing.T) *fakeOAuth {
	f := &fakeOAuth{clients: map[string]string{"berth-at-acme": "http://127.0.0.1/callback"}, secrets: map[string]string{"berth-at-acme": "client-s3cr3t-canary"}, codes: map[string]fakeGrant{}, access: map[string]fakeGrant{}, refresh: map[string]fakeGrant{}}
	f.as = httptest.NewServer(http.HandlerFunc(f.serveAS))
	t.Cleanup(f.as.Close)
	server := mcp.NewServer(&mcp.Implementation{Name: "fake-notes", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "alice"}}}, nil, nil
	})
	mux := http.NewServeMux()
	f.rs = httptest.NewServer(mux)
	t.Cleanup(f.rs.Close)
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: f.rs.URL + "/mcp", AuthorizationServers: []string{f.as.URL}, ScopesSupported: []string{"notes:read"},
	}))
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	mux.Handle("/mcp", auth.RequireBearerToken(f.verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: f.rs.URL + "/.well-known/oauth-protected-resource/mcp", Scopes: []string{"notes:read"},
	})(mcpHandler))
	return f
}

func (f *fakeOAuth) verify(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, ok := f.access[tok]
	if !ok || time.Now().After(g.expires) || g.resource != f.rs.URL+"/mcp" {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{Scopes: g.scopes, Expiration: g.expires, UserID: "alice"}, nil
}

func (f *fakeOAuth) token() string {
	b := make([]byte, 18)
	rand.Read(b)
	return "fake-" + base64.RawURLEncoding.EncodeToString(b)
}

// jwtFor is an access token shaped as a JWT whose subject is alice (its
// signature is not checked here: the resource looks it up).
func (f *fakeOAuth) jwtFor(g fakeGrant) string {
	enc := base64.RawURLEncoding.EncodeToString
	claims, _ := json.Marshal(map[string]any{"iss": f.as.URL, "sub": "alice", "aud": g.resource, "exp": g.expires.Unix(), "scope": strings.Join(g.scopes, " ")})
	return enc([]byte(`{"alg":"RS256","typ":"at+jwt"}`)) + "." + enc(claims) + "." + enc([]byte(f.token()))
}

func (f *fakeOAuth) serveAS(w http.ResponseWriter, r *http.Request) {
	writeJSON := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(v)
	}
	oauthErr := func(code int, e string) { writeJSON(code, map[string]string{"error": e}) }
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration":
		writeJSON(200, map[string]any{
			"issuer": f.as.URL, "authorization_endpoint": f.as.URL + "/authorize", "token_endpoint": f.as.URL + "/token",
			"registration_endpoint": f.as.URL + "/register", "revocation_endpoint": f.as.URL + "/revoke",
			"response_types_supported": []string{"code"}, "grant_types_supported": []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"},
			"scopes_supported": []string{"notes:read", "offline_access"}, "authorization_response_iss_parameter_supported": true,
		})
	case "/register":
		var meta struct {
			RedirectURIs []string `json:"redirect_uris"`
		}
		if json.NewDecoder(r.Body).Decode(&meta) != nil || len(meta.RedirectURIs) != 1 {
			oauthErr(400, "invalid_client_metadata")
			return
		}
		id := "client-" + f.token()
		f.clients[id] = meta.RedirectURIs[0]
		writeJSON(201, map[string]any{"client_id": id, "redirect_uris": meta.RedirectURIs, "token_endpoint_auth_method": "none"})
	case "/authorize":
		q := r.URL.Query()
		red, ok := f.clients[q.Get("client_id")]
		u, err := url.Parse(q.Get("redirect_uri"))
		ru, rerr := url.Parse(red)
		// RFC 8252 §7.3: the loopback port may vary, the rest may not.
		if !ok || err != nil || rerr != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Path != ru.Path ||
			q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("response_type") != "code" || q.Get("resource") != f.rs.URL+"/mcp" {
			http.Error(w, "bad authorization request: "+r.URL.RawQuery, 400)
			return
		}
		code := f.token()
		f.codes[code] = fakeGrant{client: q.Get("client_id"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), resource: q.Get("resource"), scopes: strings.Fields(q.Get("scope"))}
		back := u.Query()
		back.Set("code", code)
		back.Set("state", q.Get("state"))
		back.Set("iss", f.as.URL)
		u.RawQuery = back.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	case "/token":
		r.ParseForm()
		id, secret, basic := r.BasicAuth()
		if !basic {
			id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		if want, ok := f.secrets[id]; ok {
			if secret != want {
				oauthErr(401, "invalid_client")
				return
			}
			f.secretUsed++
		}
		r.PostForm.Set("client_id", id)
		var g fakeGrant
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			c, ok := f.codes[r.PostForm.Get("code")]
			delete(f.codes, r.PostForm.Get("code"))
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if !ok || c.client != r.PostForm.Get("client_id") || c.redirect != r.PostForm.Get("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
				oauthErr(400, "invalid_grant")
				return
			}
			g = c
		case "refresh_token":
			c, ok := f.refresh[r.PostForm.Get("refresh_token")]
			if !ok || c.client != r.PostForm.Get("client_id") {
				oauthErr(400, "invalid_grant")
				return
			}
			delete(f.refresh, r.PostForm.Get("refresh_token"))
			g = c
		default:
			oauthErr(400, "unsupported_grant_type")
			return
		}
		g.expires = time.Now().Add(time.Hour)
		at, rt := f.jwtFor(g), f.token()
		f.access[at], f.refresh[rt] = g, g
		f.issued = append(f.issued, at, rt)
		writeJSON(200, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": 3600, "refresh_token": rt, "scope": strings.Join(g.scopes, " ")})
	case "/revoke":
		r.ParseForm()
		tok := r.PostForm.Get("token")
		delete(f.access, tok)
		delete(f.refresh, tok)
		f.revoked = append(f.revoked, tok)
		w.WriteHeader(200)
	default:
		http.NotFound(w, r)
	}
}

// urlWriter passes what berth writes on stderr through, and sends the
// URL of its "Sign in at: URL" line.
type urlWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	urls chan string
	line []byte
}

func (w *urlWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	w.line = append(w.line, p...)
	for {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			return len(p), nil
		}
		if u, ok := strings.CutPrefix(string(w.line[:i]), "Sign in at: "); ok {
			w.urls <- u
		}
		w.line = w.line[i+1:]
	}
}

// berth login --no-browser against a fake authorization server and a
// protected MCP server: the test completes the consent over HTTP (reads
// the printed URL, GETs it, the fake server redirects to berth's loopback
// listener), then berth status shows who is signed in (never a token),
// berth logout forgets and revokes, and disabling the plugin in its last
// workspace or revoking it forgets a sign-in too.
func TestLoginNoBrowser(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "no-bus"))
	f := newFakeOAuth(t)
	home := t.TempDir()
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	env := map[string]string{"BERTH_HOME": filepath.Join(home, "berth"), "HOME": home, "PATH": os.Getenv("PATH")}
	getenv := func(k string) string { return env[k] }
	var all bytes.Buffer // every output of every command
	stdin := ""
	berth := func(stderr io.Writer, args ...string) (int, string) {
		t.Helper()
		var out, errb bytes.Buffer
		var ew io.Writer = &errb
		if stderr != nil {
			ew = io.MultiWriter(&errb, stderr)
		}
		code := run(context.Background(), args, getenv, strings.NewReader(stdin), &out, ew)
		all.Write(out.Bytes())
		all.Write(errb.Bytes())
		return code, out.String() + errb.String()
	}
	must := func(args ...string) string {
		t.Helper()
		code, out := berth(nil, args...)
		if code != 0 {
			t.Fatalf("berth %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
		return out
	}

	bdir := filepath.Join(t.TempDir(), "notes")
	os.MkdirAll(bdir, 0o755)
	os.WriteFile(filepath.Join(bdir, "berth.json"), []byte(fmt.Sprintf(`{"manifestVersion": 1, "name": "acme-notes", "version": "1.0.0", "description": "a hosted notes server",
  "mcpServers": {"notes": {"remote": {"transport": "streamable-http", "url": %q, "auth": {"oauth": {"scopes": ["notes:read"]}}, "network": {"hosts": ["127.0.0.1"]}}}}}`, f.rs.URL+"/mcp")), 0o644)
	digest := strings.Fields(must("digest", bdir))
	must("trust", "--yes", "--allow-unsigned", "--digest", digest[len(digest)-1], bdir)
	must("enable", "acme-notes", "--workspace", ws)

	// Not signed in yet: status names the command.
	sts := statusOf(t, berth, ws)
	if len(sts) != 1 || sts[0].SignIn == nil || sts[0].SignIn.SignedIn || sts[0].SignIn.Login != "berth login acme-notes__notes" {
		t.Fatalf("status before login: %+v", sts)
	}
	if _, text := berth(nil, "status", "--workspace", ws); !strings.Contains(text, "acme-notes__notes  needs sign-in: berth login acme-notes__notes") {
		t.Errorf("status does not say the server needs a sign-in:\n%s", text)
	}

	login := func(extra ...string) string {
		t.Helper()
		uw := &urlWriter{urls: make(chan string, 1)}
		type result struct {
			code int
			out  string
		}
		done := make(chan result, 1)
		go func() {
			code, out := berth(uw, append([]string{"login", "acme-notes__notes", "--no-browser", "--wait", "30s"}, extra...)...)
			done <- result{code, out}
		}()
		var authURL string
		select {
		case authURL = <-uw.urls:
		case r := <-done:
			t.Fatalf("berth login ended without printing a URL: exit %d\n%s", r.code, r.out)
		case <-time.After(30 * time.Second):
			t.Fatal("berth login printed no URL in 30s")
		}
		if u, err := url.Parse(authURL); err != nil || u.Host != strings.TrimPrefix(f.as.URL, "http://") || u.Path != "/authorize" {
			t.Fatalf("the printed URL %q is not the fake authorization server's /authorize", authURL)
		}
		// The "browser": the fake server consents and redirects to
		// berth's loopback listener, which answers.
		resp, err := http.Get(authURL)
		if err != nil {
			t.Fatalf("following the sign-in URL: %v", err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Request.URL.String(), "http://127.0.0.1:") {
			t.Fatalf("the redirect ended at %s with %s: %s", resp.Request.URL, resp.Status, page)
		}
		r := <-done
		if r.code != 0 {
			t.Fatalf("berth login: exit %d\n%s", r.code, r.out)
		}
		return r.out
	}
	out := login()
	for _, want := range []string{"Signing in to " + f.rs.URL + "/mcp", "Signed in to acme-notes__notes", "notes:read", "expires in"} {
		if !strings.Contains(out, want) {
			t.Errorf("berth login's output lacks %q:\n%s", want, out)
		}
	}

	// The token is in the sign-in store (its file fallback here), where
	// the leak check below does not look.
	f.mu.Lock()
	lastAccess := f.issued[len(f.issued)-2]
	f.mu.Unlock()
	if data, err := os.ReadFile(filepath.Join(env["BERTH_HOME"], "secrets", "signin", "values.json")); !bytes.Contains(data, []byte(lastAccess)) {
		t.Errorf("the access token is not in secrets/signin/values.json (%v): the leak check would look in the wrong place", err)
	}

	// Signed in: the server runs with the token, and status says who,
	// where, which scopes and until when.
	sts = statusOf(t, berth, ws)
	si := sts[0].SignIn
	if si == nil || !si.SignedIn || si.Issuer != f.as.URL || !slices.Contains(si.Scopes, "notes:read") || time.Until(si.ExpiresAt) < 50*time.Minute || !si.Refreshable {
		t.Fatalf("status after login: %+v", si)
	}
	if si.Subject != "" && si.Subject != "alice" {
		t.Errorf("status names the subject %q, the token says alice", si.Subject)
	}
	if sts[0].State != pool.StateRunning || sts[0].Tools != 1 {
		t.Errorf("the server is %s with %d tools after login, want running with 1 (last error: %s)", sts[0].State, sts[0].Tools, sts[0].LastError)
	}
	if _, text := berth(nil, "status", "--workspace", ws); !strings.Contains(text, "acme-notes__notes  signed in") {
		t.Errorf("status does not say the server is signed in:\n%s", text)
	}

	// Logout forgets and revokes: the server confirmed.
	out = must("logout", "acme-notes")
	if !strings.Contains(out, "Signed out of acme-notes__notes") || !strings.Contains(out, "confirmed it revoked the refresh token and the access token.") || strings.Contains(out, "stays valid") {
		t.Errorf("logout says:\n%s", out)
	}
	f.mu.Lock()
	nrevoked := len(f.revoked)
	f.mu.Unlock()
	if nrevoked == 0 {
		t.Error("logout revoked nothing at the authorization server")
	}
	if sts = statusOf(t, berth, ws); sts[0].SignIn == nil || sts[0].SignIn.SignedIn {
		t.Errorf("status after logout: %+v", sts[0].SignIn)
	}

	// More scopes (--scope), with --json: the result names them, never a
	// token. Then disabled in its last workspace: the sign-in is
	// forgotten.
	out = login("--scope", "notes:write", "--json")
	var lj loginJSON
	if err := json.NewDecoder(strings.NewReader(out)).Decode(&lj); err != nil {
		t.Fatalf("login --json: %v\n%s", err, out)
	}
	if lj.Server != "acme-notes__notes" || lj.Issuer != f.as.URL || lj.Resource != f.rs.URL+"/mcp" || !slices.Contains(lj.Scopes, "notes:write") || !slices.Contains(lj.Scopes, "notes:read") || lj.ClientID == "" || !lj.Refreshable {
		t.Errorf("login --json: %+v", lj)
	}
	if strings.Contains(out, "Signing in to") {
		t.Errorf("login --json printed the text description:\n%s", out)
	}
	// Disabled in a workspace while enabled in another: kept.
	ws2, _ := filepath.EvalSymlinks(t.TempDir())
	must("enable", "acme-notes", "--workspace", ws2)
	must("disable", "acme-notes", "--workspace", ws2)
	if sts = statusOf(t, berth, ws); sts[0].SignIn == nil || !sts[0].SignIn.SignedIn {
		t.Errorf("status after disabling in another workspace: %+v, want still signed in", sts[0].SignIn)
	}
	must("disable", "acme-notes", "--workspace", ws)
	must("enable", "acme-notes", "--workspace", ws)
	if sts = statusOf(t, berth, ws); sts[0].SignIn == nil || sts[0].SignIn.SignedIn {
		t.Errorf("status after disable and enable: %+v, want not signed in", sts[0].SignIn)
	}
	// Revoked (its last version): forgotten too, with the operator's
	// client registration.
	login()
	must("revoke", "--yes", "acme-notes")
	must("trust", "--yes", "--allow-unsigned", "--digest", digest[len(digest)-1], bdir)
	must("enable", "acme-notes", "--workspace", ws)
	if sts = statusOf(t, berth, ws); sts[0].SignIn == nil || sts[0].SignIn.SignedIn {
		t.Errorf("status after revoke and trust: %+v, want not signed in", sts[0].SignIn)
	}

	// The operator's own confidential client: its secret, bound to the
	// plugin in the secret store, reaches the token endpoint; config.json
	// names it only. Revoking the plugin forgets the registration.
	stdin = "client-s3cr3t-canary\n"
	must("secret", "set", "ACME_CLIENT_SECRET", "--store", "file", "--plugin", "acme-notes")
	stdin = ""
	out = login("--client-id", "berth-at-acme", "--client-secret-from", "ACME_CLIENT_SECRET")
	if !strings.Contains(out, "client: your registration berth-at-acme (config.json)") {
		t.Errorf("login does not name the operator's client:\n%s", out)
	}
	f.mu.Lock()
	used := f.secretUsed
	f.mu.Unlock()
	if used == 0 {
		t.Error("no token request authenticated with the operator's client secret")
	}
	cfg, _ := os.ReadFile(filepath.Join(env["BERTH_HOME"], "config.json"))
	if !bytes.Contains(cfg, []byte(`"clientSecretName": "ACME_CLIENT_SECRET"`)) || bytes.Contains(cfg, []byte("client-s3cr3t-canary")) {
		t.Errorf("config.json:\n%s", cfg)
	}
	// The registration is bound to the authorization server the server
	// named when it was recorded; recorded for another one, berth refuses
	// to use it (and to send its secret) here, and says how to fix it.
	if !bytes.Contains(cfg, []byte(fmt.Sprintf(`"issuer": %q`, f.as.URL))) {
		t.Errorf("config.json does not bind the client registration to %s:\n%s", f.as.URL, cfg)
	}
	f.mu.Lock()
	f.secretUsed = 0
	f.mu.Unlock()
	code, text := berth(nil, "login", "acme-notes__notes", "--no-browser", "--wait", "5s", "--client-id", "berth-at-acme", "--client-secret-from", "ACME_CLIENT_SECRET", "--client-issuer", "https://auth.other.example")
	if code != 1 || !strings.Contains(text, "is for the authorization server https://auth.other.example, but the server names "+f.as.URL) || !strings.Contains(text, "--forget-client") {
		t.Errorf("login with a client registered at another authorization server: exit %d\n%s", code, text)
	}
	f.mu.Lock()
	used = f.secretUsed
	f.mu.Unlock()
	if used != 0 {
		t.Error("the client secret was sent to an authorization server the registration is not for")
	}
	must("revoke", "--yes", "acme-notes")
	if cfg, _ = os.ReadFile(filepath.Join(env["BERTH_HOME"], "config.json")); bytes.Contains(cfg, []byte("oauthClients")) {
		t.Errorf("config.json keeps the client registration of a revoked plugin:\n%s", cfg)
	}

	// No token anywhere: not in any output, nor in any file of
	// $BERTH_HOME but the secret store's.
	f.mu.Lock()
	issued := append(slices.Clone(f.issued), "client-s3cr3t-canary")
	f.mu.Unlock()
	if len(issued) == 0 {
		t.Fatal("the fake authorization server issued no token")
	}
	for _, tok := range issued {
		if strings.Contains(all.String(), tok) {
			t.Errorf("a token appears in berth's output:\n%s", all.String())
		}
	}
	// The file fallback's values files are the store itself (no keychain
	// answers here); every other file, the stores' indexes included, must
	// hold no token.
	values := []string{filepath.Join(env["BERTH_HOME"], "secrets", "values.json"), filepath.Join(env["BERTH_HOME"], "secrets", "signin", "values.json")}
	walked := 0
	filepath.WalkDir(env["BERTH_HOME"], func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || slices.Contains(values, p) {
			return nil
		}
		walked++
		data, _ := os.ReadFile(p)
		for _, tok := range issued {
			if bytes.Contains(data, []byte(tok)) {
				t.Errorf("%s holds a token", p)
			}
		}
		return nil
	})
	if walked < 5 {
		t.Errorf("only %d files of $BERTH_HOME were looked at", walked)
	}
}

// statusOf is berth status --json's servers.
func statusOf(t *testing.T, berth func(io.Writer, ...string) (int, string), ws string) []pool.ServerStatus {
	t.Helper()
	_, out := berth(nil, "status", "--json", "--workspace", ws)
	var s struct {
		Servers []pool.ServerStatus `json:"servers"`
	}
	dec := json.NewDecoder(bufio.NewReader(strings.NewReader(out)))
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	return s.Servers
}

// The sign-in URL comes from a server's metadata: berth shows and opens
// only an http(s) URL, opens it with the URL as one argument of the
// opener (never through a shell), and prints it on stderr either way.
func TestLoginAsk(t *testing.T) {
	var opened []string
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, openBrowser: func(u string) error { opened = append(opened, u); return nil }}
	p := signinPrompt("https://as.example/authorize?client_id=x&state=y")
	ask, closeAsk := a.loginAsk(&out, false, t.TempDir())
	defer closeAsk()
	if err := ask(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	// The browser gets a stand-in (TestAttackStateInBrowserArgument);
	// stderr, the human's own, the URL.
	if len(opened) != 1 || opened[0] == p.URL || errb.String() != "Sign in at: "+p.URL+"\n" {
		t.Errorf("opened %q, stderr %q", opened, errb.String())
	}
	opened = nil
	noBrowser, _ := a.loginAsk(&out, true, t.TempDir())
	if err := noBrowser(context.Background(), p); err != nil || len(opened) != 0 {
		t.Errorf("--no-browser opened %q (err %v)", opened, err)
	}
	for _, bad := range []string{"file:///etc/passwd", "javascript:alert(1)", "https://as.example/a b", "ms-settings:", "https:///nohost", "https://as.example/\n$(id)"} {
		errb.Reset()
		if err := ask(context.Background(), signinPrompt(bad)); err == nil || len(opened) != 0 || strings.Contains(errb.String(), "Sign in at") {
			t.Errorf("%q: err %v, opened %q, stderr %q", bad, err, opened, errb.String())
		}
	}
}

func signinPrompt(u string) signin.Prompt {
	return signin.Prompt{Target: signin.Target{Plugin: "acme", Server: "notes"}, Issuer: "https://as.example", Scopes: []string{"notes:read"}, URL: u}
}
