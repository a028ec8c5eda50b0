package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func onlyFiles(t *testing.T, dir string, want ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("%s holds %q, want %q", dir, got, want)
	}
}

func TestWriteFileReplaces(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	p := filepath.Join(dir, "state.json")
	if err := WriteFile(p, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	// 0666: a umask (022 by default) must not clear the group and other
	// write bits.
	if err := WriteFile(p, []byte("two"), 0o666); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil || string(data) != "two" {
		t.Fatalf("read %q, %v", data, err)
	}
	if fi, _ := os.Stat(p); runtime.GOOS != "windows" && fi.Mode().Perm() != 0o666 {
		t.Fatalf("mode %v, want 0666 whatever the umask", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(dir); runtime.GOOS != "windows" && fi.Mode().Perm() != 0o700 {
		t.Fatalf("new directory mode %v, want 0700", fi.Mode().Perm())
	}
	onlyFiles(t, dir, "state.json")
}

func TestWriteJSON(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.json")
	if err := WriteJSON(p, map[string]int{"a": 1}, 0o600); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(p); string(data) != "{\n  \"a\": 1\n}\n" {
		t.Fatalf("wrote %q", data)
	}
}

// TestAbortLeavesDestination: a File that is never replaced changes
// nothing and leaves no temp file.
func TestAbortLeavesDestination(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	os.WriteFile(p, []byte("old"), 0o600)
	f, err := Create(p, 0o600, &Options{TempTag: ".berth-"})
	if err != nil {
		t.Fatal(err)
	}
	if base := filepath.Base(f.Name()); !strings.HasPrefix(base, ".config.json.berth-") {
		t.Fatalf("temp file %s does not carry the tag", base)
	}
	f.Write([]byte("new"))
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f.Abort()
	f.Abort()
	if data, _ := os.ReadFile(p); string(data) != "old" {
		t.Fatalf("destination is %q", data)
	}
	onlyFiles(t, dir, "config.json")

	f, err = Create(p, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	f.Write([]byte("new"))
	if err := f.Replace(); err != nil {
		t.Fatal(err)
	}
	f.Abort() // after Replace: a no-op
	if data, _ := os.ReadFile(p); string(data) != "new" {
		t.Fatalf("destination is %q", data)
	}
	onlyFiles(t, dir, "config.json")
}

func TestWriteNew(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "k.pub")
	if err := WriteNew(p, []byte("key"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteNew(p, []byte("other"), 0o644)
	if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), p) {
		t.Fatalf("second WriteNew: %v, want fs.ErrExist naming the path", err)
	}
	if data, _ := os.ReadFile(p); string(data) != "key" {
		t.Fatalf("an existing file was changed: %q", data)
	}
}

func TestRemoveTreeReadOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snap")
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(dir, "a", "b", "f"), []byte("x"), 0o444)
	for _, d := range []string{filepath.Join(dir, "a", "b"), filepath.Join(dir, "a"), dir} {
		os.Chmod(d, 0o555)
	}
	if err := RemoveTree(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s is still there: %v", dir, err)
	}
	if err := RemoveTree(dir); err != nil {
		t.Fatalf("a missing tree: %v", err)
	}
}
