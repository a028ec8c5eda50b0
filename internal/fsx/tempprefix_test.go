package fsx

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tempSite finds a temporary directory or file made under a literal
// "berth-" prefix: os.MkdirTemp(dir, "berth-npm-").
var tempSite = regexp.MustCompile(`(?:MkdirTemp|CreateTemp)\([^,()]*(?:\([^()]*\))?[^,()]*,\s*"(berth-[^"*]*)`)

// notBerth are the prefixes of programs that are not the berth binary (the
// release script, the demo, test helpers, generators, benchmarks): berth
// gc has no business with their directories.
var notBerth = map[string]bool{
	"berth-release-check-": true, "berth-release-key-": true, "berth-demo-": true,
	"berth-conformance-": true, "berth-kr-": true, "berth-nobody-": true,
	"berth-builtingen-": true, "berth-bus-": true, "berth-bench-bundle-": true,
}

// TestTempPrefixesCoverEveryTempDir reads every non-test Go file of the
// module and fails when berth makes a temporary directory or file under a
// "berth-" prefix that TempPrefixes does not name: berth gc would never
// sweep what a killed command left there (an npm work directory holds the
// operator's auth token).
func TestTempPrefixesCoverEveryTempDir(t *testing.T) {
	root := filepath.Join("..", "..")
	found := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "node_modules" || (strings.HasPrefix(n, ".") && p != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range tempSite.FindAllStringSubmatch(string(b), -1) {
			found[m[1]] = p
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"berth-npm-", "berth-download-"} {
		if found[want] == "" {
			t.Fatalf("the scan found no MkdirTemp with prefix %q: the pattern is broken (found %v)", want, found)
		}
	}
	for prefix, file := range found {
		if notBerth[prefix] || covered(prefix) {
			continue
		}
		t.Errorf("%s makes a temp directory %q* that fsx.TempPrefixes does not name: berth gc never sweeps it; add it to TempPrefixes (and gc's help, docs/state.md)", file, prefix)
	}
}

func covered(prefix string) bool {
	for _, p := range TempPrefixes {
		if p == prefix {
			return true
		}
	}
	return false
}
