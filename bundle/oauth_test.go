package bundle

import (
	"errors"
	"strings"
	"testing"
	"unicode"
)

// TestOAuthValidation: auth.oauth is optional in every field, and each
// field is refused with its own rule, at its own path, when it is not what
// a sign-in needs.
func TestOAuthValidation(t *testing.T) {
	remote := func(auth map[string]any, headers map[string]any) map[string]any {
		r := map[string]any{
			"transport": "streamable-http", "url": "https://mcp.example.com/v1",
			"auth": auth, "network": map[string]any{"hosts": []string{"mcp.example.com"}},
		}
		if headers != nil {
			r["headers"] = headers
		}
		return map[string]any{
			"manifestVersion": 1, "name": "x", "version": "1.0.0", "description": "d",
			"mcpServers": map[string]any{"s": map[string]any{"remote": r}},
		}
	}
	oauth := func(o map[string]any) map[string]any { return map[string]any{"oauth": o} }
	const P = "mcpServers.s.remote.auth.oauth"
	cases := []struct {
		name     string
		manifest map[string]any
		rule     string // "" for valid
		path     string
	}{
		{"empty", remote(oauth(map[string]any{}), nil), "", ""},
		{"every field", remote(oauth(map[string]any{"scopes": []string{"repo", "read:org", "offline_access"}, "clientId": "Iv1.8a61f9b3a7aba766", "redirectPort": 8976, "issuer": "https://github.com/login/oauth"}), map[string]any{"X-Team": map[string]any{"fromEnv": "T"}}), "", ""},
		{"GUID client", remote(oauth(map[string]any{"clientId": "0f8fad5b-d9cb-469f-a165-70867728950e"}), nil), "", ""},
		{"GitHub app client", remote(oauth(map[string]any{"clientId": "Ov23liAbCdEf0123456789"}), nil), "", ""},
		{"metadata document client", remote(oauth(map[string]any{"clientId": "https://berth.example/client.json"}), nil), "", ""},
		{"loopback issuer", remote(oauth(map[string]any{"issuer": "http://127.0.0.1:9000/realms/test"}), nil), "", ""},
		{"bearer too", remote(map[string]any{"oauth": map[string]any{}, "bearerFromEnv": "T"}, nil), RuleOAuthExclusive, P},
		{"Authorization header", remote(oauth(map[string]any{}), map[string]any{"AUTHORIZATION": map[string]any{"fromEnv": "T"}}), RuleOAuthExclusive, "mcpServers.s.remote.headers.AUTHORIZATION"},
		{"scope with space", remote(oauth(map[string]any{"scopes": []string{"a b"}}), nil), RuleOAuthScope, P + ".scopes[0]"},
		{"scope with tab", remote(oauth(map[string]any{"scopes": []string{"a\tb"}}), nil), RuleControlCharacter, P + ".scopes[0]"},
		{"scope with quote", remote(oauth(map[string]any{"scopes": []string{`a"b`}}), nil), RuleOAuthScope, P + ".scopes[0]"},
		{"scope not ASCII", remote(oauth(map[string]any{"scopes": []string{"lecture:élève"}}), nil), RuleOAuthScope, P + ".scopes[0]"},
		{"scope twice", remote(oauth(map[string]any{"scopes": []string{"a", "b", "a"}}), nil), RuleOAuthScope, P + ".scopes"},
		{"empty client", remote(oauth(map[string]any{"clientId": ""}), nil), RuleOAuthClientID, P + ".clientId"},
		{"long client", remote(oauth(map[string]any{"clientId": strings.Repeat("a", 256)}), nil), RuleOAuthClientID, P + ".clientId"},
		{"JWT client", remote(oauth(map[string]any{"clientId": "eyJhbGciOiJIUzI1NiJ9.e30.x"}), nil), RuleOAuthClientID, P + ".clientId"},
		{"Slack token client", remote(oauth(map[string]any{"clientId": "xoxb-1234-5678-abcdefghijklmnop"}), nil), RuleOAuthClientID, P + ".clientId"},
		{"URL with password client", remote(oauth(map[string]any{"clientId": "https://u:p@berth.example/c"}), nil), RuleOAuthClientID, P + ".clientId"},
		{"port zero written", remote(oauth(map[string]any{"redirectPort": 0}), nil), RuleOAuthRedirectPort, P + ".redirectPort"},
		{"port 65536", remote(oauth(map[string]any{"redirectPort": 65536}), nil), RuleOAuthRedirectPort, P + ".redirectPort"},
		{"empty issuer", remote(oauth(map[string]any{"issuer": ""}), nil), RuleOAuthIssuer, P + ".issuer"},
		{"relative issuer", remote(oauth(map[string]any{"issuer": "login.example.com"}), nil), RuleOAuthIssuer, P + ".issuer"},
		{"issuer with fragment", remote(oauth(map[string]any{"issuer": "https://login.example.com/#x"}), nil), RuleOAuthIssuer, P + ".issuer"},
		{"issuer with empty query", remote(oauth(map[string]any{"issuer": "https://login.example.com/?"}), nil), RuleOAuthIssuer, P + ".issuer"},
		{"issuer with user", remote(oauth(map[string]any{"issuer": "https://admin@login.example.com"}), nil), RuleOAuthIssuer, P + ".issuer"},
		{"issuer ftp", remote(oauth(map[string]any{"issuer": "ftp://login.example.com"}), nil), RuleOAuthIssuer, P + ".issuer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := openManifest(t, c.manifest)
			if c.rule == "" {
				if err != nil {
					t.Fatalf("a valid declaration is refused: %v", err)
				}
				return
			}
			var ie *InvalidError
			if !errors.As(err, &ie) || len(ie.Problems) != 1 || ie.Problems[0].Rule != c.rule || ie.Problems[0].Path != c.path {
				t.Fatalf("Open = %v; want one %s at %s", err, c.rule, c.path)
			}
			m := ie.Problems[0].Message
			if strings.ContainsFunc(m, unicode.IsControl) {
				t.Errorf("the message prints a control character: %q", m)
			}
			for _, secret := range []string{"eyJhbGciOiJIUzI1NiJ9", "xoxb-1234", "u:p@"} {
				if strings.Contains(m, secret) {
					t.Errorf("the message shows the secret-looking value: %s", m)
				}
			}
		})
	}
}

// FuzzParseIssuer: an issuer berth accepts is an absolute https URL (http
// only on loopback) without query, fragment or user name, whatever the
// input.
func FuzzParseIssuer(f *testing.F) {
	for _, s := range []string{"https://login.example.com", "https://login.example.com/tenant/", "http://127.0.0.1:8080", "http://[::1]/x", "https://a@b", "https://x/?", "https://x/#", "HTTPS://X.EXAMPLE", "https://ｘ.example", "https://x:0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ep, err := ParseIssuer(s)
		if err != nil {
			if !strings.Contains(err.Error(), "["+RuleOAuthIssuer+"]") {
				t.Fatalf("ParseIssuer(%q) = %v, not an %s problem", s, err, RuleOAuthIssuer)
			}
			return
		}
		u := ep.URL
		if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil || strings.ContainsAny(s, "?#") {
			t.Fatalf("ParseIssuer(%q) accepted a query, fragment or user name", s)
		}
		if !(strings.EqualFold(u.Scheme, "https") || strings.EqualFold(u.Scheme, "http") && ep.Loopback) {
			t.Fatalf("ParseIssuer(%q) accepted scheme %q on host %q", s, u.Scheme, ep.Host)
		}
		if ClientIDProblem(s) == "" && strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
			t.Fatalf("ClientIDProblem(%q) accepted a space or a character outside printable ASCII", s)
		}
	})
}
