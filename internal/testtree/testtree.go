// Package testtree generates deterministic file trees for tests and
// benchmarks. It imports nothing of berth, so every package may use it.
package testtree

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Generate writes files files of about total bytes in all into dir,
// spread over 100 directories, with deterministic content and sizes; every
// tenth file is executable. It returns the bytes written.
func Generate(tb testing.TB, dir string, files int, total int64) int64 {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	avg := max(total/int64(files), 2)
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
		off := rng.Int64N(avg)
		data := buf[off : off+size]
		data[0] = byte(i) // no two files alike
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%05d.bin", i)), data, mode); err != nil {
			tb.Fatal(err)
		}
		written += size
	}
	return written
}

// Sha256sum benchmarks `sha256sum` over every file under dir, the physical
// limit that berth's own hashing is compared with in the same run.
func Sha256sum(b *testing.B, dir string, bytes int64) {
	if _, err := exec.LookPath("sha256sum"); err != nil {
		b.Skip("sha256sum not installed")
	}
	b.SetBytes(bytes)
	for b.Loop() {
		cmd := exec.Command("sh", "-c", "find . -type f -print0 | xargs -0 sha256sum > /dev/null")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}
