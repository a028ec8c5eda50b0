package marketplace

import (
	"slices"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/store"
)

// The tool list a trust record keeps: absent in a record of an older
// berth or one trusted by hand (ok false), refused when damaged, and
// compared tool by tool with what the catalog lists now.
func TestInstalledTools(t *testing.T) {
	for _, r := range []*store.Record{{Name: "a", Version: "1.0.0"}, {Name: "a", Version: "1.0.0", Catalog: &store.CatalogOrigin{Name: "acme"}}} {
		if tools, ok, err := InstalledTools(r); tools != nil || ok || err != nil {
			t.Errorf("%+v: %v %v %v", r.Catalog, tools, ok, err)
		}
	}
	r := &store.Record{Name: "a", Version: "1.0.0", Catalog: &store.CatalogOrigin{Name: "acme", Tools: []byte(`{"not": "a list"}`)}}
	if _, _, err := InstalledTools(r); err == nil || !strings.Contains(err.Error(), "trust record of a@1.0.0 is damaged") {
		t.Errorf("a damaged list: %v", err)
	}
	v := &catalog.Version{Summary: catalog.Summary{Tools: []catalog.Tool{{Server: "notes", Name: "search", Description: "searches"}}}}
	r.Catalog.Tools = recordedTools(v)
	was, ok, err := InstalledTools(r)
	if !ok || err != nil || !slices.Equal(was, v.Summary.Tools) {
		t.Fatalf("%v %v %v", was, ok, err)
	}
	now := []catalog.Tool{{Server: "notes", Name: "search", Description: "searches everything"}, {Server: "notes", Name: "web", Description: "the web"}}
	got := ToolListChanges(was, now)
	want := []string{
		`tool "notes__search".description: it was listed with "searches" when you installed the version, and is now listed with "searches everything"`,
		`tool "notes__web": it was not listed when you installed the version, and is listed now`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("changes:\n%s", strings.Join(got, "\n"))
	}
	if got := ToolListChanges(now, now[:1]); len(got) != 1 || !strings.Contains(got[0], `"notes__web": it was listed when you installed the version, and is not listed now`) {
		t.Errorf("a removed tool: %q", got)
	}
	if got := ToolListChanges(nil, []catalog.Tool{}); got != nil {
		t.Errorf("no tools either side: %q", got)
	}
}

// An upgrade diff whose installed side's tool list is the catalog's word
// says so.
func TestDiffSaysToolsAreTheCatalogsWord(t *testing.T) {
	d := DiffAuthority("1.0.0", &catalog.Summary{}, "1.1.0", &catalog.Summary{})
	var b strings.Builder
	d.WriteText(&b)
	if b.String() != "What 1.1.0 may do does not change from 1.0.0.\n" {
		t.Errorf("%q", b.String())
	}
	d.InstalledToolsFromCatalog = true
	b.Reset()
	d.WriteText(&b)
	if !strings.Contains(b.String(), "The tools listed for 1.0.0 are the catalog's word now") {
		t.Errorf("%q", b.String())
	}
}
