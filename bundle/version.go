package bundle

import (
	"regexp"
	"strings"
)

// DerivedVersionPrefix starts the version berth derives for a Claude Code
// plugin whose plugin.json has none: "0.0.0-berth." and 12 hex digits of
// its content digest (docs/manifest.md, "Versionless plugins").
const DerivedVersionPrefix = "0.0.0-berth."

var derivedVersionRe = regexp.MustCompile(`^0\.0\.0-berth\.[0-9a-f]{12}$`)

// IsDerivedVersion reports whether v is a version berth derived from a
// plugin's content. Such versions name contents, not releases: two of
// them are never ordered by comparing their digits (which semver would do
// lexically). Between two derived versions of one plugin, the one its
// source offers now is the newer.
func IsDerivedVersion(v string) bool { return derivedVersionRe.MatchString(v) }

// VersionNewer reports whether offered, what a source offers now, is newer
// than current, an installed version: by semver (VersionLess), except that
// between two derived versions any other content is newer, since the
// source offers it now.
func VersionNewer(current, offered string) bool {
	if IsDerivedVersion(current) && IsDerivedVersion(offered) {
		return !strings.EqualFold(current, offered)
	}
	return VersionLess(current, offered)
}
