package bundle

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// ReadTree reports the bytes it hashes to the context's HashProgress,
// ending at the total of the regular files.
func TestHashProgress(t *testing.T) {
	dir := t.TempDir()
	var want int64
	for i, size := range []int{0, 1, 300 << 10, 1 << 20} {
		data := strings.Repeat("x", size)
		want += int64(size)
		if err := os.WriteFile(filepath.Join(dir, "f"+string(rune('a'+i))), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("fa", filepath.Join(dir, "link"))
	var mu sync.Mutex
	var last, total int64
	calls := 0
	ctx := WithHashProgress(context.Background(), func(done, tot int64) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if done > last {
			last = done
		}
		total = tot
	})
	if _, _, err := ReadTree(ctx, dir, nil); err != nil {
		t.Fatal(err)
	}
	if last != want || total != want || calls < 3 {
		t.Fatalf("progress ended at %d of %d after %d calls; want %d of %d", last, total, calls, want, want)
	}
	// Without a HashProgress nothing is reported and nothing breaks.
	if _, _, err := ReadTree(context.Background(), dir, nil); err != nil {
		t.Fatal(err)
	}
}
