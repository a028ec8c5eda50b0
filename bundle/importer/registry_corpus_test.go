package importer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/registrytest"
)

// corpusRegistry is the recorded MCP Registry listing of the shared
// real-world corpus (../shared/corpus from a project root).
const corpusRegistry = "../../../shared/corpus/registry/server-registry.json"

// corpusServers returns the server.json documents of the recorded
// listing, or skips the test when the corpus is not here.
func corpusServers(t testing.TB) []json.RawMessage {
	t.Helper()
	l, err := registrytest.Load(corpusRegistry)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("the shared corpus is not here")
	}
	if err != nil {
		t.Fatal(err)
	}
	servers, err := l.Servers()
	if err != nil {
		t.Fatal(err)
	}
	return servers
}

// TestCorpusSchemaVersions reads every server.json of the recorded
// registry listing: none is refused for its schema version any more
// (before, every one was: none names 2025-12-11), and the 17 without a
// $schema are read or refused as exactly one or several versions fit.
// -v prints the measurement: how many convert to a valid bundle per
// $schema, and the refusals by rule.
func TestCorpusSchemaVersions(t *testing.T) {
	ctx := context.Background()
	type tally struct{ items, valid int }
	bySchema := map[string]*tally{}
	byRule := map[string]int{}
	var inferred, ambiguous []string
	// remotes of valid bundles, and those that may ask for a sign-in
	// ("oauth": {}: they send no credential header).
	remotes, mayAsk := 0, 0
	for i, raw := range corpusServers(t) {
		var s struct {
			Schema string `json:"$schema"`
		}
		json.Unmarshal(raw, &s)
		tl := bySchema[s.Schema]
		if tl == nil {
			tl = &tally{}
			bySchema[s.Schema] = tl
		}
		tl.items++
		b, err := OpenServerJSON(ctx, fmt.Sprintf("servers[%d]", i), raw, nil)
		if err == nil {
			tl.valid++
			for _, sv := range b.Manifest.MCPServers {
				if r := sv.Remote; r != nil {
					remotes++
					if r.Auth != nil && r.Auth.OAuth != nil {
						mayAsk++
					}
				}
			}
			if imp := b.Manifest.ImportedFrom; imp.FormatVersionInferred {
				inferred = append(inferred, imp.FormatVersion)
			}
			b.Close()
			continue
		}
		var ie *bundle.InvalidError
		if !errors.As(err, &ie) {
			t.Fatalf("servers[%d]: %v", i, err)
		}
		seen := map[string]bool{}
		for _, p := range ie.Problems {
			if p.Rule == bundle.RuleRegistrySchema {
				t.Errorf("servers[%d] (%s) refused for its schema: %s", i, s.Schema, p.Message)
			}
			if p.Rule == bundle.RuleRegistrySchemaUnknown {
				ambiguous = append(ambiguous, p.Message)
			}
			if !seen[p.Rule] {
				seen[p.Rule] = true
				byRule[p.Rule]++
			}
		}
	}
	schemas := make([]string, 0, len(bySchema))
	for k := range bySchema {
		schemas = append(schemas, k)
	}
	sort.Strings(schemas)
	total, valid := 0, 0
	for _, k := range schemas {
		tl := bySchema[k]
		total += tl.items
		valid += tl.valid
		t.Logf("%-100q %5d items, %5d valid bundles", k, tl.items, tl.valid)
	}
	t.Logf("all: %d items, %d valid bundles", total, valid)
	t.Logf("remotes of valid bundles: %d, of which %d send no credential header and may ask for an OAuth sign-in (\"oauth\": {})", remotes, mayAsk)
	if remotes > 0 && mayAsk == 0 {
		t.Error("no remote of the corpus may ask for a sign-in; a server.json remote without a credential header imports as \"oauth\": {}")
	}
	rules := make([]string, 0, len(byRule))
	for r := range byRule {
		rules = append(rules, r)
	}
	sort.Slice(rules, func(i, j int) bool {
		return byRule[rules[i]] > byRule[rules[j]] || byRule[rules[i]] == byRule[rules[j]] && rules[i] < rules[j]
	})
	for _, r := range rules {
		t.Logf("refused by %-32s %5d items", r, byRule[r])
	}
	slices.Sort(inferred)
	t.Logf("empty $schema: %d read (inferred %v), %d refused", len(inferred), inferred, len(ambiguous))
	for _, m := range ambiguous {
		t.Logf("  %s", m)
	}
	if n := bySchema[""]; n == nil || len(inferred)+len(ambiguous) != n.items {
		t.Errorf("empty $schema: %d read, %d refused as ambiguous, want %d in all", len(inferred), len(ambiguous), bySchema[""].items)
	}
	if valid == 0 {
		t.Error("no item of the corpus converts to a valid bundle")
	}
	for _, v := range registryVersions {
		if n := bySchema[registrySchemaURL(v.date)]; n != nil && n.valid == 0 && n.items > 10 {
			t.Errorf("%s: none of %d items converts", v.date, n.items)
		}
	}
}
