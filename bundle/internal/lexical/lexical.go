// Package lexical holds the spelling rules of a manifest's strings that
// package bundle and the packages under it (the runtime-fetch rules, the
// importers) all apply: a strict semver version, an environment variable's
// name, a clean path inside a tree. It is here, not in bundle, because
// bundle imports bundle/runtimefetch.
package lexical

import (
	"path"
	"regexp"
	"strings"
)

var (
	// semverRe is the official semver 2.0 regular expression.
	semverRe  = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)
	envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// StrictSemver reports whether v is a semver 2.0 version with no "v".
func StrictSemver(v string) bool { return semverRe.MatchString(v) }

// EnvName reports whether s is a portable environment variable name:
// letters, digits and "_", not starting with a digit.
func EnvName(s string) bool { return envNameRe.MatchString(s) }

// CleanRel reports whether rel is a clean relative path that stays where
// it starts: no "..", ".", "//", leading or trailing '/', or backslash.
func CleanRel(rel string) bool {
	return rel != "" && rel != "." && path.Clean(rel) == rel && !path.IsAbs(rel) && rel != ".." && !strings.HasPrefix(rel, "../") && !strings.Contains(rel, "\\")
}
