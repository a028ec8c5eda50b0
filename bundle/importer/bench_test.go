package importer

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/testtree"
)

// BenchmarkOpenImport opens an MCP Bundle directory of 2,000 files / 20 MB
// (read, copied with the generated berth.json, read again) next to the
// berth bundle that berth import writes from it (read once), and next to
// cp -r of the same tree (the cost of the copy alone), in the same run.
func BenchmarkOpenImport(b *testing.B) {
	ctx := context.Background()
	src := b.TempDir()
	n := testtree.Generate(b, filepath.Join(src, "server"), 2_000, 20<<20)
	os.WriteFile(filepath.Join(src, "server", "index.js"), []byte("// server\n"), 0o644)
	m, _ := json.Marshal(map[string]any{"manifest_version": "0.3", "name": "bench", "version": "1.0.0", "description": "d",
		"author": map[string]any{"name": "a"},
		"server": map[string]any{"type": "node", "entry_point": "server/index.js", "mcp_config": map[string]any{"command": "node", "args": []string{"${__dirname}/server/index.js"}}}})
	os.WriteFile(filepath.Join(src, mcpbManifest), m, 0o644)
	ob, err := bundle.Open(ctx, src, nil)
	if err != nil {
		b.Fatal(err)
	}
	written := filepath.Join(b.TempDir(), "berth")
	if err := ob.WriteTree(ctx, written); err != nil {
		b.Fatal(err)
	}
	ob.Close()
	b.Run("cp-r", func(b *testing.B) {
		b.SetBytes(n)
		for i := 0; b.Loop(); i++ {
			dst := filepath.Join(b.TempDir(), "copy")
			if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
				b.Skipf("cp: %v %s", err, out)
			}
		}
	})
	for _, c := range []struct{ name, dir string }{{"mcpb", src}, {"berth", written}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(n)
			for b.Loop() {
				bb, err := bundle.Open(ctx, c.dir, nil)
				if err != nil {
					b.Fatal(err)
				}
				bb.Close()
			}
		})
	}
}
