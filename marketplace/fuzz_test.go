package marketplace

import (
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace/catalog"
)

// FuzzParseCatalog: a catalog comes from a source berth does not control
// (before verification, and a curator's hand edits after). Parsing never
// panics; what it accepts passes every rule and survives a round trip.
func FuzzParseCatalog(f *testing.F) {
	s := (&testEnv{t: f}).catalogSigner()
	p := genPlugin("notes", "Take notes", catalog.TierCommunity, []string{"notes"}, s, "1.0.0", "2.0.0-rc.1")
	p.Versions[0].Summary.Tools = []catalog.Tool{{Server: "main", Name: "search", Description: "Search notes"}}
	p.Versions[0].Summary.ContextTokens = catalog.EstimateTokens(p.Versions[0].Summary.Tools)
	p.Versions[1].Status, p.Versions[1].Reason = catalog.StatusDeprecated, "use 2.0.0"
	cat := &catalog.Catalog{CatalogVersion: 1, Name: "acme", Plugins: []*catalog.Plugin{p}}
	f.Add(cat.Marshal())
	// Sandboxes stated in a summary (issue 22): declared, the default
	// profile, and both at once (an entry that breaks a rule).
	for i := range p.Versions[0].Summary.Servers {
		p.Versions[0].Summary.Servers[i].Sandbox = &catalog.SummarySandbox{Declared: &bundle.Sandbox{
			Filesystem: &bundle.SandboxFilesystem{Read: []string{"${home}/.config/a"}, Write: []string{"${cache}"}},
			Network:    &bundle.SandboxNetwork{Mode: bundle.NetworkHosts, Hosts: []string{"api.example.com:443"}},
		}}
	}
	f.Add(cat.Marshal())
	for i := range p.Versions[0].Summary.Servers {
		p.Versions[0].Summary.Servers[i].Sandbox.Default = true
	}
	f.Add(cat.Marshal())
	f.Add([]byte(`{"catalogVersion": 1, "plugins": [{"name": "x"}, 1, null, []]}`))
	f.Add([]byte(`{"catalogVersion": 1, "plugins": []}`))
	f.Add([]byte(`{"catalogVersion": 1, "plugins": [{"name": "x", "Name": "y", "name": "z"}], "Plugins": []}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, ps, err := catalog.Parse(data)
		if err != nil {
			return
		}
		for _, p := range c.Plugins {
			if errs := catalog.CheckPlugin(p, "x"); catalog.HasErrors(errs) {
				t.Fatalf("accepted an entry that breaks rules: %v", errs)
			}
		}
		for _, p := range ps {
			if p.Rule == "" || p.Message == "" {
				t.Fatalf("a problem without rule or message: %+v", p)
			}
		}
		again, ps2, err := catalog.Parse(c.Marshal())
		if err != nil || catalog.HasErrors(ps2) || len(again.Plugins) != len(c.Plugins) {
			t.Fatalf("round trip: %v %v (%d vs %d plugins)", err, ps2, len(again.Plugins), len(c.Plugins))
		}
	})
}
