package importer

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
)

// A versionless plugin whose bundle digest starts with 12 decimal digits
// and a 0 (about one in 2,800) is imported: its derived version drops the
// leading zeros (semver forbids them), rather than being refused.
func TestDerivedVersionLeadingZeroImported(t *testing.T) {
	files := map[string]string{".mcp.json": `{"mcpServers": {"one": {"type": "http", "url": "https://one.example/mcp"}}}`}
	dir := writePlugin(t, `{"name": "zero", "description": "d"}`, files)
	m := convertClaude(dir, nil).manifest
	if m == nil {
		t.Fatal("no manifest")
	}
	readme := filepath.Join(dir, "README.md")
	for i := 0; i < 100000; i++ {
		if err := os.WriteFile(readme, []byte(fmt.Sprintf("n %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		tr, _, err := bundle.ReadTree(context.Background(), dir, &bundle.Limits{MaxTotalSize: math.MaxInt64, MaxEntries: math.MaxInt, MaxPathLen: math.MaxInt})
		if err != nil {
			t.Fatal(err)
		}
		d := bundle.DerivedDigest(tr.Listing, m)
		h := strings.TrimPrefix(d, "sha256:")[:12]
		if h[0] != '0' || strings.Trim(h, "0123456789") != "" {
			continue
		}
		t.Logf("README %q gives bundle digest %s", fmt.Sprintf("n %d\n", i), d)
		b, err := bundle.Open(context.Background(), dir, nil)
		if err != nil {
			t.Fatalf("a valid versionless plugin is refused because of the version berth derived for it: %v", err)
		}
		defer b.Close()
		want := bundle.DerivedVersionPrefix + strings.TrimLeft(h, "0")
		if b.Manifest.Version != want || !bundle.IsStrictSemver(want) || !bundle.IsDerivedVersion(want) {
			t.Errorf("version %s, want %s (strict semver, derived)", b.Manifest.Version, want)
		}
		if got := b.Manifest.ImportedFrom.DerivedVersion.ContentDigest; got != d {
			t.Errorf("derivedVersion.contentDigest %s, want %s", got, d)
		}
		return
	}
	t.Fatal("no such content found in 100,000 tries")
}
