package fsx

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// CopyFile copies a file of the given content, and refuses one of other
// content or a symbolic link in its place with ErrChanged; the refusal of a
// link reads as the open's own error.
func TestCopyFile(t *testing.T) {
	dir := t.TempDir()
	from := filepath.Join(dir, "from")
	data := []byte("hello\n")
	if err := os.WriteFile(from, data, 0o600); err != nil {
		t.Fatal(err)
	}
	c := Copy{Size: int64(len(data)), SHA256: sha256.Sum256(data), Perm: 0o600}
	if err := CopyFile(from, filepath.Join(dir, "ok"), c); err != nil {
		t.Fatalf("CopyFile: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "ok")); string(got) != string(data) {
		t.Errorf("copy holds %q", got)
	}
	other := c
	other.SHA256[0] ^= 1
	if err := CopyFile(from, filepath.Join(dir, "other"), other); !errors.Is(err, ErrChanged) || IsSymlinkRefusal(err) {
		t.Errorf("other content: %v, want ErrChanged", err)
	}
	if runtime.GOOS == "windows" {
		return
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(from, link); err != nil {
		t.Fatal(err)
	}
	err := CopyFile(link, filepath.Join(dir, "via-link"), c)
	if !errors.Is(err, ErrChanged) || !IsSymlinkRefusal(err) {
		t.Fatalf("symlink: %v, want ErrChanged and a symlink refusal", err)
	}
	_, oerr := OpenNoFollow(link, os.O_RDONLY, 0)
	if err.Error() != oerr.Error() {
		t.Errorf("symlink refusal reads %q, want the open's %q", err, oerr)
	}
}
