package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestExchange(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n, "name"), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = Exchange(d, "a", "b")
	if runtime.GOOS != "linux" {
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("not on Linux: %v, want ErrUnsupported", err)
		}
		return
	}
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("this file system cannot exchange: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range map[string]string{"a": "b", "b": "a"} {
		got, err := os.ReadFile(filepath.Join(dir, n, "name"))
		if err != nil || string(got) != want {
			t.Errorf("%s holds %q (%v), want %q", n, got, err, want)
		}
	}
	if err := Exchange(d, "a", "missing"); err == nil {
		t.Error("an exchange with a missing entry succeeded")
	}
}
