package importer

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
)

// TestClaudeOAuthMapped: a remote's Claude Code oauth settings become its
// auth.oauth (before issue 21 every one was refused with
// claude-plugin-remote-auth): clientId, callbackPort → redirectPort,
// authServerMetadataUrl → the issuer pinned, scopes split at spaces; a key
// Claude Code does not define is listed as not carried over; "oauth": {}
// is "oauth": {}.
func TestClaudeOAuthMapped(t *testing.T) {
	dir := writePlugin(t, `{"name": "p", "version": "1.0.0", "description": "d"}`, map[string]string{
		".mcp.json": `{"mcpServers": {
		  "a": {"type": "http", "url": "https://mcp.example.com/mcp", "oauth": {"clientId": "Iv1.0123abcd", "callbackPort": 33418, "authServerMetadataUrl": "https://example.com/.well-known/openid-configuration", "scopes": "  repo\tread:org  ", "xaa": false, "extra": 1}},
		  "b": {"type": "sse", "url": "https://sse.example.com/sse", "headers": {"X-Team": "${TEAM}"}, "oauth": {}}}}`,
	})
	b := openValid(t, dir)
	a := b.Manifest.MCPServers["a"].Remote.Auth
	if a == nil || a.OAuth == nil || a.BearerFromEnv != "" {
		t.Fatalf("auth %+v", a)
	}
	want := bundle.OAuth{Scopes: []string{"repo", "read:org"}, ClientID: "Iv1.0123abcd", RedirectPort: 33418, Issuer: "https://example.com"}
	if got := *a.OAuth; !slices.Equal(got.Scopes, want.Scopes) || got.ClientID != want.ClientID || got.RedirectPort != want.RedirectPort || got.Issuer != want.Issuer {
		t.Errorf("oauth %+v, want %+v", got, want)
	}
	bo := b.Manifest.MCPServers["b"].Remote
	if bo.Auth == nil || bo.Auth.OAuth == nil || len(bo.Auth.OAuth.Scopes) != 0 || bo.Auth.OAuth.Issuer != "" || bo.Headers["X-Team"].FromEnv != "TEAM" {
		t.Errorf("server b: %+v %+v", bo.Auth, bo.Headers)
	}
	var unknown []string
	for _, n := range b.Manifest.ImportedFrom.NotCarriedOver {
		if n.Kind == "unknown-field" {
			unknown = append(unknown, n.Field)
		}
	}
	if !slices.Equal(unknown, []string{".mcp.json: mcpServers.a.oauth.extra"}) {
		t.Errorf("not carried over: %v", unknown)
	}
}

// TestClaudeOAuthRefused: what berth cannot carry over is refused with
// the reason, at the source's own field.
func TestClaudeOAuthRefused(t *testing.T) {
	for _, c := range []struct {
		name, server string
		want         []string
	}{
		{"xaa", `"oauth": {"xaa": true}`, []string{"claude-plugin-remote-auth\t.mcp.json: mcpServers.s.oauth.xaa"}},
		{"http metadata", `"oauth": {"authServerMetadataUrl": "http://as.example.com/.well-known/oauth-authorization-server"}`, []string{"claude-plugin-remote-auth\t.mcp.json: mcpServers.s.oauth.authServerMetadataUrl"}},
		{"other metadata path", `"oauth": {"authServerMetadataUrl": "https://as.example.com/metadata"}`, []string{"claude-plugin-remote-auth\t.mcp.json: mcpServers.s.oauth.authServerMetadataUrl"}},
		{"metadata query", `"oauth": {"authServerMetadataUrl": "https://as.example.com/.well-known/openid-configuration?x=1"}`, []string{"claude-plugin-remote-auth\t.mcp.json: mcpServers.s.oauth.authServerMetadataUrl"}},
		{"empty scopes", `"oauth": {"scopes": " "}`, []string{"claude-plugin-remote-auth\t.mcp.json: mcpServers.s.oauth.scopes"}},
		{"scopes array", `"oauth": {"scopes": ["repo"]}`, []string{"claude-plugin-wrong-type\t.mcp.json: mcpServers.s.oauth.scopes"}},
		{"fractional port", `"oauth": {"callbackPort": 8080.5}`, []string{"claude-plugin-wrong-type\t.mcp.json: mcpServers.s.oauth.callbackPort"}},
		{"privileged port", `"oauth": {"callbackPort": 443}`, []string{"oauth-redirect-port\t.mcp.json: mcpServers.s.oauth.callbackPort"}},
		{"secret client", `"oauth": {"clientId": "ghp_0123456789abcdef"}`, []string{"oauth-client-id\t.mcp.json: mcpServers.s.oauth.clientId"}},
		{"scope twice", `"oauth": {"scopes": "repo repo"}`, []string{"oauth-scope\t.mcp.json: mcpServers.s.oauth.scopes"}},
		{"beside a bearer token", `"headers": {"Authorization": "Bearer ${TOKEN}"}, "oauth": {}`, []string{"oauth-exclusive\t.mcp.json: mcpServers.s.oauth"}},
		{"not an object", `"oauth": true`, []string{"claude-plugin-wrong-type\t.mcp.json: mcpServers.s.oauth"}},
		{"on a stdio server", `"command": "node", "oauth": {}`, []string{"claude-plugin-server-type\t.mcp.json: mcpServers.s.oauth"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			typ := `"type": "http", "url": "https://mcp.example.com/mcp", `
			if strings.Contains(c.server, `"command"`) {
				typ = ""
			}
			dir := writePlugin(t, `{"name": "p", "version": "1.0.0", "description": "d"}`, map[string]string{
				".mcp.json": `{"mcpServers": {"s": {` + typ + c.server + `}}}`,
			})
			lines, ie := openInvalid(t, dir)
			if !slices.Equal(lines, c.want) {
				t.Errorf("problems %q, want %q\n%v", lines, c.want, ie)
			}
			if strings.Contains(ie.Error(), "ghp_0123") {
				t.Errorf("the secret-looking client ID is shown: %v", ie)
			}
		})
	}
}

func TestIssuerOfMetadataURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://as.example.com/.well-known/oauth-authorization-server", "https://as.example.com"},
		{"https://as.example.com/.well-known/oauth-authorization-server/tenant/1", "https://as.example.com/tenant/1"},
		{"https://as.example.com/.well-known/openid-configuration", "https://as.example.com"},
		{"https://as.example.com/.well-known/openid-configuration/tenant", "https://as.example.com/tenant"},
		{"https://login.example.com/tenant/v2.0/.well-known/openid-configuration", "https://login.example.com/tenant/v2.0"},
		{"https://as.example.com:8443/.well-known/oauth-authorization-server", "https://as.example.com:8443"},
		{"https://as.example.com/.well-known/oauth-authorization-server-x", ""},
		{"https://as.example.com/oauth/metadata", ""},
		{"https://as.example.com/", ""},
		{"http://as.example.com/.well-known/oauth-authorization-server", ""},
		{"http://127.0.0.1/.well-known/oauth-authorization-server", ""},
		{"https://u:p@as.example.com/.well-known/oauth-authorization-server", ""},
		{"https://as.example.com/.well-known/oauth-authorization-server#x", ""},
		{"https://as.example.com/.well-known/oauth-authorization-server?", ""},
	} {
		got, why := issuerOfMetadataURL(c.in)
		if got != c.want || (got == "") == (why == "") {
			t.Errorf("issuerOfMetadataURL(%q) = %q, %q; want %q", c.in, got, why, c.want)
		}
	}
}

// FuzzIssuerOfMetadataURL: an issuer derived from a metadata URL is a
// valid pinned issuer on the metadata URL's own origin, and its
// well-known metadata location is the URL (RFC 8414 or OIDC).
func FuzzIssuerOfMetadataURL(f *testing.F) {
	for _, s := range []string{"https://as.example.com/.well-known/oauth-authorization-server/t", "https://as/x/.well-known/openid-configuration", "https://as/.well-known/openid-configuration/", "https://ａs/.well-known/openid-configuration", "https://as/%2e%2e/.well-known/openid-configuration"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		iss, why := issuerOfMetadataURL(s)
		if iss == "" {
			if why == "" {
				t.Fatalf("%q refused without a reason", s)
			}
			return
		}
		if _, err := bundle.ParseIssuer(iss); err != nil {
			t.Fatalf("%q → %q, which berth does not accept: %v", s, iss, err)
		}
		mu, _ := url.Parse(s)
		iu, _ := url.Parse(iss)
		if mu.Scheme != "https" || iu.Scheme != "https" || iu.Host != mu.Host {
			t.Fatalf("%q → %q: another origin", s, iss)
		}
		ip := iu.EscapedPath()
		candidates := []string{
			"/.well-known/oauth-authorization-server" + ip,
			"/.well-known/openid-configuration" + ip,
			strings.TrimSuffix(ip, "/") + "/.well-known/openid-configuration",
			ip + "/.well-known/openid-configuration",
		}
		if !slices.Contains(candidates, mu.EscapedPath()) {
			t.Fatalf("%q → %q, whose metadata is not at that path", s, iss)
		}
	})
}

// TestClaudeRemoteMayAsk: Claude Code signs in to any remote that answers
// 401 with its protected-resource metadata, so a remote that sends no
// credential (no Authorization header, no header named like a credential,
// no headersHelper) imports as "oauth": {}; one that sends one does not.
func TestClaudeRemoteMayAsk(t *testing.T) {
	dir := writePlugin(t, `{"name": "p", "version": "1.0.0", "description": "d"}`, map[string]string{
		".mcp.json": `{"mcpServers": {
		  "notion": {"type": "http", "url": "https://mcp.notion.com/mcp"},
		  "region": {"type": "http", "url": "https://r.example.com/mcp", "headers": {"X-Region": "${REGION}"}},
		  "keyed": {"type": "http", "url": "https://k.example.com/mcp", "headers": {"X-API-Key": "${K}"}},
		  "bearer": {"type": "sse", "url": "https://b.example.com/sse", "headers": {"Authorization": "Bearer ${B}"}}}}`,
	})
	b := openValid(t, dir)
	for name, want := range map[string]bool{"notion": true, "region": true, "keyed": false, "bearer": false} {
		a := b.Manifest.MCPServers[name].Remote.Auth
		if got := a != nil && a.OAuth != nil; got != want {
			t.Errorf("%s: oauth %v, want %v (auth %+v)", name, got, want, a)
		}
	}
}
