package marketplace

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-mcp/berth/internal/registrytest"
	"github.com/berth-mcp/berth/marketplace/foreign"
)

// corpusRegistry is the recorded MCP Registry listing of the shared
// real-world corpus (../shared/corpus from a project root).
const corpusRegistry = "../../shared/corpus/registry/server-registry.json"

// The recorded public registry, served on loopback in pages of 100 with
// offset cursors (as its README says), lists as many entries, versions and
// problems as it did before listings were streamed to disk and bounded.
func TestRegistryCorpusListing(t *testing.T) {
	data, err := os.ReadFile(corpusRegistry)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("the shared corpus is not here")
	}
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Servers []json.RawMessage `json:"servers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&registrytest.Listing{Items: doc.Servers})
	defer srv.Close()
	c := newRegistryCache(t, nil)
	r := addRegistry(t, c, srv.URL)
	versions := 0
	names, _ := c.Names()
	if len(names) != 1 {
		t.Fatalf("catalogs %v", names)
	}
	st, idx, err := c.readIndex("reg")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range idx.Plugins {
		versions += len(e.Versions)
	}
	t.Logf("%d plugins, %d versions, %d problems (%s)", r.Plugins, versions, len(r.Problems), st.Current)
	byRule := map[string]int{}
	for _, p := range r.Problems {
		byRule[p.Rule]++
		t.Logf("skipped: %s", p)
	}
	// 17 versions are not semver, even after a leading "v" (which 25
	// versions have, and which berth now reads); one server lists both
	// "0.7.1" and "v0.7.1", so the second is skipped as a duplicate.
	if byRule[foreign.RuleRegistryEntryVersion] != 17 || byRule[foreign.RuleRegistryEntryDuplicate] != 1 || len(byRule) != 2 {
		t.Errorf("skipped by rule %v, want 17 %s and 1 %s", byRule, foreign.RuleRegistryEntryVersion, foreign.RuleRegistryEntryDuplicate)
	}
	if r.Plugins != corpusPlugins || versions != corpusVersions || len(r.Problems) != corpusProblems {
		t.Errorf("the corpus lists %d plugins, %d versions, %d problems; want %d, %d, %d", r.Plugins, versions, len(r.Problems), corpusPlugins, corpusVersions, corpusProblems)
	}
	p, _, err := c.UnsignedEntry("reg", idx.Plugins[0].Name)
	if err != nil || len(p.Versions[0].ServerJSON) == 0 {
		t.Fatalf("entry: %v %v", p, err)
	}
	if fi, err := os.Stat(filepath.Join(c.dir, "reg", st.Current, entriesFile)); err == nil {
		t.Logf("entries.json: %d bytes", fi.Size())
	}
	b, err := os.ReadFile(filepath.Join(c.dir, "reg", st.Current, problemsFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != corpusProblemsSHA256 {
		t.Errorf("problems.json has SHA-256 %s, want %s (the bytes berth wrote before)", got, corpusProblemsSHA256)
	}
	// Every cached server.json keeps the names of all its top-level
	// fields, in order, and the values of those berth uses; _meta and
	// icons are emptied.
	byKey := map[string][]string{}
	for _, raw := range doc.Servers {
		var it struct {
			Server json.RawMessage `json:"server"`
		}
		json.Unmarshal(raw, &it)
		var s struct{ Name, Version string }
		json.Unmarshal(it.Server, &s)
		byKey[s.Name+"@"+s.Version] = topKeys(t, it.Server)
	}
	emptied := 0
	for _, e := range idx.Plugins {
		p, _, err := c.UnsignedEntry("reg", e.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range p.Versions {
			keys := topKeys(t, v.ServerJSON)
			served := v.Version
			if v.SourceVersion != "" {
				served = v.SourceVersion
			}
			if want := byKey[p.SourceName+"@"+served]; fmt.Sprint(keys) != fmt.Sprint(want) {
				t.Errorf("%s %s keeps the fields %v, want %v", p.SourceName, v.Version, keys, want)
			}
			var m map[string]json.RawMessage
			json.Unmarshal(v.ServerJSON, &m)
			for _, k := range []string{"_meta", "icons"} {
				if x, ok := m[k]; ok {
					emptied++
					if string(x) != "{}" && string(x) != "[]" {
						t.Errorf("%s %s keeps the value of %s: %s", p.SourceName, v.Version, k, x)
					}
				}
			}
		}
	}
	if emptied == 0 {
		t.Error("no _meta or icons in the corpus's cached entries")
	}
}

func topKeys(t *testing.T, doc []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.Token()
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var v json.RawMessage
		dec.Decode(&v)
	}
	return keys

}

// What the corpus lists: 2,354 items, of which 25 have a "v" before a
// semantic version and are listed as that version (before issue 20 they
// were skipped: 954 plugins, 2,312 versions, 42 problems), 17 are not
// semver and are skipped, and one repeats a version as "v0.7.1".
const (
	corpusPlugins  = 960
	corpusVersions = 2336
	corpusProblems = 18
)

// problems.json, byte for byte as berth writes it.
const corpusProblemsSHA256 = "fcbe691e9e646e995bf3ba93da911490aa4e99f404e62ccf863eb206603f35c8"
