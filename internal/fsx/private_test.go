//go:build unix

package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The openers of logs, audit.log and approvals never follow a symbolic
// link, never block on a FIFO, and refuse what is not the operator's
// alone; the link's target is never touched.
func TestPrivateOpeners(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep\n"), 0o600)
	link := filepath.Join(dir, "logs", "x.log")
	os.Mkdir(filepath.Join(dir, "logs"), 0o700)
	os.Symlink(victim, link)
	var ue *UnsafePathError
	if f, err := OpenPrivateAppend(link); !errors.As(err, &ue) || !strings.Contains(err.Error(), "symbolic link (to "+victim+")") {
		t.Fatalf("append through a link: %v %v", f, err)
	}
	if _, err := OpenPrivate(link); !errors.As(err, &ue) {
		t.Fatalf("read through a link: %v", err)
	}
	if _, err := ReadPrivateFile(link, 10); !errors.As(err, &ue) {
		t.Fatalf("read through a link: %v", err)
	}
	if data, _ := os.ReadFile(victim); string(data) != "keep\n" {
		t.Fatalf("the target changed: %q", data)
	}
	fifo := filepath.Join(dir, "logs", "fifo.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenPrivate(fifo); !errors.As(err, &ue) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a FIFO: %v", err)
	}
	open := filepath.Join(dir, "logs", "open.log")
	os.WriteFile(open, nil, 0o600)
	os.Chmod(open, 0o620)
	if _, err := OpenPrivateAppend(open); !errors.As(err, &ue) || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a group-writable log: %v", err)
	}
	linked := filepath.Join(dir, "approvals")
	os.Symlink(dir, linked)
	if err := EnsurePrivateDir(linked); !errors.As(err, &ue) {
		t.Fatalf("a linked directory: %v", err)
	}
	f, err := OpenPrivateAppend(filepath.Join(dir, "new", "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	for p, want := range map[string]os.FileMode{filepath.Join(dir, "new"): 0o700, filepath.Join(dir, "new", "audit.log"): 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %v", p, fi.Mode(), err, want)
		}
	}
}
