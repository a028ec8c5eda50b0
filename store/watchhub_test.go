package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/testkit"
)

// TestWatchHubShared: the drift checkers and the generation watch of one
// Store share one file-system watch, which the last Close releases; and a
// drift written while they share it is still seen by the checker it
// concerns.
func TestWatchHubShared(t *testing.T) {
	ctx := context.Background()
	s, b, c1 := stagedChecker(t)
	d := mustDigest(b.Digest)
	c2, err := s.DriftChecker(d)
	if err != nil {
		t.Fatal(err)
	}
	w := s.WatchGeneration()
	if !c1.Watching() || !c2.Watching() || !w.Watching() {
		t.Fatalf("watching: %v %v %v", c1.Watching(), c2.Watching(), w.Watching())
	}
	s.hub.mu.Lock()
	fw, subs := s.hub.fw, len(s.hub.all)
	s.hub.mu.Unlock()
	if fw == nil || subs != 3 {
		t.Fatalf("one shared watch with 3 subscriptions, got watch %v and %d", fw != nil, subs)
	}
	w.Close()
	c2.Close()
	// The directories c1 holds are still watched: a change is seen.
	p := filepath.Join(s.Paths().Snapshot(d), "share", "index.txt")
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, []byte("tampered\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o444)
	var derr error
	testkit.Within(3*time.Second, func() bool { derr = c1.Check(ctx); return derr != nil })
	if !errors.Is(derr, ErrDrift) {
		t.Fatalf("drift after the other subscriptions closed: %v", derr)
	}
	c1.Close()
	s.hub.mu.Lock()
	fw = s.hub.fw
	s.hub.mu.Unlock()
	if fw != nil {
		t.Fatal("the shared watch outlived its last subscription")
	}
}

// TestWatchHubDeath: when the shared watch fails, every subscription
// loses its fast path (and falls back to stat and sweep), and the next
// subscription gets a new watch.
func TestWatchHubDeath(t *testing.T) {
	s, b, c := stagedChecker(t)
	w := watched(t, s)
	s.hub.mu.Lock()
	fw := s.hub.fw
	s.hub.mu.Unlock()
	fw.Close() // as if the watch failed: its events end
	testkit.Eventually(t, 3*time.Second, "the drift and generation watches to stop being trusted after the shared watch died", func() bool {
		return !c.Watching() && !w.Watching()
	})
	if st, _, err := w.Check(); err != nil || st == nil {
		t.Fatalf("check without the watch: %v", err)
	}
	c2, err := s.DriftChecker(mustDigest(b.Digest))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if !c2.Watching() {
		t.Fatal("no new watch after the old one died")
	}
}
