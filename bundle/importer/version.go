package importer

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/berth-mcp/berth/bundle"
)

// DerivedVersion is the version berth gives a Claude Code plugin whose
// plugin.json has none (docs/manifest.md, "Versionless plugins"):
// "0.0.0-berth." and the first 12 hex digits of contentDigest, the
// plugin's content digest (ContentDigest). The content digest is taken
// over the plugin's own files, without the berth.json berth generates, so
// it does not depend on the version derived from it; it is the same on
// every machine, and two different contents get two different versions.
func DerivedVersion(contentDigest string) string {
	return bundle.DerivedVersionPrefix + strings.TrimPrefix(contentDigest, "sha256:")[:12]
}

// ContentDigest is the content digest of the plugin in dir: the digest
// ("sha256:<hex>") of the canonical listing of its files (the listing
// berth's bundle digest is taken over; docs/bundle-format.md), read as
// they are, with no berth.json added. Symlinks are not followed. The tree
// was read with the operator's limits already, so none are applied here.
func ContentDigest(ctx context.Context, dir string) (string, error) {
	t, ps, err := bundle.ReadTree(ctx, dir, &bundle.Limits{MaxTotalSize: math.MaxInt64, MaxEntries: math.MaxInt, MaxPathLen: math.MaxInt})
	if err != nil {
		return "", err
	}
	if t.Listing == nil {
		if len(ps) > 0 {
			return "", fmt.Errorf("%s", ps[0].Message)
		}
		return "", fmt.Errorf("its files cannot be listed")
	}
	if _, ok := t.Listing.Lookup(bundle.ManifestFile); ok {
		return "", fmt.Errorf("it holds a %s; a Claude Code plugin has none", bundle.ManifestFile)
	}
	return t.Listing.Digest(), nil
}
