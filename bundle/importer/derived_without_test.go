package importer

import (
	"context"
	"testing"

	"github.com/berth-mcp/berth/bundle"
)

// A versionless plugin's derived version covers the generated berth.json:
// the full import and an import with --without two are two bundles, and
// get two versions; each version is the one derived from its bundle, the
// same every time, and a marketplace lists the full import's.
func TestDerivedVersionCoversWithout(t *testing.T) {
	files := map[string]string{".mcp.json": `{"mcpServers": {
		"one": {"type": "http", "url": "https://one.example/mcp"},
		"two": {"type": "http", "url": "https://two.example/mcp"}}}`}
	dir := writePlugin(t, `{"name": "twoservers", "description": "d"}`, files)
	open := func(o *bundle.Options) *bundle.Bundle {
		t.Helper()
		b, err := bundle.Open(context.Background(), dir, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	all, less := open(nil), open(&bundle.Options{Without: []string{"two"}})
	if !bundle.IsDerivedVersion(all.Manifest.Version) || !bundle.IsDerivedVersion(less.Manifest.Version) {
		t.Fatalf("versions %s, %s not derived", all.Manifest.Version, less.Manifest.Version)
	}
	if all.Digest == less.Digest {
		t.Fatalf("--without two gave the same bundle %s", all.Digest)
	}
	if all.Manifest.Version == less.Manifest.Version {
		t.Errorf("two different bundles (%s with both servers, %s --without two) share the version %s", all.Digest, less.Digest, all.Manifest.Version)
	}
	for _, b := range []*bundle.Bundle{all, less} {
		dv := b.Manifest.ImportedFrom.DerivedVersion
		if dv == nil || bundle.DerivedVersionOf(dv.ContentDigest) != b.Manifest.Version {
			t.Errorf("version %s is not derived from importedFrom.derivedVersion %+v", b.Manifest.Version, dv)
		}
		if got := bundle.DerivedDigest(b.Tree.Listing, b.Manifest); got != dv.ContentDigest {
			t.Errorf("derivedVersion.contentDigest %s, but the bundle with its version blanked has digest %s", dv.ContentDigest, got)
		}
	}
	if again := open(nil); again.Digest != all.Digest || again.Manifest.Version != all.Manifest.Version {
		t.Errorf("a second import gave %s %s, the first %s %s", again.Manifest.Version, again.Digest, all.Manifest.Version, all.Digest)
	}
	v, err := PluginVersion(context.Background(), dir)
	if err != nil || v != all.Manifest.Version {
		t.Errorf("PluginVersion = %q, %v; the import gives %s", v, err, all.Manifest.Version)
	}
}
