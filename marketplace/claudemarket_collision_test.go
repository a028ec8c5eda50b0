package marketplace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/marketplace/foreign"
)

// Two marketplace.json entries whose names map to one berth name ("Acme
// Tools" and "acme tools" → acme-tools) are both refused, each naming
// both, as the registry source refuses such names: berth cannot tell
// which one a person means by acme-tools. A third entry is kept, and a
// second entry of the very same name still keeps the first.
func TestClaudeMarketplaceNameCollisionRefusesBoth(t *testing.T) {
	dir := t.TempDir()
	plugin := func(sub, name string) {
		t.Helper()
		p := filepath.Join(dir, "plugins", sub, ".claude-plugin")
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "plugin.json"), []byte(`{"name": "`+name+`", "version": "1.0.0", "description": "d"}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plugin("a", "Acme Tools")
	plugin("b", "acme tools")
	plugin("c", "other")
	doc := `{"name": "m", "owner": {"name": "o"}, "plugins": [
		{"name": "Acme Tools", "source": "./plugins/a"},
		{"name": "acme tools", "source": "./plugins/b"},
		{"name": "other", "source": "./plugins/c"},
		{"name": "other", "source": "./plugins/c"}]}`
	out, ps, err := foreign.ParseClaudeMarketplace([]byte(doc), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].Name != "other" {
		var names []string
		for _, e := range out {
			names = append(names, e.Name+" ("+e.SourceName+")")
		}
		t.Errorf("listed %v; want only other", names)
	}
	text := problemsText(ps)
	if got := problemSet(ps); strings.Join(got, ",") != "acme-tools marketplace-entry-duplicate,acme-tools marketplace-entry-duplicate,other marketplace-entry-duplicate" {
		t.Errorf("problems %v:\n%s", got, text)
	}
	for _, want := range []string{`plugins[0].name`, `plugins[1].name`, `"Acme Tools" (plugins[0]) and "acme tools" (plugins[1]) both become the berth plugin name acme-tools`, "berth lists neither", "the first is kept"} {
		if !strings.Contains(text, want) {
			t.Errorf("problems do not say %q:\n%s", want, text)
		}
	}
}
