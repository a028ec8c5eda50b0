package marketplace

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
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
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		end := min(start+limit, len(doc.Servers))
		page := map[string]any{"servers": doc.Servers[start:end], "metadata": map[string]any{"count": end - start}}
		if end < len(doc.Servers) {
			page["metadata"].(map[string]any)["nextCursor"] = strconv.Itoa(end)
		}
		json.NewEncoder(w).Encode(page)
	}))
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
	if r.Plugins != corpusPlugins || versions != corpusVersions || len(r.Problems) != corpusProblems {
		t.Errorf("the corpus lists %d plugins, %d versions, %d problems; want %d, %d, %d", r.Plugins, versions, len(r.Problems), corpusPlugins, corpusVersions, corpusProblems)
	}
	p, _, err := c.UnsignedEntry("reg", idx.Plugins[0].Name)
	if err != nil || len(p.Versions[0].ServerJSON) == 0 {
		t.Fatalf("entry: %v %v", p, err)
	}
	for _, f := range []string{entriesFile, indexFile, problemsFile} {
		b, err := os.ReadFile(filepath.Join(c.dir, "reg", st.Current, f))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s %x", f, sha256.Sum256(b))
		if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != corpusFiles[f] {
			t.Errorf("%s has SHA-256 %s, want %s (the bytes berth wrote before)", f, got, corpusFiles[f])
		}
	}
}

// What the corpus listed before the change (main at 1b9e463).
const (
	corpusPlugins  = 954
	corpusVersions = 2312
	corpusProblems = 42
)

// The files of the copy, byte for byte as berth wrote them before.
var corpusFiles = map[string]string{
	entriesFile:  "7f12dcdac93d3427ae8cd54901bd02b10a69df29b3e324e29969b7e92cd1fd76",
	indexFile:    "e2b63807ff3fb26e1b4f8677cc19e76f8766e38a8daa2941519ad9e223c4f313",
	problemsFile: "05b16cece51a9c297d8ba8ff83bbd8a2a8254e6789de6b8ae095fb3a6ba11dc3",
}
