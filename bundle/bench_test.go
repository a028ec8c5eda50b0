package bundle

import (
	"context"
	"os/exec"
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
	b.Run("sha256sum", func(b *testing.B) {
		if _, err := exec.LookPath("sha256sum"); err != nil {
			b.Skip("sha256sum not installed")
		}
		b.SetBytes(n)
		for b.Loop() {
			cmd := exec.Command("sh", "-c", "find . -type f -print0 | xargs -0 sha256sum > /dev/null")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	})
}
