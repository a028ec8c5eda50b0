package runtimefetch

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// pep440 is a PEP 440 version in the forms berth pins (pyVersion):
// release, optional a/b/rc pre-release, .post and .dev, local label.
var pep440 = regexp.MustCompile(`^(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?(?:\.post(\d+))?(?:\.dev(\d+))?(?:\+([A-Za-z0-9.]+))?$`)

type pyVer struct {
	release            []int
	pre                int // -2 dev-only release, 0 a, 1 b, 2 rc, 3 none
	preN, post, dev    int // post -1 none; dev maxInt none
	local, text        string
	isPre, hasLocalTag bool
}

func parsePyVersion(s string) (*pyVer, bool) {
	m := pep440.FindStringSubmatch(s)
	if m == nil || len(s) > 128 {
		return nil, false
	}
	v := &pyVer{pre: 3, post: -1, dev: int(^uint(0) >> 1), text: s, local: m[6], hasLocalTag: m[6] != ""}
	for _, part := range strings.Split(m[1], ".") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil, false
		}
		v.release = append(v.release, n)
	}
	atoi := func(s string) (int, bool) {
		n, err := strconv.Atoi(s)
		return n, err == nil
	}
	var ok bool
	if m[2] != "" {
		v.pre = map[string]int{"a": 0, "b": 1, "rc": 2}[m[2]]
		if v.preN, ok = atoi(m[3]); !ok {
			return nil, false
		}
		v.isPre = true
	}
	if m[4] != "" {
		if v.post, ok = atoi(m[4]); !ok {
			return nil, false
		}
	}
	if m[5] != "" {
		if v.dev, ok = atoi(m[5]); !ok {
			return nil, false
		}
		v.isPre = true
		if m[2] == "" && m[4] == "" {
			v.pre = -2 // 1.0.dev1 sorts before 1.0a1
		}
	}
	return v, true
}

// cmpRelease compares release segments, padding the shorter with zeros.
func cmpRelease(a, b []int) int {
	for i := 0; i < max(len(a), len(b)); i++ {
		x, y := 0, 0
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if c := cmp.Compare(x, y); c != 0 {
			return c
		}
	}
	return 0
}

// comparePy orders PEP 440 versions, ignoring local labels.
func comparePy(a, b *pyVer) int {
	if c := cmpRelease(a.release, b.release); c != 0 {
		return c
	}
	if c := cmp.Compare(a.pre, b.pre); c != 0 {
		return c
	}
	if c := cmp.Compare(a.preN, b.preN); c != 0 {
		return c
	}
	if c := cmp.Compare(a.post, b.post); c != 0 {
		return c
	}
	return cmp.Compare(a.dev, b.dev)
}

// specifier is one clause of a PEP 440 version specifier.
type specifier struct {
	op     string
	v      *pyVer
	prefix []int // ==X.Y.* and !=X.Y.*
}

var specClause = regexp.MustCompile(`^(~=|===|==|!=|<=|>=|<|>)\s*([0-9A-Za-z.+*]+)$`)

// parseSpecifiers parses a comma-separated PEP 440 specifier such as
// ">=1.2,<2" or "~=2025.4".
func parseSpecifiers(s string) ([]specifier, error) {
	if len(s) > 256 {
		return nil, fmt.Errorf("specifier too long")
	}
	var out []specifier
	for _, clause := range strings.Split(s, ",") {
		m := specClause.FindStringSubmatch(strings.TrimSpace(clause))
		if m == nil || m[1] == "===" {
			return nil, fmt.Errorf("%q is not a version specifier berth resolves (~=, ==, !=, <=, >=, <, >)", clause)
		}
		sp := specifier{op: m[1]}
		ver := m[2]
		if p, ok := strings.CutSuffix(ver, ".*"); ok {
			if sp.op != "==" && sp.op != "!=" {
				return nil, fmt.Errorf("%q: a wildcard goes only with == or !=", clause)
			}
			v, ok := parsePyVersion(p)
			if !ok || v.isPre || v.post >= 0 || v.hasLocalTag {
				return nil, fmt.Errorf("%q is not a version prefix", clause)
			}
			sp.prefix = v.release
		} else {
			v, ok := parsePyVersion(ver)
			if !ok || (v.hasLocalTag && sp.op != "==" && sp.op != "!=") {
				return nil, fmt.Errorf("%q does not name a PEP 440 version", clause)
			}
			if sp.op == "~=" && len(v.release) < 2 {
				return nil, fmt.Errorf("%q: ~= needs a version of two or more parts", clause)
			}
			sp.v = v
		}
		out = append(out, sp)
	}
	return out, nil
}

func (sp specifier) match(v *pyVer) bool {
	if sp.prefix != nil {
		eq := len(v.release) >= len(sp.prefix) && cmpRelease(v.release[:len(sp.prefix)], sp.prefix) == 0
		if len(v.release) < len(sp.prefix) {
			eq = cmpRelease(v.release, sp.prefix) == 0
		}
		return eq == (sp.op == "==")
	}
	c := comparePy(v, sp.v)
	switch sp.op {
	case "==":
		return c == 0 && (!sp.v.hasLocalTag || v.local == sp.v.local)
	case "!=":
		return c != 0
	case "<=":
		return c <= 0
	case ">=":
		return c >= 0
	case "<":
		// <V excludes pre-releases of V unless V is one
		return c < 0 && (sp.v.isPre || !v.isPre || cmpRelease(v.release, sp.v.release) != 0)
	case ">":
		// >V excludes post-releases of V unless V is one
		return c > 0 && (sp.v.post >= 0 || cmpRelease(v.release, sp.v.release) != 0 || v.post < 0)
	case "~=":
		prefix := sp.v.release[:len(sp.v.release)-1]
		return c >= 0 && len(v.release) >= len(prefix) && cmpRelease(v.release[:len(prefix)], prefix) == 0
	}
	return false
}

// PyPIProject is what berth reads of a project page of a PEP 691 JSON
// simple index: the files, each with its yanked mark, and the PEP 700
// versions list when the index gives one.
type PyPIProject struct {
	Name  string `json:"name"`
	Files []struct {
		Filename string          `json:"filename"`
		Yanked   json.RawMessage `json:"yanked"`
	} `json:"files"`
	Versions []string `json:"versions"`
}

// ParseSimpleIndex decodes a PEP 691 project page (application/vnd.pypi.simple.v1+json)
// of the project name and returns its versions that are not yanked: a
// version counts when one of its files (wheel or sdist, by the file name)
// is not yanked. It is untrusted input.
func ParseSimpleIndex(name string, data []byte) ([]string, error) {
	var p PyPIProject
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("the index's page for %s is not a PEP 691 JSON project page (%v)", name, err)
	}
	if normalizePyPI(p.Name) != normalizePyPI(name) {
		return nil, fmt.Errorf("the index answered for %s with the page of %q", name, printable(p.Name))
	}
	norm := normalizePyPI(name)
	seen := map[string]bool{}
	var out []string
	for _, f := range p.Files {
		if y := strings.TrimSpace(string(f.Yanked)); y != "" && y != "false" && y != "null" {
			continue
		}
		v := fileVersion(norm, f.Filename)
		if v == "" || seen[v] {
			continue
		}
		seen[v] = true
		out = append(out, v)
	}
	if len(p.Versions) > 0 {
		// PEP 700: versions lists every version; a version with no
		// unyanked file is still not installable.
		out = slices.DeleteFunc(out, func(v string) bool { return !slices.Contains(p.Versions, v) })
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the index lists no installable (unyanked) files of %s", name)
	}
	return out, nil
}

var pyNormRe = regexp.MustCompile(`[-_.]+`)

// normalizePyPI is the PEP 503 normalized name.
func normalizePyPI(name string) string { return strings.ToLower(pyNormRe.ReplaceAllString(name, "-")) }

// fileVersion is the version a distribution file of the project norm
// holds: name-version-….whl or name-version.tar.gz / .zip. "" when the
// file is of another project or its version is not one berth reads.
func fileVersion(norm, file string) string {
	var rest string
	switch {
	case strings.HasSuffix(file, ".whl"):
		parts := strings.Split(strings.TrimSuffix(file, ".whl"), "-")
		if len(parts) < 5 || normalizePyPI(parts[0]) != norm {
			return ""
		}
		rest = parts[1]
	case strings.HasSuffix(file, ".tar.gz"), strings.HasSuffix(file, ".zip"):
		base := strings.TrimSuffix(strings.TrimSuffix(file, ".tar.gz"), ".zip")
		i := strings.LastIndex(base, "-")
		if i <= 0 || normalizePyPI(base[:i]) != norm {
			return ""
		}
		rest = base[i+1:]
	default:
		return ""
	}
	if _, ok := parsePyVersion(rest); !ok {
		return ""
	}
	return rest
}

// PickPyPI picks the highest version of versions that satisfies req (a
// PEP 440 specifier; "" and "latest" mean any). Pre-releases are picked
// only when the specifier names one.
func PickPyPI(name string, versions []string, req string) (string, error) {
	var specs []specifier
	if req != "" && req != "latest" {
		var err error
		if specs, err = parseSpecifiers(req); err != nil {
			return "", err
		}
	}
	allowPre := slices.ContainsFunc(specs, func(s specifier) bool { return s.v != nil && s.v.isPre })
	var best *pyVer
	for _, s := range versions {
		v, ok := parsePyVersion(s)
		if !ok || (v.isPre && !allowPre) || v.hasLocalTag {
			continue
		}
		if !slices.ContainsFunc(specs, func(sp specifier) bool { return !sp.match(v) }) && (best == nil || comparePy(v, best) > 0) {
			best = v
		}
	}
	if best == nil {
		what := "no release"
		if len(specs) > 0 {
			what = fmt.Sprintf("no release that satisfies %q", req)
		}
		return "", fmt.Errorf("the index lists %s of %s", what, name)
	}
	return best.text, nil
}
