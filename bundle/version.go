package bundle

import (
	"crypto/sha256"
	"regexp"
	"slices"
	"strings"
)

// DerivedVersionPrefix starts the version berth derives for a Claude Code
// plugin whose plugin.json has none: "0.0.0-berth." and 12 hex digits of
// the digest of the bundle berth generates for it (docs/manifest.md,
// "Versionless plugins"). A berth.json may carry a version of this form
// only with an importedFrom.derivedVersion it was derived from
// (RuleVersionDerived).
const DerivedVersionPrefix = "0.0.0-berth."

// derivedVersionRe is the form DerivedVersionOf gives: 12 hex digits, or,
// when those are all decimal with a leading zero, the same digits without
// their leading zeros.
var derivedVersionRe = regexp.MustCompile(`^0\.0\.0-berth\.([0-9a-f]{12}|[1-9][0-9]{0,10}|0)$`)

// IsDerivedVersion reports whether v is a version berth derived from a
// plugin's content. Such versions name contents, not releases: two of
// them are never ordered by comparing their digits (which semver would do
// lexically). Between two derived versions of one plugin, the one its
// source offers now is the newer.
func IsDerivedVersion(v string) bool { return derivedVersionRe.MatchString(v) }

// DerivedVersionOf is the version derived from digest ("sha256:<hex>"):
// "0.0.0-berth." and its first 12 hex digits. When those 12 are all
// decimal digits and the first is 0 (about one digest in 2,800), semver
// forbids them as an identifier (a number with a leading zero), so the
// leading zeros are dropped ("0.0.0-berth.012345678901" would be
// "0.0.0-berth.12345678901"; twelve zeros give "0"). The mapping is
// deterministic and one-to-one on the 12 digits. It returns "" for a
// digest that is not "sha256:" and 64 lower-case hex digits.
func DerivedVersionOf(digest string) string {
	hx, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(hx) != 64 || strings.Trim(hx, "0123456789abcdef") != "" {
		return ""
	}
	id := hx[:12]
	if strings.Trim(id, "0123456789") == "" && id[0] == '0' {
		if id = strings.TrimLeft(id, "0"); id == "" {
			id = "0"
		}
	}
	return DerivedVersionPrefix + id
}

// DerivedDigest is the digest a derived version is taken from: the
// digest of the canonical listing l of the bundle's files with its
// berth.json replaced by m encoded with "version" and
// importedFrom.derivedVersion.contentDigest blank (""). It thus covers
// everything that shapes the bundle (the source's files, and in the
// generated berth.json the servers left out with --without, the fetches
// pinned with --pin, and whatever berth writes there), and not the
// version derived from it. l may or may not list a berth.json; m is not
// changed.
func DerivedDigest(l *Listing, m *Manifest) string {
	mc := *m
	mc.Version = ""
	if m.ImportedFrom != nil {
		imp := *m.ImportedFrom
		imp.DerivedVersion = &DerivedVersion{}
		mc.ImportedFrom = &imp
	}
	data := EncodeManifest(&mc)
	e := Entry{Path: ManifestFile, Mode: ModeFile, Size: int64(len(data)), SHA256: sha256.Sum256(data)}
	entries := slices.DeleteFunc(slices.Clone(l.Entries), func(x Entry) bool { return x.Path == ManifestFile })
	i, _ := slices.BinarySearchFunc(entries, ManifestFile, func(x Entry, p string) int { return strings.Compare(x.Path, p) })
	entries = slices.Insert(entries, i, e)
	return (&Listing{Entries: entries}).Digest()
}

// VersionNewer reports whether offered, what a source offers now, is newer
// than current, an installed version: by semver (VersionLess), except for
// derived versions, which the source offers now in place of what is
// installed: between two derived versions any other content is newer,
// and a derived version is newer than a release version (the source
// dropped its version; docs/marketplace.md, "Versionless plugins").
func VersionNewer(current, offered string) bool {
	if IsDerivedVersion(offered) {
		return !strings.EqualFold(current, offered)
	}
	return VersionLess(current, offered)
}

// DroppedVersion reports whether offered is a derived version the source
// offers in place of the release version current: the source dropped its
// plugin's version, and outdated says so.
func DroppedVersion(current, offered string) bool {
	return IsDerivedVersion(offered) && !IsDerivedVersion(current) && IsStrictSemver(current)
}
