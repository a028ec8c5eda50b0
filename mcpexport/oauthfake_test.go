package mcpexport

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeOAuth is an OAuth-protected MCP server (the resource, "rs") and its
// authorization server ("as"), each on its own 127.0.0.1 port: protected-
// resource metadata (RFC 9728), authorization-server metadata (RFC 8414),
// dynamic registration, an authorization endpoint that approves at once
// (it redirects to the client's redirect URI with the code, the state and
// iss), a token endpoint that checks PKCE and issues refresh tokens, and
// an MCP server whose tool "whoami" needs the scope "read" and whose tool
// "admin" needs "admin" too (a 403 insufficient_scope asks for it).
type fakeOAuth struct {
	t  *testing.T
	as *httptest.Server
	rs *httptest.Server

	mu        sync.Mutex
	codes     map[string]fakeGrant // authorization code → grant
	access    map[string]fakeGrant // access token → grant
	refresh   map[string]fakeGrant // refresh token → grant
	authorize []url.Values         // the authorization requests, in order
	issued    []string             // every token issued (for leak checks)
	stepUp    string               // the 403's scope list for "admin" ("" for "read admin")
}

type fakeGrant struct {
	scopes    []string
	challenge string // the PKCE challenge, for a code
	redirect  string
	resource  string
}

func newFakeOAuth(t *testing.T) *fakeOAuth {
	t.Helper()
	f := &fakeOAuth{t: t, codes: map[string]fakeGrant{}, access: map[string]fakeGrant{}, refresh: map[string]fakeGrant{}}
	f.as = httptest.NewServer(http.HandlerFunc(f.serveAS))
	t.Cleanup(f.as.Close)

	srv := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami", Description: "who is signed in", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "signed in as alice"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "admin", Description: "needs more scope", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "admin done"}}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Description: "a greeting"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello alice"}}}}, nil
	})
	srv.AddResource(&mcp.Resource{URI: "demo://profile", Name: "profile"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "demo://profile", Text: "alice's profile"}}}, nil
	})
	mh := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{DisableLocalhostProtection: true})
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", f.servePRM)
	mux.HandleFunc("/.well-known/oauth-protected-resource", f.servePRM)
	mux.Handle("/mcp", f.guard(mh))
	f.rs = httptest.NewServer(mux)
	t.Cleanup(f.rs.Close)
	return f
}

// resource is the protected MCP endpoint, issuer the authorization server.
func (f *fakeOAuth) resource() string { return f.rs.URL + "/mcp" }
func (f *fakeOAuth) issuer() string   { return f.as.URL }

// revokeAll forgets every access and refresh token: the next request is
// a 401 and a refresh fails with invalid_grant.
func (f *fakeOAuth) revokeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.access, f.refresh = map[string]fakeGrant{}, map[string]fakeGrant{}
}

func (f *fakeOAuth) authorizations() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.authorize)
}

func (f *fakeOAuth) tokens() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.issued)
}

func (f *fakeOAuth) servePRM(w http.ResponseWriter, _ *http.Request) {
	writeJSONResponse(w, http.StatusOK, map[string]any{
		"resource":              f.resource(),
		"authorization_servers": []string{f.issuer()},
		"scopes_supported":      []string{"read"},
	})
}

// guard requires a bearer token the authorization server issued for this
// resource, and the scope "admin" for a tools/call of "admin".
func (f *fakeOAuth) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		meta := f.rs.URL + "/.well-known/oauth-protected-resource/mcp"
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		f.mu.Lock()
		g, ok := f.access[tok]
		f.mu.Unlock()
		if !ok || g.resource != f.resource() {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata=%q, scope="read"`, meta))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" && msg.Params.Name == "admin" && !slices.Contains(g.scopes, "admin") {
				f.mu.Lock()
				scope := f.stepUp
				f.mu.Unlock()
				if scope == "" {
					scope = "read admin"
				}
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q`, scope, meta))
				http.Error(w, "insufficient scope", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (f *fakeOAuth) serveAS(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration":
		writeJSONResponse(w, http.StatusOK, map[string]any{
			"issuer":                                         f.issuer(),
			"authorization_endpoint":                         f.issuer() + "/authorize",
			"token_endpoint":                                 f.issuer() + "/token",
			"registration_endpoint":                          f.issuer() + "/register",
			"response_types_supported":                       []string{"code"},
			"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported":               []string{"S256"},
			"token_endpoint_auth_methods_supported":          []string{"none"},
			"scopes_supported":                               []string{"read", "admin", "offline_access"},
			"authorization_response_iss_parameter_supported": true,
		})
	case "/register":
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		req["client_id"] = "fake-client-" + randText()
		req["token_endpoint_auth_method"] = "none"
		writeJSONResponse(w, http.StatusCreated, req)
	case "/authorize":
		q := r.URL.Query()
		f.mu.Lock()
		f.authorize = append(f.authorize, q)
		code := "code-" + randText()
		f.codes[code] = fakeGrant{scopes: strings.Fields(q.Get("scope")), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), resource: q.Get("resource")}
		f.mu.Unlock()
		if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
			http.Error(w, "PKCE S256 required", http.StatusBadRequest)
			return
		}
		to, err := url.Parse(q.Get("redirect_uri"))
		if err != nil || to.Hostname() != "127.0.0.1" {
			http.Error(w, "bad redirect_uri", http.StatusBadRequest)
			return
		}
		v := to.Query()
		v.Set("code", code)
		v.Set("state", q.Get("state"))
		v.Set("iss", f.issuer())
		to.RawQuery = v.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound)
	case "/token":
		r.ParseForm()
		f.mu.Lock()
		defer f.mu.Unlock()
		var g fakeGrant
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			c, ok := f.codes[r.PostForm.Get("code")]
			delete(f.codes, r.PostForm.Get("code"))
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge || r.PostForm.Get("redirect_uri") != c.redirect {
				writeJSONResponse(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
				return
			}
			g = c
		case "refresh_token":
			c, ok := f.refresh[r.PostForm.Get("refresh_token")]
			if !ok {
				writeJSONResponse(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "refresh token revoked"})
				return
			}
			delete(f.refresh, r.PostForm.Get("refresh_token"))
			g = c
		default:
			writeJSONResponse(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
			return
		}
		at, rt := "at-"+randText(), "rt-"+randText()
		f.access[at], f.refresh[rt] = g, g
		f.issued = append(f.issued, at, rt)
		writeJSONResponse(w, http.StatusOK, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": 3600, "refresh_token": rt, "scope": strings.Join(g.scopes, " ")})
	default:
		http.NotFound(w, r)
	}
}

func writeJSONResponse(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func randText() string { return rand.Text()[:16] }

// openInBrowser is the test's browser: it follows the authorization URL
// to the authorization server, which redirects to berth's loopback
// listener; it returns the listener's answer.
func openInBrowser(ctx context.Context, u string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(body), nil
}
