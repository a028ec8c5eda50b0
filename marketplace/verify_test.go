package marketplace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/repo"
)

// TestLoadVerified checks a good copy, then copies whose catalog or
// signed metadata were altered on disk after berth wrote them.
func TestLoadVerified(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	e.addCatalog()
	l, v, err := e.cache.LoadVerified("acme")
	if err != nil || !v.Signed || len(l.Catalog.Plugins) != 1 {
		t.Fatalf("good copy: %v %+v", err, v)
	}
	names, _ := filepath.Glob(filepath.Join(e.cache.dir, "acme", "v-*"))
	if len(names) != 1 {
		t.Fatal(names)
	}
	copyDir := names[0]
	for file, edit := range map[string]func(string) string{
		catalog.TargetName: func(s string) string { return strings.Replace(s, "Notes search", "Notes SEARCH", 1) },
		"targets.json":     func(s string) string { return strings.Replace(s, `"version":`, `"version": 1, "x":`, 1) },
		"timestamp.json":   func(s string) string { return strings.Replace(s, `"_type"`, `"_typo"`, 1) },
	} {
		p := filepath.Join(copyDir, file)
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(edit(string(orig))), 0o600); err != nil {
			t.Fatal(err)
		}
		_, v, err := e.cache.LoadVerified("acme")
		if err == nil && v.Signed {
			t.Errorf("%s altered: still signed", file)
		} else if err == nil && !strings.Contains(v.Problem, strings.TrimSuffix(file, ".json")) {
			t.Errorf("%s altered: the problem %q does not name it", file, v.Problem)
		}
		os.WriteFile(p, orig, 0o600)
	}
	if _, v, _ := e.cache.LoadVerified("acme"); !v.Signed {
		t.Errorf("restored copy: %s", v.Problem)
	}
}
