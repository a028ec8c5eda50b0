package marketplace

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace/catalog"
)

// ResolveOptions tune Resolve. A nil *ResolveOptions means the defaults.
type ResolveOptions struct {
	// Now is the time against which MinReleaseAge is measured; zero means
	// time.Now().
	Now time.Time
	// MinReleaseAge is the operator's cooldown: versions released less
	// than this long ago are skipped. 0 means no cooldown.
	MinReleaseAge time.Duration
	// BerthVersion is checked against each version's requiresBerth; ""
	// means bundle.BerthVersion.
	BerthVersion string
	// AllowYanked lets a yanked version be chosen (sync installs what a
	// lock names even when it was yanked since, with a warning). Revoked
	// versions are never chosen.
	AllowYanked bool
	// Skip, when set, is asked of each version that every other rule
	// lets through, highest first, until one is chosen: a reason not to
	// choose it ("" for none). An unsigned source's install skips a
	// version berth cannot build a bundle for.
	Skip func(*catalog.Version) string
}

// Resolution is the outcome of Resolve: the chosen version, if any, and
// every version of the plugin, highest first, with the reason it was not
// chosen.
type Resolution struct {
	Plugin     *catalog.Plugin
	Constraint string
	// Chosen is the highest version that satisfies every rule; nil when
	// none does.
	Chosen     *catalog.Version
	Candidates []Candidate
}

// Candidate is one version and why it was or was not chosen.
type Candidate struct {
	Version *catalog.Version
	Chosen  bool
	// Skipped says why it was not chosen; "" for the chosen one.
	Skipped string
}

// NoVersionError is returned by Resolve when no version qualifies. It lists
// every version and why it was skipped.
type NoVersionError struct {
	Plugin     string
	Constraint string
	Candidates []Candidate
}

func (e *NoVersionError) Error() string {
	var b strings.Builder
	c := e.Constraint
	if c == "" {
		c = "any version"
	}
	fmt.Fprintf(&b, "no version of %s can be installed for %s:", e.Plugin, c)
	for _, x := range e.Candidates {
		fmt.Fprintf(&b, "\n  %s: %s", x.Version.Version, x.Skipped)
	}
	if len(e.Candidates) == 0 {
		b.WriteString(" the catalog lists none")
	}
	b.WriteString("\nberth show " + e.Plugin + " lists its versions; relax the constraint, or wait for a release that qualifies")
	return b.String()
}

// Resolve picks the version of p that install would pick for constraint (a
// Masterminds/semver constraint; "" means any): the highest version that
// satisfies it and its requiresBerth, skipping prereleases unless the
// constraint names one, yanked and revoked versions, and versions younger
// than MinReleaseAge. On failure the Resolution is still returned, with a
// *NoVersionError. A constraint that does not parse is an error with a nil
// Resolution.
func Resolve(p *catalog.Plugin, constraint string, opts *ResolveOptions) (*Resolution, error) {
	return newResolver(opts).resolve(p, constraint)
}

// resolver applies the resolution rules with the constraints it parsed
// once (search resolves thousands of plugins).
type resolver struct {
	o        ResolveOptions
	berth    *semver.Version
	berthErr error
	any      *semver.Constraints
	requires map[string]bool
}

func newResolver(opts *ResolveOptions) *resolver {
	r := &resolver{requires: map[string]bool{}}
	if opts != nil {
		r.o = *opts
	}
	if r.o.Now.IsZero() {
		r.o.Now = time.Now()
	}
	if r.o.BerthVersion == "" {
		r.o.BerthVersion = bundle.BerthVersion
	}
	r.berth, r.berthErr = semver.NewVersion(r.o.BerthVersion)
	r.any, _ = semver.NewConstraint("*")
	return r
}

func (r *resolver) resolve(p *catalog.Plugin, constraint string) (*Resolution, error) {
	cs := "*"
	if strings.TrimSpace(constraint) != "" {
		cs = constraint
	}
	c, err := semver.NewConstraint(cs)
	if err != nil {
		return nil, fmt.Errorf("%q is not a version constraint: %v; write one like ^1.2, ~1.4.0, >=1.0.0 <2.0.0 or an exact 1.4.2", constraint, err)
	}
	type parsed struct {
		v  *catalog.Version
		sv *semver.Version
	}
	var vs []parsed
	for _, v := range p.Versions {
		sv, err := semver.StrictNewVersion(v.Version)
		if err != nil {
			continue // ParseCatalog never lets one through
		}
		vs = append(vs, parsed{v, sv})
	}
	// bundle.VersionLess: semver, but two derived versions (contents of a
	// versionless plugin) keep the source's order, never their digits'.
	sort.SliceStable(vs, func(i, j int) bool { return bundle.VersionLess(vs[j].v.Version, vs[i].v.Version) })
	res := &Resolution{Plugin: p, Constraint: constraint}
	for _, x := range vs {
		cand := Candidate{Version: x.v}
		cand.Skipped = r.skip(x.v.Status, x.v.Reason, x.sv, x.v.RequiresBerth, x.v.Released, c, cs)
		if cand.Skipped == "" && res.Chosen == nil && r.o.Skip != nil {
			cand.Skipped = r.o.Skip(x.v)
		}
		switch {
		case cand.Skipped != "":
		case res.Chosen != nil:
			cand.Skipped = "older than " + res.Chosen.Version
		default:
			cand.Chosen = true
			res.Chosen = x.v
		}
		res.Candidates = append(res.Candidates, cand)
	}
	if res.Chosen == nil {
		return res, &NoVersionError{Plugin: p.Name, Constraint: constraint, Candidates: res.Candidates}
	}
	return res, nil
}

// skip returns why a version may not be chosen, or "".
func (r *resolver) skip(status catalog.Status, reason string, sv *semver.Version, requires string, released time.Time, c *semver.Constraints, cs string) string {
	switch {
	case status == catalog.StatusRevoked:
		return "revoked: " + reason
	case status == catalog.StatusYanked && !r.o.AllowYanked:
		return "yanked: " + reason
	case !c.Check(sv) && !(cs == "*" && bundle.IsDerivedVersion(sv.Original())):
		// A derived version (a versionless plugin's content, 0.0.0-berth.…)
		// is what its source offers, not an opt-in prerelease: no
		// constraint takes it.
		if sv.Prerelease() != "" {
			if cs == "*" {
				return "a prerelease, taken only when the constraint names one (like ^" + sv.Original() + ")"
			}
			return "a prerelease, and " + quoteConstraint(cs) + " names none (name one, like ^" + sv.Original() + ", to allow it)"
		}
		return "does not satisfy " + cs
	case requires != "" && !r.requiresOK(requires):
		return fmt.Sprintf("needs berth %s, and this is berth %s", requires, r.o.BerthVersion)
	case r.o.MinReleaseAge > 0 && r.o.Now.Sub(released) < r.o.MinReleaseAge:
		return fmt.Sprintf("released %s ago, within your min-release-age cooldown of %s", roundAge(r.o.Now.Sub(released)), r.o.MinReleaseAge)
	}
	return ""
}

func (r *resolver) requiresOK(constraint string) bool {
	ok, seen := r.requires[constraint]
	if !seen {
		ok = requiresOK(constraint, r.berth, r.berthErr)
		r.requires[constraint] = ok
	}
	return ok
}

// latest is Resolve with no constraint over an index entry, whose
// versions are sorted highest first.
func (r *resolver) latest(e *indexEntry) *indexVersion {
	for i := range e.Versions {
		v := &e.Versions[i]
		sv, err := semver.StrictNewVersion(v.Version)
		if err != nil {
			continue
		}
		if r.skip(v.Status, "", sv, v.Requires, v.Released, r.any, "*") == "" {
			return v
		}
	}
	return nil
}

func quoteConstraint(c string) string {
	if c == "*" {
		return "no constraint"
	}
	return "the constraint " + c
}

func requiresOK(constraint string, berth *semver.Version, berthErr error) bool {
	if berthErr != nil {
		return false
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return false
	}
	return c.Check(berth)
}

func roundAge(d time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d < time.Minute:
		return d.Round(time.Second)
	case d < time.Hour:
		return d.Round(time.Minute)
	}
	return d.Round(time.Hour)
}
