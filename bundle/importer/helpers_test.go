package importer

// Helpers of the importer tests, as package bundle's tests have them.

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"flag"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
)

// TestMain registers the formats of this package, as package
// bundle/formats does (which these tests cannot import).
func TestMain(m *testing.M) {
	for _, f := range All() {
		bundle.RegisterFormat(f)
	}
	os.Exit(m.Run())
}

var updateFixtures = flag.Bool("update-fixtures", false, "rewrite the archive fixtures in testdata/import/bad")

// arEntry is one entry of a generated archive.
type arEntry struct {
	name     string
	typ      byte // tar type flag
	mode     int64
	body     []byte
	linkname string
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

// wantFile reads a .want file: optional "# flags: name value ..." lines and
// "rule<TAB>path" lines.
func wantFile(t *testing.T, name string) (want []string, opts *bundle.Options) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	opts = &bundle.Options{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if rest, ok := strings.CutPrefix(line, "# flags:"); ok {
			f := strings.Fields(rest)
			for i := 0; i+1 < len(f); i += 2 {
				n, err := strconv.ParseInt(f[i+1], 10, 64)
				if err != nil {
					t.Fatalf("%s: bad flag value %q", name, f[i+1])
				}
				switch f[i] {
				case "max-size":
					opts.Limits.MaxTotalSize = n
				case "max-entries":
					opts.Limits.MaxEntries = int(n)
				case "max-path":
					opts.Limits.MaxPathLen = int(n)
				default:
					t.Fatalf("%s: unknown flag %q", name, f[i])
				}
			}
			continue
		}
		want = append(want, line)
	}
	slices.Sort(want)
	return want, opts
}

// badSource is the bundle a .want file describes: the directory or archive
// of the same name without ".want".
func badSource(t *testing.T, want string) string {
	src := strings.TrimSuffix(want, ".want")
	if _, err := os.Lstat(src); err != nil {
		t.Fatalf("no bundle for %s: %v", want, err)
	}
	return src
}

// checkProblems compares the rule and path of each problem of ie with want
// (sorted "rule\tpath" lines of a .want file), and wants every problem to
// have a message.
func checkProblems(t *testing.T, ie *bundle.InvalidError, want []string) {
	t.Helper()
	var got []string
	for _, p := range ie.Problems {
		got = append(got, p.Rule+"\t"+p.Path)
		if p.Message == "" {
			t.Errorf("problem %s at %s has no message", p.Rule, p.Path)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n got  %q\n want %q\nfull error:\n%v", got, want, ie)
	}
}
