package bundle

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"flag"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateFixtures = flag.Bool("update-fixtures", false, "rewrite the archive fixtures in testdata/bundles/bad")

// arEntry is one entry of a generated archive.
type arEntry struct {
	name     string
	typ      byte // tar type flag
	mode     int64
	body     []byte
	linkname string
}

// baseEntries are the entries of testdata/bundles/good/stdio-bundled.
func baseEntries(t *testing.T) []arEntry {
	t.Helper()
	root := filepath.Join(fixtures, "good", "stdio-bundled")
	var out []arEntry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			out = append(out, arEntry{name: rel + "/", typ: tar.TypeDir, mode: 0o755})
		default:
			body, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out = append(out, arEntry{name: rel, typ: tar.TypeReg, mode: int64(fi.Mode().Perm()), body: body})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeTarGz(t *testing.T, name string, entries []arEntry) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Size: int64(len(e.body)), Linkname: e.linkname, Format: tar.FormatPAX}
		if e.typ != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if e.typ == tar.TypeReg {
			tw.Write(e.body)
		}
	}
	tw.Close()
	gz.Close()
	if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeZip(t *testing.T, name string, entries []arEntry, raw func(*zip.Writer)) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		fh := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		switch e.typ {
		case tar.TypeDir:
			fh.SetMode(fs.ModeDir | 0o755)
		case tar.TypeSymlink:
			fh.SetMode(fs.ModeSymlink | 0o777)
			e.body = []byte(e.linkname)
		default:
			fh.SetMode(fs.FileMode(e.mode))
		}
		w, err := zw.CreateHeader(fh)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(e.body)
	}
	if raw != nil {
		raw(zw)
	}
	zw.Close()
	if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeWant(t *testing.T, name, flags string, lines ...string) {
	t.Helper()
	var b strings.Builder
	if flags != "" {
		b.WriteString("# flags: " + flags + "\n")
	}
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGenerateArchiveFixtures rewrites the archive fixtures with
// -update-fixtures. Without the flag it checks that each exists.
func TestGenerateArchiveFixtures(t *testing.T) {
	dir := filepath.Join(fixtures, "bad")
	type fixture struct {
		file, flags string
		want        []string
		make        func(path string)
	}
	with := func(extra ...arEntry) []arEntry { return append(baseEntries(t), extra...) }
	file := func(name, body string) arEntry {
		return arEntry{name: name, typ: tar.TypeReg, mode: 0o644, body: []byte(body)}
	}
	fxs := []fixture{
		{"archive-case-collision.tar.gz", "", []string{"path-case-collision\tREADME.MD"}, func(p string) { writeTarGz(t, p, with(file("README.MD", "shout\n"))) }},
		{"archive-backslash.tar.gz", "", []string{"path-characters\t\"share\\\\evil.txt\""}, func(p string) { writeTarGz(t, p, with(file(`share\evil.txt`, "x"))) }},
		{"archive-control-char.zip", "", []string{"path-characters\t\"share/bell\\a.txt\""}, func(p string) { writeZip(t, p, with(file("share/bell\a.txt", "x")), nil) }},
		{"archive-hard-link.tar.gz", "", []string{"hard-link\tshare/copy.txt"}, func(p string) {
			writeTarGz(t, p, with(arEntry{name: "share/copy.txt", typ: tar.TypeLink, linkname: "share/index.txt"}))
		}},
		{"archive-fifo.tar.gz", "", []string{"special-file\tshare/pipe"}, func(p string) {
			writeTarGz(t, p, with(arEntry{name: "share/pipe", typ: tar.TypeFifo, mode: 0o644}))
		}},
		{"archive-device.tar.gz", "", []string{"special-file\tshare/tty"}, func(p string) {
			writeTarGz(t, p, with(arEntry{name: "share/tty", typ: tar.TypeChar, mode: 0o666}))
		}},
		{"archive-absolute.tar.gz", "", []string{"archive-absolute-path\t\"/tmp/berth-evil\""}, func(p string) { writeTarGz(t, p, with(file("/tmp/berth-evil", "x"))) }},
		{"archive-traversal.tar.gz", "", []string{"archive-path-traversal\t\"share/../../berth-evil\""}, func(p string) { writeTarGz(t, p, with(file("share/../../berth-evil", "x"))) }},
		{"archive-traversal.zip", "", []string{"archive-path-traversal\t\"../berth-evil\""}, func(p string) { writeZip(t, p, with(file("../berth-evil", "x")), nil) }},
		{"archive-duplicate.tar.gz", "", []string{"archive-duplicate-entry\tberth.json"}, func(p string) { writeTarGz(t, p, with(file("berth.json", "{}"))) }},
		{"archive-duplicate.zip", "", []string{"archive-duplicate-entry\tshare/index.txt"}, func(p string) { writeZip(t, p, with(file("share/index.txt", "again")), nil) }},
		{"archive-symlink-escapes.tar.gz", "", []string{"symlink-escapes\tshare/etc"}, func(p string) {
			writeTarGz(t, p, with(arEntry{name: "share/etc", typ: tar.TypeSymlink, linkname: "../../../etc"}))
		}},
		{"archive-symlink-escapes.zip", "", []string{"symlink-escapes\tshare/passwd"}, func(p string) {
			writeZip(t, p, with(arEntry{name: "share/passwd", typ: tar.TypeSymlink, linkname: "/etc/passwd"}), nil)
		}},
		{"archive-write-through-symlink.tar.gz", "", []string{"archive-duplicate-entry\tshare/out/evil.txt"}, func(p string) {
			writeTarGz(t, p, with(arEntry{name: "share/out", typ: tar.TypeSymlink, linkname: "/tmp"}, file("share/out/evil.txt", "x")))
		}},
		{"archive-zip-bomb.zip", "max-size 1048576", []string{"tree-too-large\t."}, func(p string) {
			writeZip(t, p, with(arEntry{name: "share/zeros.bin", typ: tar.TypeReg, mode: 0o644, body: make([]byte, 8<<20)}), nil)
		}},
		{"archive-size-lie.zip", "", []string{"archive-size-mismatch\tshare/big.bin"}, func(p string) {
			writeZip(t, p, baseEntries(t), func(zw *zip.Writer) {
				body := bytes.Repeat([]byte("A"), 1<<20)
				var comp bytes.Buffer
				fw, _ := flate.NewWriter(&comp, flate.BestCompression)
				fw.Write(body)
				fw.Close()
				fh := &zip.FileHeader{Name: "share/big.bin", Method: zip.Deflate, CRC32: crc32.ChecksumIEEE(body[:10]), CompressedSize64: uint64(comp.Len()), UncompressedSize64: 10}
				fh.SetMode(0o644)
				w, err := zw.CreateRaw(fh)
				if err != nil {
					t.Fatal(err)
				}
				w.Write(comp.Bytes())
			})
		}},
		{"archive-too-many-entries.tar.gz", "max-entries 12", []string{"tree-too-many-entries\t."}, func(p string) {
			var extra []arEntry
			for i := range 20 {
				extra = append(extra, file("share/f"+string(rune('a'+i)), "x"))
			}
			writeTarGz(t, p, with(extra...))
		}},
		{"archive-path-too-long.tar.gz", "max-path 64", []string{"path-too-long\tshare/" + strings.Repeat("x", 54) + "…" + strings.Repeat("x", 16)}, func(p string) {
			writeTarGz(t, p, with(file("share/"+strings.Repeat("x", 100), "x")))
		}},
		{"archive-windows-reserved.zip", "", []string{"path-windows-name\t\"share/nul.txt\""}, func(p string) { writeZip(t, p, with(file("share/nul.txt", "x")), nil) }},
		{"archive-windows-reserved-dir.tar.gz", "", []string{"path-windows-name\t\"share/COM1/x.txt\""}, func(p string) { writeTarGz(t, p, with(file("share/COM1/x.txt", "x"))) }},
		{"archive-trailing-dot.tar.gz", "", []string{"path-windows-name\t\"share/notes.\""}, func(p string) { writeTarGz(t, p, with(file("share/notes.", "x"))) }},
		{"archive-trailing-space.zip", "", []string{"path-windows-name\t\"share/notes \""}, func(p string) { writeZip(t, p, with(file("share/notes ", "x")), nil) }},
		{"archive-colon.tar.gz", "", []string{"path-windows-name\t\"share/index.txt:stream\""}, func(p string) { writeTarGz(t, p, with(file("share/index.txt:stream", "x"))) }},
		{"archive-corrupt.tar.gz", "", []string{"archive-format\t."}, func(p string) {
			os.WriteFile(p, []byte("this is not a gzip stream\n"), 0o644)
		}},
		{"archive-no-manifest.zip", "", []string{"manifest-missing\tberth.json"}, func(p string) {
			writeZip(t, p, []arEntry{file("README.md", "no manifest here\n")}, nil)
		}},
	}
	for _, f := range fxs {
		path := filepath.Join(dir, f.file)
		want := filepath.Join(dir, strings.TrimSuffix(strings.TrimSuffix(f.file, ".tar.gz"), ".zip")+wantSuffix(f.file))
		if *updateFixtures {
			f.make(path)
			writeWant(t, want, f.flags, f.want...)
			continue
		}
		for _, p := range []string{path, want} {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("fixture missing (run go test ./bundle -run TestGenerateArchiveFixtures -update-fixtures): %v", err)
			}
		}
	}
}

// wantSuffix keeps the .want files of a .tar.gz and a .zip of the same
// name apart.
func wantSuffix(file string) string {
	if strings.HasSuffix(file, ".zip") {
		return ".zip.want"
	}
	return ".tar.gz.want"
}
