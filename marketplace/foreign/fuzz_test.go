package foreign

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/Masterminds/semver/v3"

	"github.com/berth-mcp/berth/bundle/importer"
)

// FuzzRegistryPage: a registry's response is unsigned input from a
// server berth does not control. Parsing never panics; every item it
// accepts has a registry name that maps to a berth name, a strict semver
// version, a known status and a release time, and a server.json within
// its cap; every skipped item has a rule and a message; the entries
// assembled from the items have unique berth names.
const (
	registryFixtures = "../../testdata/registry"
	marketFixture    = "../../testdata/claude-marketplace"
)

func FuzzRegistryPage(f *testing.F) {
	for _, n := range []string{"page1.json", "page2.json", "page3.json"} {
		data, err := os.ReadFile(filepath.Join(registryFixtures, n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"servers": [null, 1, "x", {"server": {}}, {"server": {"name": "a/b", "version": "1.0.0"}, "_meta": {"io.modelcontextprotocol.registry/official": {"status": "active", "publishedAt": "2026-01-01T00:00:00Z"}}}], "metadata": {"next_cursor": "c"}}`))
	f.Add([]byte(`{"servers": []}`))
	name := regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$`)
	f.Fuzz(func(t *testing.T, data []byte) {
		pg, ps, err := DecodeRegistryPage(data, 1)
		if err != nil {
			return
		}
		for _, p := range ps {
			if p.Rule == "" || p.Message == "" {
				t.Fatalf("a problem without rule or message: %+v", p)
			}
		}
		for _, it := range pg.Items {
			mapped, err := importer.RegistryPluginName(it.name)
			if err != nil || !name.MatchString(mapped) {
				t.Fatalf("accepted the name %q (%q, %v)", it.name, mapped, err)
			}
			if _, err := semver.StrictNewVersion(it.version); err != nil {
				t.Fatalf("accepted the version %q", it.version)
			}
			if it.status != "active" && it.status != "deprecated" && it.status != "deleted" || it.published.IsZero() || len(it.server) > MaxRegistryEntry {
				t.Fatalf("accepted %+v", it)
			}
		}
		plugins, _ := AssembleRegistry(pg.Items)
		seen := map[string]bool{}
		for _, p := range plugins {
			if seen[p.Name] || len(p.Versions) == 0 {
				t.Fatalf("assembled %s twice or without versions", p.Name)
			}
			seen[p.Name] = true
			for _, v := range p.Versions {
				if v.Status == "deleted" {
					t.Fatalf("kept a deleted version of %s", p.Name)
				}
			}
		}
	})
}

// FuzzClaudeMarketplace: a marketplace.json is unsigned input. Parsing
// never panics; every entry it accepts has a berth name and a strict
// semver version, and a directory inside the marketplace's root.
func FuzzClaudeMarketplace(f *testing.F) {
	data, err := os.ReadFile(filepath.Join(marketFixture, ".claude-plugin", "marketplace.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"plugins": [{"name": "a", "source": "./"}, {"name": "b", "source": "./plugins/../.."}, {"name": "c", "source": {"source": "npm"}}], "metadata": {"pluginRoot": "../x"}}`))
	root, err := filepath.Abs(marketFixture)
	if err != nil {
		f.Fatal(err)
	}
	realRoot, _ := filepath.EvalSymlinks(root)
	name := regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$`)
	f.Fuzz(func(t *testing.T, data []byte) {
		es, ps, err := ParseClaudeMarketplace(data, root)
		if err != nil {
			return
		}
		for _, p := range ps {
			if p.Rule == "" || p.Message == "" {
				t.Fatalf("a problem without rule or message: %+v", p)
			}
		}
		for _, e := range es {
			if !name.MatchString(e.Name) {
				t.Fatalf("accepted the name %q", e.Name)
			}
			if _, err := semver.StrictNewVersion(e.Version); err != nil {
				t.Fatalf("accepted the version %q", e.Version)
			}
			rel, err := filepath.Rel(realRoot, e.Dir)
			if err != nil || !filepath.IsLocal(rel) && rel != "." {
				t.Fatalf("accepted the directory %s outside %s", e.Dir, realRoot)
			}
		}
	})
}
