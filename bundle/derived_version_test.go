package bundle_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
)

// withManifest copies the good remote bundle and edits its berth.json.
func withManifest(t *testing.T, edit func(string) string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "b")
	if err := os.CopyFS(dir, os.DirFS("../testdata/bundles/good/remote")); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "berth.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(edit(string(data))), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".claude-plugin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".claude-plugin", "plugin.json"), []byte(`{"name": "acme-cloud"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The derived-version form 0.0.0-berth.* is reserved to versions berth
// derived: a hand-written (or signed-catalog) berth.json that calls itself
// 0.0.0-berth.aaaaaaaaaaaa with no importedFrom.derivedVersion, or with
// one whose digest gives another version, is refused, so it cannot get the
// ordering of derived versions (any other content is newer) and pass a
// replayed older content off as an upgrade. importedFrom.derivedVersion
// with a release version is refused too; the matching pair is accepted.
func TestDerivedVersionFormReserved(t *testing.T) {
	const digest = "sha256:aaaaaaaaaaaa0123456789abcdef0123456789abcdef0123456789abcdef0123"
	imp := `"importedFrom": {"format": "claude-plugin", "manifest": ".claude-plugin/plugin.json", "derivedVersion": {"contentDigest": "` + digest + `"}},`
	for _, tc := range []struct {
		name, version, imported string
		refused                 bool
	}{
		{"no importedFrom", "0.0.0-berth.aaaaaaaaaaaa", "", true},
		{"other digits", "0.0.0-berth.bbbbbbbbbbbb", imp, true},
		{"not 12 digits", "0.0.0-berth.aaaaaaaaaaaa0", imp, true},
		{"release version with derivedVersion", "2.0.0-rc.1", imp, true},
		{"derived", "0.0.0-berth.aaaaaaaaaaaa", imp, false},
		{"release version", "2.0.0-rc.1", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := withManifest(t, func(s string) string {
				s = strings.Replace(s, `"version": "2.0.0-rc.1"`, `"version": "`+tc.version+`"`, 1)
				if tc.imported != "" {
					s = strings.Replace(s, `"manifestVersion": 1,`, `"manifestVersion": 1, `+tc.imported, 1)
				}
				return s
			})
			b, err := bundle.Open(context.Background(), dir, nil)
			if err == nil {
				defer b.Close()
			}
			var ie *bundle.InvalidError
			switch {
			case tc.refused && !errors.As(err, &ie):
				t.Fatalf("version %s accepted (err %v); the form 0.0.0-berth.* is reserved", tc.version, err)
			case tc.refused:
				found := false
				for _, p := range ie.Problems {
					found = found || p.Rule == bundle.RuleVersionDerived
				}
				if !found {
					t.Errorf("refused, but not under %s: %v", bundle.RuleVersionDerived, err)
				}
			case err != nil:
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

// DerivedVersionOf keeps "0.0.0-berth." and the first 12 hex digits, and
// drops the leading zeros only when the 12 are all decimal (semver
// forbids a number with a leading zero).
func TestDerivedVersionOf(t *testing.T) {
	for digest, want := range map[string]string{
		"sha256:0123456789abffffffffffffffffffffffffffffffffffffffffffffffffffff": "0.0.0-berth.0123456789ab",
		"sha256:123456789012ffffffffffffffffffffffffffffffffffffffffffffffffffff": "0.0.0-berth.123456789012",
		"sha256:001234567890ffffffffffffffffffffffffffffffffffffffffffffffffffff": "0.0.0-berth.1234567890",
		"sha256:000000000000ffffffffffffffffffffffffffffffffffffffffffffffffffff": "0.0.0-berth.0",
		"sha256:0123":      "",
		"md5:0123456789ab": "",
	} {
		got := bundle.DerivedVersionOf(digest)
		if got != want {
			t.Errorf("DerivedVersionOf(%s) = %q, want %q", digest, got, want)
		}
		if got != "" && (!bundle.IsStrictSemver(got) || !bundle.IsDerivedVersion(got)) {
			t.Errorf("%s is not strict semver or not derived", got)
		}
	}
}

// A plugin that had a version (1.2.0) and whose publisher then drops
// plugin.json's version (Claude Code allows it) gets a derived version,
// which semver orders below 1.2.0. What the source offers now is the
// newer: outdated and upgrade offer it (and outdated says the version was
// dropped). The other way round stays semver, and an unchanged derived
// version is not newer.
func TestDroppedVersionIsUpgrade(t *testing.T) {
	if !bundle.VersionNewer("1.2.0", "0.0.0-berth.abcdefabcdef") {
		t.Errorf("the source now offers 0.0.0-berth.abcdefabcdef in place of 1.2.0, and VersionNewer says it is not newer")
	}
	if !bundle.DroppedVersion("1.2.0", "0.0.0-berth.abcdefabcdef") || bundle.DroppedVersion("0.0.0-berth.abcdefabcdef", "0.0.0-berth.abcdefabcdee") {
		t.Errorf("DroppedVersion wrong")
	}
	if !bundle.VersionNewer("0.0.0-berth.abcdefabcdef", "1.0.0") {
		t.Errorf("a release version after a derived one is not newer")
	}
	if bundle.VersionNewer("0.0.0-berth.abcdefabcdef", "0.0.0-berth.abcdefabcdef") {
		t.Errorf("the installed derived version is newer than itself")
	}
	if bundle.VersionNewer("1.2.0", "1.1.0") || bundle.VersionNewer("1.2.0", "0.0.0-berth") {
		t.Errorf("semver order broken")
	}
}
