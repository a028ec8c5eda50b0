package recorded

import (
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
)

func TestLoad(t *testing.T) {
	recs, err := Load(Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 10 {
		t.Errorf("%d recordings, want the 10 of scripts/record-tools.mjs", len(recs))
	}
	tools := Tools(recs)
	if len(tools) < 150 {
		t.Errorf("%d recorded tools, want at least 150", len(tools))
	}
	seen := map[string]bool{}
	for _, tl := range tools {
		if seen[tl.Name] {
			t.Errorf("exported name %s twice", tl.Name)
		}
		seen[tl.Name] = true
		p, s, name, ok := Split(tl.Name)
		if !ok || p == "" || s == "" || name == "" || strings.Contains(s, "__") {
			t.Errorf("exported name %q is not <plugin>__<server>__<tool>", tl.Name)
		}
		if tl.InputSchema == nil {
			t.Errorf("%s has no input schema", tl.Name)
		}
	}
	for _, r := range recs {
		if !bundle.IsValidName(r.Plugin) || !bundle.IsValidServerName(r.Server) {
			t.Errorf("%s: plugin %q or server %q is not a name berth accepts", r.File, r.Plugin, r.Server)
		}
		if len(r.Raw) != len(r.Tools) || r.Version == "" {
			t.Errorf("%s: %d raw, %d decoded tools, version %q", r.File, len(r.Raw), len(r.Tools), r.Version)
		}
	}
	t.Logf("%d recordings, %d tools", len(recs), len(tools))
}

// TestQueries checks the labelled query set names recorded tools only.
func TestQueries(t *testing.T) {
	tools, err := All()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools {
		names[tl.Name] = true
	}
	qs, err := Queries(Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) < 60 {
		t.Errorf("%d queries, want at least 60", len(qs))
	}
	seen := map[string]bool{}
	for _, q := range qs {
		if q.Query == "" || seen[q.Query] {
			t.Errorf("query %q empty or twice", q.Query)
		}
		seen[q.Query] = true
		for _, n := range append([]string{q.Tool}, q.Alternatives...) {
			if !names[n] {
				t.Errorf("query %q: %s is not a recorded tool", q.Query, n)
			}
		}
	}
}
