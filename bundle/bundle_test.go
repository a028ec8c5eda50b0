package bundle

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const fixtures = "../testdata/bundles"

// wantFile reads a .want file: optional "# flags: name value ..." lines and
// "rule<TAB>path" lines.
func wantFile(t *testing.T, name string) (want []string, opts *Options) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	opts = &Options{}
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

func TestBadBundles(t *testing.T) {
	wants, err := filepath.Glob(filepath.Join(fixtures, "bad", "*.want"))
	if err != nil {
		t.Fatal(err)
	}
	if len(wants) < 45 {
		t.Fatalf("only %d bad bundles; the rules need at least 45", len(wants))
	}
	for _, w := range wants {
		name := strings.TrimSuffix(filepath.Base(w), ".want")
		t.Run(name, func(t *testing.T) {
			want, opts := wantFile(t, w)
			src := badSource(t, w)
			b, err := Open(context.Background(), src, opts)
			if !errors.Is(err, ErrInvalidBundle) {
				b.Close()
				t.Fatalf("Open(%s) = %v, want an invalid-bundle error", src, err)
			}
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("error is %T, want *InvalidError", err)
			}
			checkProblems(t, ie, want)
		})
	}
}

// checkProblems compares the rule and path of each problem of ie with want
// (sorted "rule\tpath" lines of a .want file), and wants every problem to
// have a message.
func checkProblems(t *testing.T, ie *InvalidError, want []string) {
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

func TestGoodBundles(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(fixtures, "good", "*"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range dirs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			continue
		}
		n++
		t.Run(filepath.Base(d), func(t *testing.T) {
			b, err := Open(context.Background(), d, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if b.Manifest == nil || !strings.HasPrefix(b.Digest, "sha256:") || len(b.Digest) != 71 {
				t.Fatalf("bundle %+v", b)
			}
		})
	}
	if n < 3 {
		t.Fatalf("only %d good bundles", n)
	}
}
