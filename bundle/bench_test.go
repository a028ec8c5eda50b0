package bundle

import (
	"context"
	"sync"
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
	// The same with a HashProgress that does what a progress bar does per
	// call (take a lock): what drawing progress costs the hashing.
	b.Run("berth-progress", func(b *testing.B) {
		b.SetBytes(n)
		var mu sync.Mutex
		var last int64
		ctx := WithHashProgress(context.Background(), func(done, _ int64) {
			mu.Lock()
			last = max(last, done)
			mu.Unlock()
		})
		for b.Loop() {
			if _, _, err := ReadTree(ctx, dir, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sha256sum", func(b *testing.B) { testtree.Sha256sum(b, dir, n) })
}
