package importer

import (
	"context"
	"fmt"
	"testing"
)

// TestServerJSONRemoteOAuth: server.json has no field for OAuth, so a
// remote that sends no credential header imports as "oauth": {} (it may
// ask for a sign-in, discovered when it answers 401 with its
// protected-resource metadata); one that sends a credential (a bearer
// token, an Authorization header, a header marked isSecret or named like
// a credential) does not sign in.
func TestServerJSONRemoteOAuth(t *testing.T) {
	const doc = `{"$schema": "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json",
	  "name": "io.github.acme/tracker", "description": "Tracker", "version": "1.0.0",
	  "remotes": [{"type": "streamable-http", "url": "https://mcp.acme.example/mcp"%s}]}`
	for _, c := range []struct {
		name, headers    string
		oauth, hasBearer bool
	}{
		{"no headers", ``, true, false},
		{"a plain header", `, "headers": [{"name": "X-Region", "description": "region"}]`, true, false},
		{"a bearer token", `, "headers": [{"name": "Authorization", "value": "Bearer {token}", "variables": {"token": {"description": "t", "isSecret": true}}}]`, false, true},
		{"an Authorization header", `, "headers": [{"name": "Authorization", "description": "the whole value"}]`, false, false},
		{"a secret header", `, "headers": [{"name": "X-Tenant", "description": "t", "isSecret": true}]`, false, false},
		{"a header named like a key", `, "headers": [{"name": "X-API-Key", "description": "k"}]`, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := OpenServerJSON(context.Background(), "test", []byte(fmt.Sprintf(doc, c.headers)), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			r := b.Manifest.MCPServers["remote"].Remote
			gotOAuth := r.Auth != nil && r.Auth.OAuth != nil
			gotBearer := r.Auth != nil && r.Auth.BearerFromEnv != ""
			if gotOAuth != c.oauth || gotBearer != c.hasBearer {
				t.Fatalf("auth %+v: oauth %v (want %v), bearer %v (want %v)", r.Auth, gotOAuth, c.oauth, gotBearer, c.hasBearer)
			}
			if gotOAuth && (len(r.Auth.OAuth.Scopes) != 0 || r.Auth.OAuth.ClientID != "" || r.Auth.OAuth.Issuer != "" || r.Auth.OAuth.RedirectPort != 0) {
				t.Errorf("oauth is not {}: %+v", r.Auth.OAuth)
			}
		})
	}
}
