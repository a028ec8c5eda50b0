package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSearchAndRead(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "ideas.md"), []byte("# Ideas\nShip the berth demo\nwrite docs\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "todo.txt"), []byte("ship it\n"), 0o644)
	res, err := search(dir, "SHIP berth")
	if err != nil || len(res.Matches) != 1 || res.Matches[0] != (match{Note: "ideas.md", Line: 2, Text: "Ship the berth demo"}) {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := search(dir, "  "); err == nil {
		t.Fatal("an empty query was accepted")
	}
	text, err := read(dir, "ideas.md")
	if err != nil || !strings.HasPrefix(text, "# Ideas") {
		t.Fatalf("%q %v", text, err)
	}
	for _, bad := range []string{"../secret.md", "/etc/passwd", "todo.txt", "", "sub/x.md"} {
		if _, err := read(dir, bad); err == nil {
			t.Errorf("read(%q) was allowed", bad)
		}
	}
	os.Symlink("/etc/hostname", filepath.Join(dir, "link.md"))
	if _, err := read(dir, "link.md"); err == nil {
		t.Error("a symlink out of the notes folder was followed")
	}
}
