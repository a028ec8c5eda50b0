package review

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/importer"
	"github.com/berth-mcp/berth/internal/registrytest"
)

// corpusRegistry is the recorded MCP Registry listing of the shared
// real-world corpus (../shared/corpus from a project root).
const corpusRegistry = "../../shared/corpus/registry/server-registry.json"

// TestGoldenCorpusRegistryReviews: the review of one real item of the
// recorded registry listing for each $schema value in it (the first that
// has packages and converts, else the first that converts, else the
// refusal of the first), and of the first that writes its version with a
// "v", is its golden file in testdata/import/golden.
func TestGoldenCorpusRegistryReviews(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the goldens show what the importers chose for linux")
	}
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
	ctx := context.Background()
	type pick struct {
		raw  json.RawMessage
		rank int // 3 valid with packages, 2 valid, 1 refused
	}
	picks := map[string]*pick{}
	var order []string
	for _, server := range servers {
		var s struct {
			Schema   string          `json:"$schema"`
			Version  string          `json:"version"`
			Packages json.RawMessage `json:"packages"`
		}
		if err := json.Unmarshal(server, &s); err != nil {
			t.Fatal(err)
		}
		keys := []string{schemaKey(s.Schema)}
		if strings.HasPrefix(s.Version, "v") {
			keys = append(keys, "v-version")
		}
		for _, key := range keys {
			p := picks[key]
			if p == nil {
				p = &pick{}
				picks[key] = p
				order = append(order, key)
			}
			if p.rank == 3 {
				continue
			}
			rank := 1
			b, err := importer.OpenServerJSON(ctx, "corpus", server, nil)
			if err == nil {
				rank = 2
				if len(s.Packages) > 0 {
					rank = 3
				}
				b.Close()
			}
			if rank > p.rank {
				p.raw, p.rank = server, rank
			}
		}
	}
	if len(order) != 7 {
		t.Fatalf("picked %v; want the 6 $schema values of the corpus and a v-version", order)
	}
	for _, key := range order {
		t.Run(key, func(t *testing.T) {
			base := filepath.Join(importGood, "..", "golden", "registry-corpus-"+key)
			b, err := importer.OpenServerJSON(ctx, "the corpus item", picks[key].raw, nil)
			var ie *bundle.InvalidError
			switch {
			case errors.As(err, &ie):
				checkGoldenText(t, base+".refusal.txt", []byte(ie.Error()+"\n"))
				return
			case err != nil:
				t.Fatal(err)
			}
			defer b.Close()
			checkGoldenText(t, base+".review.txt", text(t, New(b)))
		})
	}
}

// schemaKey names a $schema value in a file name: its date, with
// "-ServerDetail" for the fragment, or "no-schema".
func schemaKey(schema string) string {
	if schema == "" {
		return "no-schema"
	}
	key := strings.TrimPrefix(schema, "https://static.modelcontextprotocol.io/schemas/")
	key, frag, _ := strings.Cut(key, "#")
	key = strings.TrimSuffix(key, "/server.schema.json")
	if frag != "" {
		key += "-ServerDetail"
	}
	return key
}

func checkGoldenText(t *testing.T, file string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./review -update)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs (run go test ./review -update and read the diff):\n%s", file, got)
	}
}

// The review says when the server.json version was inferred and what
// version the source wrote.
func TestReviewInferredVersion(t *testing.T) {
	doc := `{"name": "io.github.acme/weather", "description": "Weather", "version": "v1.2.3",
	  "packages": [{"registry_type": "npm", "identifier": "@acme/weather", "version": "1.2.3", "transport": {"type": "stdio"}}]}`
	b, err := importer.OpenServerJSON(context.Background(), "test", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	out := string(text(t, New(b)))
	for _, want := range []string{
		"format version 2025-07-09 inferred: the file names no version, and it is valid under this one only",
		"version v1.2.3 in the source, 1.2.3 in berth",
		"io-github-acme-weather 1.2.3",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the review does not say %q:\n%s", want, out)
		}
	}
}
