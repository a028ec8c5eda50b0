package marketplace

import (
	"testing"

	"github.com/berth-mcp/berth/marketplace/catalog"
)

// TestDiffAuthorityOAuth: a version that starts signing in, asks for more
// scopes, or stops pinning its authorization server grows its authority;
// one that narrows its scopes does not.
func TestDiffAuthorityOAuth(t *testing.T) {
	summary := func(o *catalog.SummaryOAuth) *catalog.Summary {
		return &catalog.Summary{Servers: []catalog.SummaryServer{{Name: "api", Kind: "remote", Remote: &catalog.SummaryRemote{
			Endpoint: "https://mcp.example.com/mcp", Transport: "streamable-http", Headers: []catalog.EnvSource{}, Hosts: []string{"mcp.example.com"}, OAuth: o,
		}}}}
	}
	pinned := &catalog.SummaryOAuth{Scopes: []string{"read"}, Issuer: "https://as.example.com"}
	for _, c := range []struct {
		name     string
		from, to *catalog.SummaryOAuth
		grows    bool
	}{
		{"starts signing in", nil, &catalog.SummaryOAuth{}, true},
		{"a new scope", pinned, &catalog.SummaryOAuth{Scopes: []string{"read", "write"}, Issuer: "https://as.example.com"}, true},
		{"the scopes the server names", pinned, &catalog.SummaryOAuth{Issuer: "https://as.example.com"}, true},
		{"another issuer", pinned, &catalog.SummaryOAuth{Scopes: []string{"read"}, Issuer: "https://evil.example.com"}, true},
		{"no pinned issuer", pinned, &catalog.SummaryOAuth{Scopes: []string{"read"}}, true},
		{"fewer scopes", &catalog.SummaryOAuth{Scopes: []string{"read", "write"}, Issuer: "https://as.example.com"}, pinned, false},
		{"same", pinned, pinned, false},
	} {
		d := DiffAuthority("1.0.0", summary(c.from), "2.0.0", summary(c.to))
		if d.Grows() != c.grows {
			t.Errorf("%s: grows %v, want %v: %+v", c.name, d.Grows(), c.grows, d.Changes)
		}
	}
}
