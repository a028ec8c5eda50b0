//go:build unix

package fsx

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// ReadRegularFile never blocks on a FIFO, refuses what is not a regular
// file as special-file, and stops reading when its context is done.
func TestReadRegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var nr *NotRegularError
	if _, err := ReadRegularFile(context.Background(), fifo, 10); !errors.As(err, &nr) || nr.Kind() != "a FIFO" || !strings.Contains(err.Error(), "(rule special-file)") {
		t.Fatalf("a FIFO: %v", err)
	}
	if _, err := ReadRegularFile(context.Background(), dir, 10); !errors.As(err, &nr) || nr.Kind() != "a directory" {
		t.Fatalf("a directory: %v", err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("data"), 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(file, link)
	if data, err := ReadRegularFile(context.Background(), link, 10); err != nil || string(data) != "data" {
		t.Fatalf("a link to a file: %q %v", data, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadRegularFile(ctx, file, 10); !errors.Is(err, context.Canceled) {
		t.Fatalf("a done context: %v", err)
	}
}
