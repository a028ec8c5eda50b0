package bundle

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// GenerateTree writes files files of about total bytes in all into dir,
// spread over 100 directories, with deterministic content and sizes; every
// tenth file is executable. It returns the bytes written.
func GenerateTree(tb testing.TB, dir string, files int, total int64) int64 {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	avg := total / int64(files)
	buf := make([]byte, 3*avg)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	var written int64
	for i := range files {
		sub := filepath.Join(dir, fmt.Sprintf("d%02d", i%100))
		if i < 100 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		size := avg/2 + rng.Int64N(avg)
		mode := os.FileMode(0o644)
		if i%10 == 0 {
			mode = 0o755
		}
		// Vary the content per file so no two files hash alike.
		off := rng.Int64N(avg)
		data := buf[off : off+size]
		data[0] = byte(i)
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%05d.bin", i)), data, mode); err != nil {
			tb.Fatal(err)
		}
		written += size
	}
	return written
}

// BenchmarkDigest lists and hashes a tree of 10,000 files / 100 MB, next to
// sha256sum over the same files (the physical limit) in the same run.
// Compare the MB/s of the two sub-benchmarks.
func BenchmarkDigest(b *testing.B) {
	dir := b.TempDir()
	n := GenerateTree(b, dir, 10_000, 100<<20)
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
