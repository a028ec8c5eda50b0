package marketplace

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/marketplace/catalog"
)

// TestCatalogSummaryOAuth: a catalog entry's summary carries a remote's
// sign-in (remote.oauth), strictly: a field berth does not define there
// (a clientSecret) makes the entry malformed and skipped, as anywhere in
// an entry.
func TestCatalogSummaryOAuth(t *testing.T) {
	s := (&testEnv{t: t}).catalogSigner()
	entry := func(name, oauth string) string {
		data, _ := json.Marshal(genPlugin(name, "Fine", catalog.TierCommunity, nil, s, "1.0.0"))
		var m map[string]any
		json.Unmarshal(data, &m)
		v := m["versions"].([]any)[0].(map[string]any)
		sum := v["summary"].(map[string]any)
		var server map[string]any
		json.Unmarshal([]byte(`{"name": "api", "kind": "remote", "remote": {"endpoint": "https://mcp.example.com/mcp", "transport": "streamable-http", "headers": [], "hosts": ["mcp.example.com"], "oauth": `+oauth+`}, "tools": {"allow": [], "deny": []}, "timeouts": {"startup": "30s", "call": "1m0s"}}`), &server)
		sum["servers"] = append(sum["servers"].([]any), server)
		out, _ := json.Marshal(m)
		return string(out)
	}
	doc := `{"catalogVersion": 1, "plugins": [` + entry("good", `{"scopes": ["read"], "clientId": "c", "redirectPort": 8976, "issuer": "https://as.example.com"}`) + `,` + entry("secret", `{"clientSecret": "x"}`) + `]}`
	cat, ps, err := catalog.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Plugins) != 1 || cat.Plugins[0].Name != "good" {
		t.Fatalf("plugins %v, problems %v", cat.Plugins, ps)
	}
	var o *catalog.SummaryOAuth
	for _, sv := range cat.Plugins[0].Versions[0].Summary.Servers {
		if sv.Remote != nil {
			o = sv.Remote.OAuth
		}
	}
	if o == nil || o.Issuer != "https://as.example.com" || o.RedirectPort != 8976 || o.ClientID != "c" || len(o.Scopes) != 1 {
		t.Errorf("oauth %+v", o)
	}
	found := false
	for _, p := range ps {
		if p.Plugin == "secret" && p.Rule == catalog.RuleEntrySyntax && strings.Contains(p.String(), "clientSecret") {
			found = true
		}
	}
	if !found {
		t.Errorf("no entry-syntax problem for the clientSecret: %v", ps)
	}
}
