package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveConfinesPaths(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(ws, "a", "b"), 0o755))
	must(os.WriteFile(filepath.Join(ws, "a", "b", "f.json"), []byte("{}"), 0o644))
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o644))
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "abs-out")))
	must(os.Symlink("../"+filepath.Base(outside)+"/secret", filepath.Join(ws, "rel-out")))
	must(os.Symlink(outside, filepath.Join(ws, "a", "dir-out")))
	must(os.Symlink("b/f.json", filepath.Join(ws, "a", "in")))
	must(os.Symlink(filepath.Join(ws, "a"), filepath.Join(ws, "abs-in")))

	// A workspace reached through a symlink works the same.
	link := filepath.Join(t.TempDir(), "ws")
	must(os.Symlink(ws, link))

	for _, root := range []string{ws, link} {
		w := openWorkspace(root)
		for _, tc := range []struct{ path, want, err string }{
			{"a/b/f.json", "a/b/f.json", ""},
			{"./a//b/f.json", "a/b/f.json", ""},
			{"a/in", "a/b/f.json", ""},
			{"abs-in/b/f.json", "a/b/f.json", ""},
			{"", "", "required"},
			{"/etc/passwd", "", "absolute"},
			{filepath.Join(ws, "a/b/f.json"), "", "absolute"},
			{"..", "", `".."`},
			{"a/../a/b/f.json", "", `".."`},
			{"../" + filepath.Base(outside) + "/secret", "", `".."`},
			{"a/b/../../../x", "", `".."`},
			{"abs-out", "", "outside the workspace"},
			{"rel-out", "", "outside the workspace"},
			{"a/dir-out/secret", "", "outside the workspace"},
			{"missing", "", "no such file"},
			{"a\x00b", "", "NUL"},
		} {
			got, err := w.resolve(tc.path)
			switch {
			case tc.err == "" && (err != nil || filepath.ToSlash(got) != tc.want):
				t.Errorf("resolve(%q) under %s = %q, %v; want %q", tc.path, root, got, err, tc.want)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("resolve(%q) under %s = %q, %v; want an error containing %q", tc.path, root, got, err, tc.err)
			}
		}
	}
}

func TestWorkspaceUnusable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, want string }{
		{"", "BERTH_WORKSPACE is not set"},
		{"rel", "not an absolute path"},
		{filepath.Join(t.TempDir(), "missing"), "no such file"},
		{file, "not a directory"},
	} {
		w := openWorkspace(tc.dir)
		r, err := w.hashFile(context.Background(), json.RawMessage(`{"path":"f"}`))
		if r != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("workspace %q: hash_file = %v, %v; want an error containing %q", tc.dir, r, err, tc.want)
		}
	}
}

func TestFormatBounds(t *testing.T) {
	ws := t.TempDir()
	w := openWorkspace(ws)
	// A nesting bomb: small input, enormous indented output.
	bomb := strings.Repeat("[", 9000) + strings.Repeat("]", 9000)
	if err := os.WriteFile(filepath.Join(ws, "bomb.json"), []byte(bomb), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := w.formatJSON(context.Background(), json.RawMessage(`{"path":"bomb.json","indent":8}`))
	if err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Errorf("format_json of a nesting bomb = %v", err)
	}
	// Compact output has no such growth.
	if _, err := w.formatJSON(context.Background(), json.RawMessage(`{"path":"bomb.json","indent":0}`)); err != nil {
		t.Errorf("compact format_json of deep JSON = %v", err)
	}
	// Inputs over the limit are refused without reading them whole.
	f, err := os.Create(filepath.Join(ws, "huge.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxInput + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := w.formatJSON(context.Background(), json.RawMessage(`{"path":"huge.json"}`)); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("format_json of a huge file = %v", err)
	}
}

func TestShape(t *testing.T) {
	for _, tc := range []struct {
		in            string
		breaks, depth int
	}{
		{`1`, 0, 0},
		{`{"a":[1,2]}`, 5, 2},
		{`"[{,\"]"`, 0, 0},
		{`{"a\\":"]"}`, 2, 1},
	} {
		if b, d := shape([]byte(tc.in)); b != tc.breaks || d != tc.depth {
			t.Errorf("shape(%s) = %d, %d; want %d, %d", tc.in, b, d, tc.breaks, tc.depth)
		}
	}
}
