//go:build unix

package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/keyringtest"
	"github.com/berth-mcp/berth/internal/oidctest"
	"github.com/berth-mcp/berth/internal/testkit"
)

// An attacker's tests of the OAuth sign-in (issue 21), through the berth
// executable against the real authorization server of internal/oidctest.
// Each fails if its defence is removed: it watches what reached the
// attacker's side (a request, a registration, a token), not only berth's
// answer.

// hits records the requests an attacker's server received.
type hits struct {
	mu   sync.Mutex
	reqs []string // "METHOD path authorization=..."
}

func (h *hits) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		auth := r.Header.Get("Authorization")
		if len(auth) > 16 {
			auth = fmt.Sprintf("%s… (%d bytes)", auth[:16], len(auth))
		}
		h.reqs = append(h.reqs, fmt.Sprintf("%s %s authorization=%q", r.Method, r.URL.RequestURI(), auth))
		h.mu.Unlock()
		if next == nil {
			http.Error(w, "attacker", http.StatusTeapot)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (h *hits) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.reqs...)
}

// A resource's protected-resource metadata names an authorization server on
// another host. Pinned by the manifest: refused, and the other server never
// hears from berth. Not pinned: berth may go there only after naming it to
// the human. Named with http off loopback: refused, never contacted.
func TestOAuthAttackMetadataPointsElsewhere(t *testing.T) {
	other := oidctest.Start(t, oidctest.Config{IssuerHost: "localhost", Resources: []oidctest.Resource{{Name: "own"}}})
	srv := oidctest.Start(t, oidctest.Config{Resources: []oidctest.Resource{{Name: "a", AuthorizationServers: []string{other.Issuer}}}})
	otherHeard := func() int {
		return other.Count(func(e oidctest.Event) bool { return e.Event == "register" || e.Event == "token" })
	}

	t.Run("pinned", func(t *testing.T) {
		h := newOIDCHome(t)
		h.install(t, "pinned", map[string]string{"api": remoteJSON(srv.Resources["a"], fmt.Sprintf(`{"issuer": %q}`, srv.Issuer))})
		before := otherHeard()
		out, err := h.tryLogin(t, other, "pinned__api", "mallory")
		if err == nil {
			t.Fatalf("berth login signed in at %s although the manifest pins %s:\n%s", other.Issuer, srv.Issuer, out)
		}
		t.Logf("berth login: %v\n%s", err, out)
		if !strings.Contains(out, other.Issuer) || !strings.Contains(out, srv.Issuer) {
			t.Errorf("the refusal does not name both the pinned issuer %s and the metadata's %s:\n%s", srv.Issuer, other.Issuer, out)
		}
		if n := otherHeard() - before; n != 0 {
			t.Fatalf("the other authorization server got %d registration or token requests from berth", n)
		}
	})

	t.Run("unpinned", func(t *testing.T) {
		h := newOIDCHome(t)
		h.install(t, "unpinned", map[string]string{"api": remoteJSON(srv.Resources["a"], `{}`)})
		out, err := h.tryLogin(t, other, "unpinned__api", "mallory")
		t.Logf("berth login: %v\n%s", err, out)
		// If it went there (its authorization URL is at the other server),
		// it must have said so in words first, not only as the host of the
		// URL to open. (The sign-in then fails: the other server does not
		// know the resource.)
		wentThere, named := false, false
		for _, line := range strings.Split(out, "\n") {
			switch {
			case strings.Contains(line, other.Issuer+"/") && strings.Contains(line, "client_id="):
				wentThere = true
			case strings.Contains(line, other.Issuer) && !wentThere:
				named = true
			}
		}
		if wentThere && !named {
			t.Fatalf("berth login used the authorization server %s named by the resource's metadata without naming it:\n%s", other.Issuer, out)
		}
		if wentThere && !strings.Contains(out, "Signing in at "+other.Issuer+" (another host than 127.0.0.1)") {
			t.Errorf("berth login named the authorization server %s without saying it is on another host than the resource:\n%s", other.Issuer, out)
		}
		if !wentThere && err == nil {
			t.Fatalf("berth login succeeded without going to the only authorization server the resource names:\n%s", out)
		}
	})

	t.Run("http-off-loopback", func(t *testing.T) {
		ip := nonLoopbackIP(t)
		var got hits
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Skipf("cannot listen on %s: %v", ip, err)
		}
		evil := &http.Server{Handler: got.handler(nil)}
		go evil.Serve(ln)
		t.Cleanup(func() { evil.Close() })
		evilIssuer := "http://" + ln.Addr().String()
		rs := oidctest.Start(t, oidctest.Config{Resources: []oidctest.Resource{{Name: "a", AuthorizationServers: []string{evilIssuer}}}})
		h := newOIDCHome(t)
		h.install(t, "plain", map[string]string{"api": remoteJSON(rs.Resources["a"], `{}`)})
		out, err := h.tryLogin(t, rs, "plain__api", "mallory")
		if err == nil {
			t.Fatalf("berth login succeeded with an http authorization server off loopback (%s):\n%s", evilIssuer, out)
		}
		t.Logf("berth login: %v\n%s", err, out)
		if !strings.Contains(out, evilIssuer) {
			t.Errorf("the refusal does not name %s:\n%s", evilIssuer, out)
		}
		if r := got.all(); len(r) != 0 {
			t.Fatalf("berth sent %d request(s) over plain http to %s: %q", len(r), evilIssuer, r)
		}
	})
}

// nonLoopbackIP is an IPv4 address of this machine that is not loopback.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address to serve an attacker's http authorization server on")
	return ""
}

// fakeAS is an authorization server that lies: its metadata or its
// authorization response names another issuer. It never answers the token
// endpoint with anything berth could use, and records every request.
func fakeAS(t *testing.T, metadataIssuer, responseIss func(self string) string) (*httptest.Server, *hits) {
	t.Helper()
	var got hits
	mux := http.NewServeMux()
	var self string
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                         metadataIssuer(self),
			"authorization_endpoint":                         self + "/authorize",
			"token_endpoint":                                 self + "/token",
			"registration_endpoint":                          self + "/register",
			"response_types_supported":                       []string{"code"},
			"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported":               []string{"S256"},
			"token_endpoint_auth_methods_supported":          []string{"none"},
			"authorization_response_iss_parameter_supported": true,
		})
	})
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		json.NewDecoder(r.Body).Decode(&m)
		m["client_id"] = "fake-client"
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(m)
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		u := q.Get("redirect_uri") + "?" + (urlValues{"code": "fake-code", "state": q.Get("state"), "iss": responseIss(self)}).encode()
		http.Redirect(w, r, u, http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token": "fake-access-token-from-a-lying-server", "token_type": "Bearer", "expires_in": 3600}`)
	})
	s := httptest.NewServer(got.handler(mux))
	self = s.URL
	t.Cleanup(s.Close)
	return s, &got
}

type urlValues map[string]string

func (v urlValues) encode() string {
	var parts []string
	for _, k := range []string{"code", "state", "iss"} {
		parts = append(parts, k+"="+urlQueryEscape(v[k]))
	}
	return strings.Join(parts, "&")
}

func urlQueryEscape(s string) string {
	r := strings.NewReplacer("%", "%25", "&", "%26", "=", "%3D", "+", "%2B", " ", "%20", "#", "%23", "?", "%3F")
	return r.Replace(s)
}

// The authorization response's iss (RFC 9207) or the server metadata's
// issuer (RFC 8414) does not match: berth refuses, naming it, and never
// redeems the code (the token endpoint is never asked).
func TestOAuthAttackIssuerMismatch(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		metadataIssuer, iss   func(string) string
		want                  string
		registrationForbidden bool
	}{
		{"iss", func(s string) string { return s }, func(string) string { return "http://127.0.0.1:1" }, "iss", false},
		{"metadata-issuer", func(string) string { return "http://127.0.0.1:1" }, func(s string) string { return s }, "issuer", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as, got := fakeAS(t, tc.metadataIssuer, tc.iss)
			srv := oidctest.Start(t, oidctest.Config{Resources: []oidctest.Resource{{Name: "a", AuthorizationServers: []string{as.URL}}}})
			h := newOIDCHome(t)
			h.install(t, "liar", map[string]string{"api": remoteJSON(srv.Resources["a"], `{}`)})
			out, err := h.tryLoginAt(t, as.URL, "liar__api")
			if err == nil {
				t.Fatalf("berth login succeeded against a server whose %s does not match:\n%s", tc.name, out)
			}
			t.Logf("berth login: %v\n%s", err, out)
			if !strings.Contains(out, tc.want) {
				t.Errorf("the refusal does not mention %s:\n%s", tc.want, out)
			}
			for _, r := range got.all() {
				if strings.HasPrefix(r, "POST /token") {
					t.Fatalf("berth redeemed the code at the lying server: %s", r)
				}
				if tc.registrationForbidden && strings.HasPrefix(r, "POST /register") {
					t.Fatalf("berth registered at a server whose metadata names another issuer: %s", r)
				}
			}
		})
	}
}

// tryLoginAt runs berth login and opens the authorization URL at base it
// prints with a plain client (no consent pages), following redirects to
// the loopback listener.
func (h *oidcHome) tryLoginAt(t *testing.T, base, target string) (string, error) {
	t.Helper()
	srv := &oidctest.Server{Issuer: base}
	return h.tryLoginWith(t, srv, target, func(u string) error {
		c := &http.Client{Timeout: 20 * time.Second}
		resp, err := c.Get(u)
		if err != nil {
			return nil // berth's listener may refuse: its answer is what counts
		}
		resp.Body.Close()
		return nil
	})
}

// A resource that redirects a call to another origin: the token does not
// follow (and the call fails rather than silently reaching the other
// origin).
func TestOAuthAttackRedirectCarriesToken(t *testing.T) {
	var got hits
	sink := httptest.NewServer(got.handler(nil))
	t.Cleanup(sink.Close)
	srv := oidctest.Start(t, oidctest.Config{Resources: []oidctest.Resource{{Name: "r", RedirectTo: sink.URL + "/mcp"}}})
	h := newOIDCHome(t)
	h.install(t, "redir", map[string]string{"api": remoteJSON(srv.Resources["r"], fmt.Sprintf(`{"issuer": %q}`, srv.Issuer))})
	h.login(t, srv, "redir__api", "alice")
	s := h.serve(t)
	text, isErr := s.call(t, "redir__api__whoami")
	s.close(t)
	if n := srv.Count(func(e oidctest.Event) bool {
		return e.Event == "mcp" && e.Bearer && e.Status == http.StatusTemporaryRedirect
	}); n == 0 {
		t.Fatalf("the resource never redirected a request with a token; the test proves nothing (call: %v %s)", isErr, text)
	}
	for _, r := range got.all() {
		if !strings.HasSuffix(r, `authorization=""`) {
			t.Fatalf("the token followed a redirect to another origin: %s", r)
		}
	}
	if !isErr {
		t.Errorf("a call redirected to another origin succeeded: %s", text)
	}
}

// A token issued for resource A is never sent to resource B: not by
// another plugin whose server is B, and not by another plugin whose server
// has A's very URL (a plugin never uses another plugin's sign-in).
func TestOAuthAttackTokenReplay(t *testing.T) {
	srv := oidctest.Start(t, oidctest.Config{Resources: []oidctest.Resource{{Name: "a"}, {Name: "b"}}})
	h := newOIDCHome(t)
	pin := fmt.Sprintf(`{"issuer": %q}`, srv.Issuer)
	h.install(t, "pa", map[string]string{"api": remoteJSON(srv.Resources["a"], pin)})
	h.install(t, "pb", map[string]string{"api": remoteJSON(srv.Resources["b"], pin)})
	h.install(t, "twin", map[string]string{"api": remoteJSON(srv.Resources["a"], pin)})
	h.login(t, srv, "pa__api", "alice")

	s := h.serve(t)
	if text, isErr := s.call(t, "pa__api__whoami"); isErr || !strings.Contains(text, `"sub":"alice"`) {
		t.Fatalf("pa's call (error %v): %s", isErr, text)
	}
	srv.Wait(t, 10*time.Second, 1, "pa's call", oidctest.IsCall("a"))
	time.Sleep(500 * time.Millisecond) // the provider's last events of pa's call
	bearersAtA := srv.Count(func(e oidctest.Event) bool { return e.Event == "mcp" && e.Resource == "a" && e.Bearer })
	if text, isErr := s.call(t, "pb__api__whoami"); !isErr || !strings.Contains(text, "berth login pb__api") {
		t.Errorf("pb's call without its own sign-in (error %v): %s; want an error naming berth login pb__api", isErr, text)
	}
	if text, isErr := s.call(t, "twin__api__whoami"); !isErr || !strings.Contains(text, "berth login twin__api") {
		t.Errorf("twin's call (the same URL as pa) without its own sign-in (error %v): %s; want an error naming berth login twin__api", isErr, text)
	}
	time.Sleep(500 * time.Millisecond)
	if n := srv.Count(func(e oidctest.Event) bool { return e.Event == "mcp" && e.Resource == "a" && e.Bearer }); n != bearersAtA {
		t.Errorf("twin's call sent %d request(s) with a token to resource a: pa's sign-in was used by another plugin", n-bearersAtA)
	}
	s.close(t)

	// Signed in to b too: b only ever gets tokens for b.
	h.login(t, srv, "pb__api", "bob")
	s = h.serve(t)
	if text, isErr := s.call(t, "pb__api__whoami"); isErr || !strings.Contains(text, `"sub":"bob"`) {
		t.Fatalf("pb's call after its sign-in (error %v): %s", isErr, text)
	}
	s.close(t)
	srv.Wait(t, 10*time.Second, 1, "pb's call", oidctest.IsCall("b"))
	for _, e := range srv.Events() {
		if e.Event == "mcp" && e.Resource == "b" && e.Bearer && fmt.Sprint(e.Aud) != srv.Resources["b"] {
			t.Errorf("resource b got a token for %v", e.Aud)
		}
	}
}

// A server whose protected-resource metadata claims another server's URL
// as its resource, to be given a token for it (and replay it there):
// berth refuses to sign in (a resource mismatch); the provider issues no
// token, and neither server gets one.
func TestOAuthAttackResourceClaimsAnother(t *testing.T) {
	srv := oidctest.Start(t, oidctest.Config{Resources: []oidctest.Resource{{Name: "a"}, {Name: "b", ClaimResourceOf: "a"}}})
	h := newOIDCHome(t)
	h.install(t, "pb", map[string]string{"api": remoteJSON(srv.Resources["b"], fmt.Sprintf(`{"issuer": %q}`, srv.Issuer))})
	out, err := h.tryLogin(t, srv, "pb__api", "alice")
	t.Logf("berth login: %v\n%s", err, out)
	if err == nil {
		t.Fatalf("berth login signed in to %s for the resource %s its metadata claims", srv.Resources["b"], srv.Resources["a"])
	}
	if !strings.Contains(out, srv.Resources["a"]) {
		t.Errorf("the refusal does not name the claimed resource %s", srv.Resources["a"])
	}
	time.Sleep(500 * time.Millisecond) // the provider's last events
	for _, e := range srv.Events() {
		if e.Event == "token" || (e.Event == "mcp" && e.Bearer) {
			t.Errorf("a token was issued or sent: %+v", e)
		}
	}
}

// After a full sign-in, calls, a refresh and a stdio server's call, no
// access or refresh token is anywhere but the secret store: not in any
// output of berth (status --json, logs, review, serve's stderr), a file
// under $BERTH_HOME (config.json, state.json, the audit, logs, client
// configs), the workspace or HOME, the argv or environment of any process
// while serve runs, or a stdio server's environment; and another local
// user (nobody, via setpriv) cannot read it from the store.
//
// berth has no log-level setting: every log it writes is checked.
//
// Run with the file store (no Secret Service: the tokens are in the
// store's files, mode 0600, and nowhere else) and with the keychain (a
// private Secret Service: the tokens are in no file at all).
func TestOAuthAttackTokenLeaks(t *testing.T) {
	bin := t.TempDir()
	buildPrograms(t, bin, "github.com/berth-mcp/berth/pool/internal/testserver/berth-testserver")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Run("file", func(t *testing.T) { tokenLeaks(t, nil) })
	t.Run("keychain", func(t *testing.T) {
		svc := keyringtest.Start(t)
		tokenLeaks(t, []string{"DBUS_SESSION_BUS_ADDRESS=" + svc.Address})
	})
}

// tokenLeaks is TestOAuthAttackTokenLeaks with the keychain's variables
// (nil: the file store).
func tokenLeaks(t *testing.T, keychain []string) {
	srv := oidctest.Start(t, oidctest.Config{AccessTokenTTL: 3, Resources: []oidctest.Resource{{Name: "a"}}})
	h := newOIDCHome(t)
	h.env = append(h.env, keychain...)
	h.install(t, "leaky", map[string]string{
		"api":   remoteJSON(srv.Resources["a"], fmt.Sprintf(`{"issuer": %q}`, srv.Issuer)),
		"local": `{"stdio": {"command": "berth-testserver", "args": ["-tools", "env"]}}`,
	})
	h.login(t, srv, "leaky__api", "alice")

	s := h.serve(t)
	if text, isErr := s.call(t, "leaky__api__whoami"); isErr {
		t.Fatalf("whoami: %s", text)
	}
	time.Sleep(4 * time.Second)
	if text, isErr := s.call(t, "leaky__api__whoami"); isErr {
		t.Fatalf("whoami after expiry: %s", text)
	}
	srv.Wait(t, 10*time.Second, 1, "refresh grant", oidctest.IsToken("refresh_token"))
	env, _ := s.call(t, "leaky__local__env")
	// Every process's argv and environment, while serve runs.
	procs := procTexts(t)
	s.close(t)

	for _, args := range [][]string{
		{"status", "--workspace", h.ws}, {"status", "--workspace", h.ws, "--json"},
		{"logs", "leaky__api"}, {"logs", "leaky__api", "--json"},
		{"tools", "--workspace", h.ws, "--json"}, {"list", "--json"},
		{"secret", "list"}, {"secret", "list", "--json"},
		{"connect", "claude-code", "--workspace", h.ws},
	} {
		h.berth(t, args...)
	}
	// (tools, status and list start the pool, which may refresh again:
	// read what the provider issued after them.)
	access, refresh := srv.Tokens(t)
	tokens := append(access, refresh...)
	if len(access) < 2 || len(refresh) < 2 {
		t.Fatalf("the provider issued %d access and %d refresh tokens; want a sign-in and a refresh", len(access), len(refresh))
	}
	leaks := func(where string, data []byte) {
		t.Helper()
		for i, tok := range tokens {
			if bytes.Contains(data, []byte(tok)) {
				kind := "access"
				if i >= len(access) {
					kind = "refresh"
				}
				t.Errorf("%s holds an %s token", where, kind)
			}
		}
	}
	leaks("the output of berth's commands", h.outputs.Bytes())
	leaks("a stdio server's environment", []byte(env))
	for p, text := range procs {
		leaks(p, text)
	}
	if _, err := os.Stat(filepath.Join(h.berthHome, "audit.log")); err != nil {
		t.Errorf("no audit log, so the test proves nothing about it: %v", err)
	}

	// Files: everything but the secret store's own files, which must be
	// private to the user.
	store := filepath.Join(h.berthHome, "secrets")
	var inStore int
	for _, root := range []string{h.berthHome, h.ws, h.home} {
		filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			if keychain == nil && strings.HasPrefix(p, store+string(filepath.Separator)) {
				if containsAny(data, tokens) {
					inStore++
					if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o077 != 0 {
						t.Errorf("%s holds a token and is mode %v; want 0600", p, fi.Mode().Perm())
					}
				}
				return nil
			}
			leaks(p, data)
			return nil
		})
	}
	if keychain != nil {
		return // in no file at all: checked above
	}
	if inStore == 0 {
		var files []string
		filepath.WalkDir(h.berthHome, func(p string, de fs.DirEntry, err error) error {
			if err == nil && !de.IsDir() {
				files = append(files, p)
			}
			return nil
		})
		t.Errorf("no file of the secret store (%s) holds the tokens; where are they? files: %q", store, files)
	}

	// Another local user.
	t.Run("nobody", func(t *testing.T) {
		testkit.NeedRoot(t, "to run a program as user nobody")
		setpriv := testkit.NeedSetpriv(t)
		// Open every directory above BERTH_HOME, so that only berth's own
		// modes protect what is inside.
		for d := filepath.Dir(h.berthHome); ; d = filepath.Dir(d) {
			if fi, err := os.Stat(d); err == nil {
				os.Chmod(d, fi.Mode().Perm()|0o755)
			}
			if d == filepath.Dir(h.root) || d == "/" {
				break
			}
		}
		// A control: nobody can read a readable file beside BERTH_HOME, so
		// what it cannot read inside is berth's doing.
		control := filepath.Join(h.home, "control")
		os.WriteFile(control, []byte("readable"), 0o644)
		if out, err := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "cat", control).CombinedOutput(); err != nil || string(out) != "readable" {
			t.Fatalf("user nobody cannot read %s either (%v: %s): the test proves nothing", control, err, out)
		}
		var tried int
		filepath.WalkDir(h.berthHome, func(p string, de fs.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return nil
			}
			tried++
			out, _ := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "cat", p).CombinedOutput()
			if containsAny(out, tokens) {
				t.Errorf("user nobody read a token from %s", p)
			}
			return nil
		})
		if tried == 0 {
			t.Fatal("no file under BERTH_HOME")
		}
	})
}

func containsAny(data []byte, tokens []string) bool {
	for _, tok := range tokens {
		if bytes.Contains(data, []byte(tok)) {
			return true
		}
	}
	return false
}

// procTexts returns the argv and environment of every process this user
// can read, by /proc path.
func procTexts(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil || len(dirs) == 0 {
		t.Skip("no /proc")
	}
	for _, d := range dirs {
		for _, f := range []string{"cmdline", "environ"} {
			if b, err := os.ReadFile(filepath.Join(d, f)); err == nil {
				out[filepath.Join(d, f)] = b
			}
		}
	}
	return out
}
