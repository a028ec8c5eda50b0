package bundle

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// copyTree copies a fixture into a temp dir, keeping modes and symlinks.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "b")
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v\n%s", err, out)
	}
	return dst
}

func mustListing(t *testing.T, dir string) *Listing {
	t.Helper()
	tree, ps, err := ReadTree(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) > 0 {
		t.Fatalf("problems: %v", ps)
	}
	return tree.Listing
}

func TestListingMatchesCosignFixture(t *testing.T) {
	want, err := os.ReadFile("../testdata/cosign/listing.txt")
	if err != nil {
		t.Fatal(err)
	}
	digest, err := os.ReadFile("../testdata/cosign/digest.txt")
	if err != nil {
		t.Fatal(err)
	}
	l := mustListing(t, "../testdata/cosign/tree")
	if got := l.Bytes(); string(got) != string(want) {
		t.Fatalf("listing:\n%s\nwant:\n%s", got, want)
	}
	if got := l.Digest(); got != strings.TrimSpace(string(digest)) {
		t.Fatalf("digest %s, want %s", got, digest)
	}
	parsed, err := ParseListing(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(parsed.Bytes()) != string(want) {
		t.Fatalf("ParseListing round trip differs")
	}
}

func TestDigestSameForDirectoryAndArchives(t *testing.T) {
	src := filepath.Join(fixtures, "good", "native-tool")
	dir, err := Open(context.Background(), src, nil)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	tgz := filepath.Join(tmp, "b.tgz")
	if out, err := exec.Command("tar", "-czf", tgz, "-C", src, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	zipped := filepath.Join(tmp, "b.zip")
	entries := baseEntriesOf(t, src)
	writeZip(t, zipped, entries, nil)
	for _, archive := range []string{tgz, zipped} {
		b, err := Open(context.Background(), archive, nil)
		if err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		if b.Digest != dir.Digest {
			t.Errorf("%s: digest %s, directory %s\n%s\nvs\n%s", archive, b.Digest, dir.Digest, b.Listing().Bytes(), dir.Listing().Bytes())
		}
		extracted := b.Dir
		b.Close()
		if _, err := os.Stat(extracted); !os.IsNotExist(err) {
			t.Errorf("Close left %s behind", extracted)
		}
	}
}

// baseEntriesOf reads a directory into archive entries, symlinks included.
func baseEntriesOf(t *testing.T, root string) []arEntry {
	var out []arEntry
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case fi.IsDir():
			out = append(out, arEntry{name: rel + "/", typ: tar.TypeDir})
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out = append(out, arEntry{name: rel, typ: tar.TypeSymlink, linkname: target})
		default:
			body, _ := os.ReadFile(p)
			out = append(out, arEntry{name: rel, typ: tar.TypeReg, mode: int64(fi.Mode().Perm()), body: body})
		}
		return nil
	})
	return out
}

func TestDigestChangesWithExecBitAndContent(t *testing.T) {
	dir := copyTree(t, filepath.Join(fixtures, "good", "stdio-bundled"))
	base := mustListing(t, dir)
	idx := filepath.Join(dir, "share", "index.txt")

	if err := os.Chmod(idx, 0o755); err != nil {
		t.Fatal(err)
	}
	execFlip := mustListing(t, dir)
	if execFlip.Digest() == base.Digest() {
		t.Fatal("flipping an exec bit did not change the digest")
	}
	d := Compare(base, execFlip)
	if len(d.Changed) != 1 || d.Changed[0].Path != "share/index.txt" || d.Changed[0].NewMode != "100755" || d.Changed[0].Content {
		t.Fatalf("diff %+v", d)
	}
	os.Chmod(idx, 0o644)

	if err := os.WriteFile(idx, []byte("indeX\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	byteFlip := mustListing(t, dir)
	if byteFlip.Digest() == base.Digest() {
		t.Fatal("changing one byte did not change the digest")
	}
	if d := Compare(base, byteFlip); len(d.Changed) != 1 || !d.Changed[0].Content {
		t.Fatalf("diff %+v", d)
	}
	// Group and other exec bits count as exec too; permission bits beyond
	// that do not change the digest.
	os.WriteFile(idx, []byte("index\n"), 0o600)
	os.Chmod(idx, 0o600)
	if got := mustListing(t, dir).Digest(); got != base.Digest() {
		t.Fatal("a read-permission change altered the digest")
	}
	// An empty directory is not part of the listing.
	os.Mkdir(filepath.Join(dir, "empty"), 0o755)
	if got := mustListing(t, dir).Digest(); got != base.Digest() {
		t.Fatal("an empty directory altered the digest")
	}
}

func TestCompareAddedRemoved(t *testing.T) {
	a := &Listing{Entries: []Entry{{Path: "a"}, {Path: "b"}}}
	b := &Listing{Entries: []Entry{{Path: "b"}, {Path: "c"}}}
	d := Compare(a, b)
	if !slices.Equal(d.Added, []string{"c"}) || !slices.Equal(d.Removed, []string{"a"}) || len(d.Changed) != 0 {
		t.Fatalf("%+v", d)
	}
	if !Compare(a, a).Empty() {
		t.Fatal("listing differs from itself")
	}
}

func TestParseListingRejectsNonCanonical(t *testing.T) {
	h := strings.Repeat("a", 64)
	for _, bad := range []string{
		"100644 " + h + " 1 a",                         // no final newline
		"100600 " + h + " 1 a\n",                       // unknown mode
		"100644 " + strings.ToUpper(h) + " 1 a\n",      // upper-case hex
		"100644 " + h + " 01 a\n",                      // non-canonical size
		"100644 " + h + " 1 b\n100644 " + h + " 1 a\n", // unsorted
		"100644 " + h + " 1 a\n100644 " + h + " 1 a\n", // duplicate
	} {
		if _, err := ParseListing([]byte(bad)); err == nil {
			t.Errorf("ParseListing(%q) accepted a non-canonical listing", bad)
		}
	}
}

// TestDirectorySpecialEntries covers what git cannot store: hard links,
// FIFOs and sockets in a directory source.
func TestDirectorySpecialEntries(t *testing.T) {
	dir := copyTree(t, filepath.Join(fixtures, "good", "stdio-bundled"))
	if err := os.Link(filepath.Join(dir, "share", "index.txt"), filepath.Join(dir, "share", "hard.txt")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "share", "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "share", "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	os.WriteFile(filepath.Join(dir, "share", "INDEX.txt"), []byte("x"), 0o644)

	_, err = Open(context.Background(), dir, nil)
	var ie *InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("Open = %v", err)
	}
	var got []string
	for _, p := range ie.Problems {
		got = append(got, p.Rule+" "+p.Path)
	}
	want := []string{
		"bundle-path-missing mcpServers.notes.stdio.args[2]", // share/index.txt is refused, so --index names nothing
		"hard-link share/hard.txt",
		"hard-link share/index.txt",
		"path-case-collision share/index.txt",
		"special-file share/pipe",
		"special-file share/s.sock",
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestExtractNeverWritesOutside(t *testing.T) {
	parent := t.TempDir()
	for _, name := range []string{"archive-traversal.tar.gz", "archive-traversal.zip", "archive-absolute.tar.gz", "archive-write-through-symlink.tar.gz", "archive-symlink-escapes.tar.gz"} {
		dest := filepath.Join(parent, strings.ReplaceAll(name, ".", "-"))
		os.Mkdir(dest, 0o755)
		ps, err := Extract(context.Background(), filepath.Join(fixtures, "bad", name), dest, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(ps) == 0 && name != "archive-symlink-escapes.tar.gz" {
			t.Errorf("%s: no problems reported", name)
		}
	}
	for _, p := range []string{"/tmp/berth-evil", filepath.Join(parent, "berth-evil"), filepath.Join(os.TempDir(), "evil.txt")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("extraction wrote %s", p)
		}
	}
}

func TestCloseRemovesExtractedCopy(t *testing.T) {
	b, ps, err := Load(context.Background(), filepath.Join(fixtures, "bad", "archive-hard-link.tar.gz"), nil)
	if err != nil || len(ps) == 0 {
		t.Fatalf("Load = %v, %v; want problems", ps, err)
	}
	dir := b.Dir
	b.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s still exists", dir)
	}
}

// TestOpenRemovesInvalidExtract: Open returns no bundle for an invalid
// archive, so it removes the extracted copy itself.
func TestOpenRemovesInvalidExtract(t *testing.T) {
	tmp := t.TempDir()
	b, err := Open(context.Background(), filepath.Join(fixtures, "bad", "archive-hard-link.tar.gz"), &Options{TempDir: tmp})
	if !errors.Is(err, ErrInvalidBundle) || b != nil {
		t.Fatalf("Open = %v, %v; want no bundle and an invalid-bundle error", b, err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("Open left %v behind in %s", ents, tmp)
	}
}

// TestInvalidErrorUnwrap: every problem of an *InvalidError is reachable
// with errors.As and errors.Is through the standard multi-error Unwrap.
func TestInvalidErrorUnwrap(t *testing.T) {
	p1 := &Problem{Path: "name", Rule: RuleNameFormat, Message: "bad"}
	p2 := &Problem{Path: "version", Rule: RuleVersionSemver, Message: "bad"}
	err := fmt.Errorf("wrapped: %w", &InvalidError{Source: "x", Problems: []*Problem{p1, p2}})
	if !errors.Is(err, ErrInvalidBundle) || !errors.Is(err, p2) {
		t.Fatalf("errors.Is misses the category or a problem: %v", err)
	}
	var p *Problem
	if !errors.As(err, &p) || p != p1 {
		t.Fatalf("errors.As found %v, want the first problem", p)
	}
}
