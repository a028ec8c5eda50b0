package importer

import (
	"context"
	"fmt"
	"math"

	"github.com/berth-mcp/berth/bundle"
)

// DerivedVersion is the version derived from digest
// (bundle.DerivedVersionOf): "0.0.0-berth." and its first 12 hex digits,
// with their leading zeros dropped when all 12 are decimal and the first
// is 0.
func DerivedVersion(digest string) string {
	return bundle.DerivedVersionOf(digest)
}

// PluginVersion is the version berth import gives the versionless Claude
// Code plugin in dir when imported with no options (no --without, no
// --pin): the version derived from the bundle it generates
// (bundle.DerivedDigest), the same on every machine. A marketplace lists
// the plugin under it. The plugin is only read.
func PluginVersion(ctx context.Context, dir string) (string, error) {
	c := convertClaude(dir, nil)
	m := c.manifest
	if m == nil || m.ImportedFrom == nil || m.ImportedFrom.DerivedVersion == nil {
		for _, p := range c.ps.list {
			if p.Rule == bundle.RuleClaudeVersionMissing || m == nil {
				return "", fmt.Errorf("%s", p.Message)
			}
		}
		return "", fmt.Errorf("berth generates no manifest for it")
	}
	t, err := readPlugin(ctx, dir)
	if err != nil {
		return "", err
	}
	return bundle.DerivedVersionOf(bundle.DerivedDigest(t.Listing, m)), nil
}

// ContentDigest is the content digest of the plugin in dir: the digest
// ("sha256:<hex>") of the canonical listing of its files (the listing
// berth's bundle digest is taken over; docs/bundle-format.md), read as
// they are, with no berth.json added. Symlinks are not followed. The tree
// was read with the operator's limits already, so none are applied here.
func ContentDigest(ctx context.Context, dir string) (string, error) {
	t, err := readPlugin(ctx, dir)
	if err != nil {
		return "", err
	}
	if _, ok := t.Listing.Lookup(bundle.ManifestFile); ok {
		return "", fmt.Errorf("it holds a %s; a Claude Code plugin has none", bundle.ManifestFile)
	}
	return t.Listing.Digest(), nil
}

// readPlugin reads the tree of the plugin in dir with no limits (the
// operator's were applied when it was first read) and fails when its
// files cannot be listed.
func readPlugin(ctx context.Context, dir string) (*bundle.Tree, error) {
	t, ps, err := bundle.ReadTree(ctx, dir, &bundle.Limits{MaxTotalSize: math.MaxInt64, MaxEntries: math.MaxInt, MaxPathLen: math.MaxInt})
	if err != nil {
		return nil, err
	}
	if t.Listing == nil {
		if len(ps) > 0 {
			return nil, fmt.Errorf("%s", ps[0].Message)
		}
		return nil, fmt.Errorf("its files cannot be listed")
	}
	return t, nil
}
