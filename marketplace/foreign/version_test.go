package foreign

import (
	"fmt"
	"strings"
	"testing"
)

// A "v" before a semantic version, as the registry writes it, lists as
// that version and keeps the registry's name of it; a version that is not
// semver, even after the "v", is skipped with its reason.
func TestRegistryVersionPrefix(t *testing.T) {
	var items []string
	for _, v := range []string{"v1.2.0", "v1.2", "1.3", "1.1.0", "vv1.0.0"} {
		items = append(items, fmt.Sprintf(`{"server": {"name": "io.github.acme/weather", "version": %q, "description": "d"}, "_meta": {"io.modelcontextprotocol.registry/official": {"status": "active", "publishedAt": "2026-01-01T00:00:00Z"}}}`, v))
	}
	page, ps, err := DecodeRegistryPage([]byte(`{"servers": [`+strings.Join(items, ",")+`]}`), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 {
		t.Fatalf("problems %v, want 3", ps)
	}
	for _, p := range ps {
		if p.Rule != RuleRegistryEntryVersion || !strings.Contains(p.Message, "cannot order it") {
			t.Errorf("problem %s", p)
		}
	}
	plugins, ps := AssembleRegistry(page.Items)
	if len(ps) != 0 || len(plugins) != 1 {
		t.Fatalf("%v %v", plugins, ps)
	}
	vs := plugins[0].Versions
	if len(vs) != 2 || vs[0].Version != "1.2.0" || vs[0].SourceVersion != "v1.2.0" || vs[1].Version != "1.1.0" || vs[1].SourceVersion != "" {
		t.Errorf("versions %+v %+v", vs[0], vs[1])
	}
	// "1.2.0" and "v1.2.0" are one version: the second is skipped.
	items = append(items, strings.Replace(items[0], `"v1.2.0"`, `"1.2.0"`, 1))
	page, _, _ = DecodeRegistryPage([]byte(`{"servers": [`+strings.Join(items, ",")+`]}`), 1)
	if _, ps := AssembleRegistry(page.Items); len(ps) != 1 || ps[0].Rule != RuleRegistryEntryDuplicate {
		t.Errorf("duplicate: %v", ps)
	}
}
