package bundle

import "testing"

func TestParseEndpointHost(t *testing.T) {
	for _, c := range []struct{ url, host, port, rule string }{
		{"https://MCP.Acme.example./v1", "mcp.acme.example", "443", ""},
		{"https://bücher.example:8443/x", "xn--bcher-kva.example", "8443", ""},
		{"https://EXAMPLE.COM\u3002/v1", "example.com", "443", ""}, // ideographic full stop
		{"https://example.com\uff0e/v1", "example.com", "443", ""}, // fullwidth full stop
		{"http://[::1]:3000/mcp", "::1", "3000", ""},
		{"http://LOCALHOST/mcp", "localhost", "80", ""},
		{"https://example.com../v1", "", "", RuleRemoteURL},
		{"https://a..b/v1", "", "", RuleRemoteURL},
		{"https://.example.com/v1", "", "", RuleRemoteURL},
		{"https://exa_mple.com/", "", "", RuleRemoteURL},
		{"http://localhost./mcp", "", "", RuleRemoteURLScheme},
		{"https://example.com/?tok%65n=1", "", "", RuleRemoteURLSecretQuery},
	} {
		ep, err := ParseEndpoint(c.url)
		if c.rule != "" {
			if ee, ok := err.(*endpointError); !ok || ee.rule != c.rule {
				t.Errorf("%s: error %v, want rule %s", c.url, err, c.rule)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		if ep.Host != c.host || ep.Port != c.port {
			t.Errorf("%s: host %q port %q, want %q %q", c.url, ep.Host, ep.Port, c.host, c.port)
		}
	}
}
