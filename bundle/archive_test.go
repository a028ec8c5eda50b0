package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// extractProblems extracts an archive into a fresh directory and returns
// its problems as "rule path".
func extractProblems(t *testing.T, archive string, lim *Limits) []string {
	t.Helper()
	dest := filepath.Join(t.TempDir(), "dest")
	if err := os.Mkdir(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	ps, err := Extract(context.Background(), archive, dest, lim)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.Rule+" "+p.Path)
	}
	slices.Sort(got)
	return got
}

// TestExtractCaseCollisionOfImpliedDirs: "A/x" and "a/y" put two files in
// one directory on macOS and Windows; and "L" -> outside with "l/s" would
// there create s through the symlink. Extract refuses both by itself,
// before anything is written through a name that collides.
func TestExtractCaseCollisionOfImpliedDirs(t *testing.T) {
	dir := t.TempDir()
	file := func(name string) arEntry {
		return arEntry{name: name, typ: tar.TypeReg, mode: 0o644, body: []byte("x")}
	}
	for _, c := range []struct {
		entries []arEntry
		want    []string
	}{
		{[]arEntry{file("A/x"), file("a/y")}, []string{"path-case-collision a"}},
		{[]arEntry{{name: "A/", typ: tar.TypeDir, mode: 0o755}, file("a/y")}, []string{"path-case-collision a"}},
		{[]arEntry{{name: "L", typ: tar.TypeSymlink, linkname: "/tmp"}, {name: "l/s", typ: tar.TypeSymlink, linkname: "x"}}, []string{"path-case-collision l"}},
	} {
		p := filepath.Join(dir, "a.tar.gz")
		writeTarGz(t, p, c.entries)
		if got := extractProblems(t, p, nil); !slices.Equal(got, c.want) {
			t.Errorf("%v: problems %q, want %q", c.entries, got, c.want)
		}
	}
}

// TestExtractCapCountsRefusedData: the data of entries that are refused
// (and so never written) still counts against the size cap, so a small
// archive cannot make berth decompress without end.
func TestExtractCapCountsRefusedData(t *testing.T) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	zeros := make([]byte, 2<<20)
	for range 3 {
		tw.WriteHeader(&tar.Header{Name: "../evil", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(zeros))})
		tw.Write(zeros)
	}
	tw.Close()
	gz.Close()
	p := filepath.Join(t.TempDir(), "bomb.tar.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got := extractProblems(t, p, &Limits{MaxTotalSize: 1 << 20})
	if !slices.Contains(got, "tree-too-large .") {
		t.Fatalf("problems %q, want tree-too-large", got)
	}
}

// TestExtractSymlinkTargetCap: a symlink target longer than the path cap
// is refused, not cut short.
func TestExtractSymlinkTargetCap(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("d/", 50) + "x"
	entries := []arEntry{{name: "l", typ: tar.TypeSymlink, linkname: long}}
	for _, p := range []string{filepath.Join(dir, "a.tar.gz"), filepath.Join(dir, "a.zip")} {
		if strings.HasSuffix(p, ".zip") {
			writeZip(t, p, entries, nil)
		} else {
			writeTarGz(t, p, entries)
		}
		if got := extractProblems(t, p, &Limits{MaxPathLen: 64}); !slices.Equal(got, []string{"path-too-long l"}) {
			t.Errorf("%s: problems %q", filepath.Base(p), got)
		}
	}
}
