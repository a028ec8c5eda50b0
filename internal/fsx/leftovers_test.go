package fsx

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestSweepTemp: only old directories of berth's prefixes go; a young
// one (a command still running), another name, a symbolic link (even one
// to an old berth directory) and a file of a berth name stay, and a link
// is never followed into its target.
func TestSweepTemp(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir()
	old := time.Now().Add(-2 * TempLeftoverAge)
	mk := func(name string, at time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(p, "bundle", "ro"), 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(p, "bundle", "ro", "f"), []byte("x"), 0o400)
		os.Chmod(filepath.Join(p, "bundle", "ro"), 0o500)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone1 := mk("berth-download-1", old)
	gone2 := mk("berth-extract-2", old)
	young := mk("berth-extract-3", time.Now())
	notOurs := mk("someone-else-4", old)
	// A link of a berth name to another directory: neither it nor its
	// target is removed.
	os.WriteFile(filepath.Join(other, "keep"), []byte("mine"), 0o600)
	link := filepath.Join(dir, "berth-extract-link")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "berth-download-file"), []byte("x"), 0o600)
	removed, err := SweepTemp(dir, TempPrefixes, time.Now().Add(-TempLeftoverAge))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if !slices.Equal(removed, []string{gone1, gone2}) {
		t.Errorf("removed %v, want %v", removed, []string{gone1, gone2})
	}
	for _, p := range []string{young, notOurs, link, filepath.Join(other, "keep"), filepath.Join(dir, "berth-download-file")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	for _, p := range []string{gone1, gone2} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
}
