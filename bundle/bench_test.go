package bundle

import (
	"context"
	"testing"

	"github.com/berth-mcp/berth/internal/testtree"
)

// BenchmarkDigest lists and hashes a tree of 10,000 files / 100 MB, next to
// sha256sum over the same files (the physical limit) in the same run.
// Compare the MB/s of the two sub-benchmarks.
func BenchmarkDigest(b *testing.B) {
	dir := b.TempDir()
	n := testtree.Generate(b, dir, 10_000, 100<<20)
	b.Run("berth", func(b *testing.B) {
		b.SetBytes(n)
		for b.Loop() {
			tree, ps, err := ReadTree(context.Background(), dir, nil)
			if err != nil || len(ps) > 0 {
				b.Fatal(err, ps)
			}
			_ = tree.Listing.Digest()
		}
	})
	b.Run("sha256sum", func(b *testing.B) { testtree.Sha256sum(b, dir, n) })
}
