package review

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/berth-mcp/berth/bundle"
)

// corpusMCPB is a real MCP Bundle manifest of the shared real-world corpus
// (../shared/corpus from a project root): the official file-manager-python
// example, manifest version 0.1, which Claude Desktop installs.
const corpusMCPB = "../../shared/corpus/mcpb-manifests/mcpb-examples-file-manager-python/manifest.json"

// TestGoldenCorpusMCPBReview: the review of a real MCPB manifest is its
// golden file (testdata/import/golden/corpus-mcpb-file-manager-python;
// go test ./review -update rewrites it). The corpus holds the manifest
// only, so the test builds the bundle around it: the files the manifest
// points to (server/main.py, and server/lib for PYTHONPATH) are empty
// stubs the test creates.
func TestGoldenCorpusMCPBReview(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the golden shows what the importer chose for linux")
	}
	data, err := os.ReadFile(corpusMCPB)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("the shared corpus is not here")
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for rel, body := range map[string][]byte{
		"manifest.json":          data,
		"server/main.py":         nil,
		"server/lib/__init__.py": nil,
	} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The manifest asks for python >=3.8.0 <4: answer as a machine with 3.12
	// would, so the golden does not depend on this one.
	python := func(_ context.Context, name string) (string, error) { return "3.12.4", nil }
	b, err := bundle.Open(context.Background(), dir, &bundle.Options{RuntimeVersion: python})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	checkGolden(t, filepath.Join(importGood, "..", "golden", "corpus-mcpb-file-manager-python"), New(b))
}
