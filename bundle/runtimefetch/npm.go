package runtimefetch

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/berth-mcp/berth/bundle/internal/lexical"
)

// npmTag is a dist-tag as npm allows one: not a version or a range.
var npmTag = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._-]{0,127}$`)

// npmRange parses an npm semver range.
func npmRange(req string) (*semver.Constraints, error) {
	if len(req) > 256 {
		return nil, fmt.Errorf("range too long")
	}
	return semver.NewConstraint(req)
}

// Packument is the part of an npm registry's package document (the
// abbreviated "corgi" form, application/vnd.npm.install-v1+json) that
// berth reads to pin a version.
type Packument struct {
	Name     string                     `json:"name"`
	DistTags map[string]string          `json:"dist-tags"`
	Versions map[string]json.RawMessage `json:"versions"`
}

// ParsePackument decodes a packument of the package name: a JSON object
// whose name is name, with dist-tags and versions. It is untrusted input.
func ParsePackument(name string, data []byte) (*Packument, error) {
	var p Packument
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("the registry's document for %s is not a packument (%v)", name, err)
	}
	if p.Name != name {
		return nil, fmt.Errorf("the registry answered for %s with the document of %q", name, printable(p.Name))
	}
	if len(p.Versions) == 0 {
		return nil, fmt.Errorf("the registry lists no versions of %s", name)
	}
	return &p, nil
}

// PickNPM picks the version of p that npm would install for req: the
// dist-tag's version for a tag ("" is "latest"), and for a range the
// "latest" tag's version when it satisfies the range, else the highest
// satisfying version. A prerelease is picked only when req names one (a
// range with a prerelease, or a tag that points at one). A tag or range
// that no listed version satisfies is an error: berth never writes a
// version the registry does not list.
func PickNPM(p *Packument, req string) (string, error) {
	listed := func(v string) bool {
		_, ok := p.Versions[v]
		return ok && lexical.StrictSemver(v)
	}
	if c, err := npmRange(req); req != "" && err == nil {
		var best *semver.Version
		if l := p.DistTags["latest"]; listed(l) {
			if v, err := semver.StrictNewVersion(l); err == nil && c.Check(v) {
				return l, nil
			}
		}
		for _, s := range slices.Sorted(maps.Keys(p.Versions)) {
			if !listed(s) {
				continue
			}
			v, err := semver.StrictNewVersion(s)
			if err != nil || !c.Check(v) {
				continue
			}
			if best == nil || v.GreaterThan(best) {
				best = v
			}
		}
		if best == nil {
			return "", fmt.Errorf("no version of %s that the registry lists satisfies %q", p.Name, req)
		}
		return best.Original(), nil
	}
	tag := req
	if tag == "" {
		tag = "latest"
	}
	if !npmTag.MatchString(tag) {
		return "", fmt.Errorf("%q is neither a dist-tag nor a semver range", req)
	}
	v, ok := p.DistTags[tag]
	if !ok {
		return "", fmt.Errorf("the registry has no dist-tag %q for %s (it has %s)", tag, p.Name, strings.Join(slices.Sorted(maps.Keys(p.DistTags)), ", "))
	}
	if !lexical.StrictSemver(v) {
		return "", fmt.Errorf("the registry's dist-tag %q of %s points at %q, which is not a semver version", tag, p.Name, printable(v))
	}
	if _, ok := p.Versions[v]; !ok {
		return "", fmt.Errorf("the registry's dist-tag %q of %s points at %s, a version it does not list", tag, p.Name, v)
	}
	return v, nil
}

// printable quotes s for a message when it holds anything but printable
// ASCII, and cuts it at 100 bytes: registry text is untrusted.
func printable(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	for _, r := range s {
		if r < 0x20 || r > 0x7e {
			return fmt.Sprintf("%+q", s)
		}
	}
	return s
}
