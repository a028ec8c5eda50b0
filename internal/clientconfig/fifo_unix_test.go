//go:build unix

package clientconfig

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// returnsWithin runs f and fails the test when it has not returned after d (a
// read that blocks on a FIFO would never return).
func returnsWithin(t *testing.T, d time.Duration, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("still blocked after %s", d)
		return nil
	}
}

// TestFIFOWorkspaceFile: a FIFO the workspace planted at .vscode/mcp.json
// is refused at once with the special-file rule, naming the file and the
// fix, both when connect reads the file and when the file becomes a FIFO
// between Prepare and Apply; berth never blocks opening it.
func TestFIFOWorkspaceFile(t *testing.T) {
	want := func(t *testing.T, err error, path string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), path+" is a FIFO, not a regular file (rule special-file)") || !strings.Contains(err.Error(), "remove it") {
			t.Fatalf("err = %v", err)
		}
	}
	t.Run("read", func(t *testing.T) {
		tg, e := testTarget(t, VSCode, false, nil, 0)
		if err := os.MkdirAll(filepath.Dir(tg.Path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(tg.Path, 0o644); err != nil {
			t.Fatal(err)
		}
		want(t, returnsWithin(t, 5*time.Second, func() error {
			_, err := connect(t, tg, "berth", e, testOpts)
			return err
		}), tg.Path)
	})
	t.Run("swapped before the write", func(t *testing.T) {
		tg, e := testTarget(t, VSCode, false, []byte(`{"servers": {}}`), 0o644)
		ed, err := PrepareConnect(ctx, tg, "berth", e, testOpts)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(tg.Path); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(tg.Path, 0o644); err != nil {
			t.Fatal(err)
		}
		want(t, returnsWithin(t, 5*time.Second, func() error { return ed.Apply(ctx) }), tg.Path)
	})
}
