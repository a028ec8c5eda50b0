package store

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/testkit"
)

// watched returns a generation watch of s that has read the state once,
// failing on Linux if no file-system watch backs it.
func watched(t testing.TB, s *Store) *GenerationWatch {
	t.Helper()
	w := s.WatchGeneration()
	t.Cleanup(func() { w.Close() })
	if runtime.GOOS == "linux" && !w.Watching() {
		t.Fatal("no file-system watch of the berth home (inotify)")
	}
	if _, moved, err := w.Check(); err != nil || !moved {
		t.Fatalf("first check: %v %v", moved, err)
	}
	return w
}

// rewriteInPlace writes data over path in place (same inode) and sets its
// modification time to an hour ago: a change no stat comparison can tell
// from no change once the sizes match.
func rewriteInPlace(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// eventually checks w until it reports a move (the file-system event of
// a write made outside any Store of this process arrives asynchronously).
func eventually(t *testing.T, w *GenerationWatch, what string) *State {
	t.Helper()
	var st *State
	testkit.Eventually(t, 5*time.Second, what, func() bool {
		s, moved, err := w.Check()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		st = s
		return moved
	})
	return st
}

// TestGenerationWatchNoStatWhenUnchanged: while nothing changes, a Check
// makes no syscall: the watch has not fired, so it stats nothing (the
// count of stats stays where it was) until verifyEvery has passed.
func TestGenerationWatchNoStatWhenUnchanged(t *testing.T) {
	s := newStore(t)
	if _, err := s.Update(context.Background(), func(*State) error { return nil }); err != nil {
		t.Fatal(err)
	}
	// Let state.json age past the racy window, so its stat is trusted.
	time.Sleep(2 * racyWindowFine)
	w := watched(t, s)
	w.Check() // settled now
	before := w.stats.Load()
	for range 10000 {
		if _, moved, err := w.Check(); err != nil || moved {
			t.Fatalf("moved without a change: %v %v", moved, err)
		}
	}
	// At most one verifyEvery tick (2 stats) can fall into the loop.
	if n := w.stats.Load() - before; n > 2 {
		t.Fatalf("10000 checks with nothing changed made %d stats, want at most 2 (one verifyEvery tick)", n)
	}
	// After verifyEvery the next Check stats again (the fallback for
	// what a watch cannot see).
	before = w.stats.Load()
	testkit.Eventually(t, 3*verifyEvery, "a Check to stat again after verifyEvery", func() bool {
		if w.stats.Load() != before {
			return true
		}
		w.Check()
		return false
	})
}

// TestGenerationWatchSeesChanges: what the fast path trusts is seen: a
// change through a Store of this process at once, a write by another
// process (an in-place rewrite of state.json or config.json that leaves
// inode, size and modification time as they were, invisible to a stat;
// a rename over either) through the watch.
func TestGenerationWatchSeesChanges(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	time.Sleep(2 * racyWindowFine)
	w := watched(t, s)
	w.Check()

	// In this process: no waiting.
	if _, err := s.Update(ctx, func(*State) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if st, moved, _ := w.Check(); !moved || st.Generation != 1 {
		t.Fatalf("a Store's update: moved %v, generation %d", moved, st.Generation)
	}
	if err := s.SetPolicy(ctx, PolicyRule{Pattern: "x__*", Action: "deny"}); err != nil {
		t.Fatal(err)
	}
	if _, moved, _ := w.Check(); !moved {
		t.Fatal("a Store's policy change not seen at once")
	}

	// Another process: in place, same size, an old modification time.
	rewriteInPlace(t, s.Paths().State(), `{"generation": 7}`+"\n")
	if st := eventually(t, w, "state.json rewritten in place"); st.Generation != 7 {
		t.Fatalf("generation %d, want 7", st.Generation)
	}
	cfg, err := os.ReadFile(s.Paths().Config())
	if err != nil {
		t.Fatal(err)
	}
	rewriteInPlace(t, s.Paths().Config(), string(cfg))
	eventually(t, w, "config.json rewritten in place")

	// Another process: a rename over state.json.
	tmp := filepath.Join(s.Paths().Root, "state.json.new")
	if err := os.WriteFile(tmp, []byte(`{"generation": 9}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, s.Paths().State()); err != nil {
		t.Fatal(err)
	}
	if st := eventually(t, w, "state.json replaced"); st.Generation != 9 {
		t.Fatalf("generation %d, want 9", st.Generation)
	}
	if _, moved, _ := w.Check(); moved {
		t.Fatal("moved again without a change")
	}
}

// TestGenerationWatchFallsBackToStat: once the watch is gone (closed
// here; a failed or overflowed watch likewise), every Check stats, so a
// replacement is seen at the next Check.
func TestGenerationWatchFallsBackToStat(t *testing.T) {
	s := newStore(t)
	w := watched(t, s)
	w.Close()
	if w.Watching() {
		t.Fatal("still watching after Close")
	}
	tmp := filepath.Join(s.Paths().Root, "state.json.new")
	os.WriteFile(tmp, []byte(`{"generation": 3}`+"\n"), 0o600)
	if err := os.Rename(tmp, s.Paths().State()); err != nil {
		t.Fatal(err)
	}
	if st, moved, err := w.Check(); err != nil || !moved || st.Generation != 3 {
		t.Fatalf("without a watch, a replacement was missed: %v %v", moved, err)
	}
	before := w.stats.Load()
	w.Check()
	if w.stats.Load() == before {
		t.Fatal("a Check without a watch made no stat")
	}
}

// BenchmarkGenerationWatchCheck is the boundary's generation check when
// nothing changed: with the watch, no stat (stats/op 0).
func BenchmarkGenerationWatchCheck(b *testing.B) {
	for _, withWatch := range []bool{true, false} {
		name := "watch"
		if !withWatch {
			name = "stat"
		}
		b.Run(name, func(b *testing.B) {
			s := newStore(b)
			w := s.watchGeneration(withWatch)
			defer w.Close()
			w.Check()
			time.Sleep(2 * racyWindowFine)
			w.Check()
			before := w.stats.Load()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				w.Check()
			}
			b.ReportMetric(float64(w.stats.Load()-before)/float64(b.N), "stats/op")
		})
	}
}
