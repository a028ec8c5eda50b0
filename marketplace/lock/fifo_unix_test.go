//go:build unix

package lock

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO at berth.lock (a workspace can plant one) is refused at once
// with the special-file rule, naming the file and the fix; reading it
// never blocks.
func TestReadFIFO(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, File)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Read(dir)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), p+" is a FIFO, not a regular file (rule special-file)") || !strings.Contains(err.Error(), "remove it") {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO at berth.lock still blocks after 5s")
	}
}
