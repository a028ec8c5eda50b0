package marketplace

import (
	"fmt"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/review"
)

// Showing is what berth show says of one plugin of one catalog, read from
// the verified copy: every version and why install would pick or skip it,
// and the review of one version in the words of berth review (rebuilt
// from the catalog's summary). Its methods word the parts of berth show's
// text, so every rendering of it (the terminal, the marketplace's web
// page) says the same thing. Its JSON form is berth show --json.
type Showing struct {
	Catalog  *CatalogInfo    `json:"catalog"`
	Plugin   *catalog.Plugin `json:"plugin"`
	Versions []ShownVersion  `json:"versions"`
	// Install is the version berth install NAME would pick; "" when none.
	Install string `json:"install"`
	// Shown is the version whose review is shown.
	Shown         string             `json:"shown"`
	Review        *review.Disclosure `json:"review"`
	Tools         []catalog.Tool     `json:"tools"`
	ContextTokens int                `json:"contextTokens"`
}

// ShownVersion is one version of a Showing.
type ShownVersion struct {
	Version     string         `json:"version"`
	Status      catalog.Status `json:"status"`
	Reason      string         `json:"reason,omitempty"`
	Replacement string         `json:"replacement,omitempty"`
	Released    time.Time      `json:"released"`
	Digest      string         `json:"digest"`
	Picked      bool           `json:"picked"`
	Skipped     string         `json:"skipped,omitempty"`
}

// Show describes plugin p of catalog ci as berth show does. version picks
// the version whose review is shown; "" means the one install would pick,
// or the highest when none qualifies. A version the plugin lacks is an
// ErrNoPlugin error naming the versions it has.
func Show(p *catalog.Plugin, ci *CatalogInfo, version string, opts *ResolveOptions) (*Showing, error) {
	res, err := Resolve(p, "", opts)
	if err != nil && res == nil {
		return nil, err
	}
	out := &Showing{Catalog: ci, Plugin: p, Versions: []ShownVersion{}}
	if res.Chosen != nil {
		out.Install = res.Chosen.Version
	}
	for _, cand := range res.Candidates {
		v := cand.Version
		out.Versions = append(out.Versions, ShownVersion{Version: v.Version, Status: v.Status, Reason: v.Reason, Replacement: v.Replacement, Released: v.Released, Digest: v.Digest, Picked: cand.Chosen, Skipped: cand.Skipped})
	}
	shown := res.Chosen
	if version != "" {
		if shown = p.Version(version); shown == nil {
			var vs []string
			for _, v := range out.Versions {
				vs = append(vs, v.Version)
			}
			return nil, fmt.Errorf("%w: catalog %s has no version %s of %s (it has %s)", ErrNoPlugin, ci.Name, version, p.Name, strings.Join(vs, ", "))
		}
	}
	if shown == nil && len(res.Candidates) > 0 {
		shown = res.Candidates[0].Version // the highest, to show what it would do
	}
	if shown == nil {
		return nil, fmt.Errorf("%w: catalog %s lists no version of %s", ErrNoPlugin, ci.Name, p.Name)
	}
	out.Shown = shown.Version
	out.Review = shown.Summary.Disclosure(p, shown)
	out.Tools = shown.Summary.Tools
	if out.Tools == nil {
		out.Tools = []catalog.Tool{}
	}
	out.ContextTokens = catalog.EstimateTokens(shown.Summary.Tools)
	return out, nil
}

// Title is the first line of berth show: the plugin, its catalog and tier.
func (s *Showing) Title() string {
	return fmt.Sprintf("%s, from catalog %s (tier %s)", s.Plugin.Name, s.Catalog.Name, s.Plugin.Tier)
}

// SignersHeading opens the list of the signers the catalog allows.
const SignersHeading = "Signers the catalog allows for it (a bundle signed by anyone else is refused):"

// NoPick says that install would pick no version; "" when it would pick one.
func (s *Showing) NoPick() string {
	if s.Install != "" {
		return ""
	}
	return fmt.Sprintf("berth install %s would pick no version: each is skipped for the reason shown.", s.Plugin.Name)
}

// ReviewHeading opens the review of the shown version.
func (s *Showing) ReviewHeading() string {
	return fmt.Sprintf("Review of %s, as the catalog states it (berth install checks it against the bundle and refuses a difference):", s.Shown)
}

// ToolsHeading opens the list of the tools the curator lists, or says
// there are none.
func (s *Showing) ToolsHeading() string {
	if len(s.Tools) == 0 {
		return "Tools: the curator lists none, so berth cannot estimate their context cost before you install."
	}
	return fmt.Sprintf("Tools the curator lists (%d), about %d tokens of context:", len(s.Tools), s.ContextTokens)
}

// InstallCommand is the command that installs the plugin with the caret
// constraint of the version install would pick (berth install
// NAME@^X.Y --enable), with --catalog when several catalogs list the
// name; "" when no version can be installed. --enable makes it usable in
// the workspace the command runs in, which is what a reader of the page
// wants; install shows the review and asks first either way.
func (s *Showing) InstallCommand(inSeveral bool) string {
	if s.Install == "" {
		return ""
	}
	cmd := "berth install " + s.Plugin.Name + "@" + CaretConstraint(s.Install)
	if inSeveral {
		cmd += " --catalog " + s.Catalog.Name
	}
	return cmd + " --enable"
}

// CaretConstraint is the constraint that admits version v and its
// compatible updates, ^X.Y; a prerelease is named exactly (resolution
// skips prereleases unless the constraint names one).
func CaretConstraint(v string) string {
	sv, err := semver.StrictNewVersion(v)
	if err != nil || sv.Prerelease() != "" {
		return v
	}
	return fmt.Sprintf("^%d.%d", sv.Major(), sv.Minor())
}

// StatusText is a version's status with its reason and replacement, as
// berth show prints it.
func (v *ShownVersion) StatusText() string {
	s := string(v.Status)
	if v.Reason != "" {
		s += ": " + v.Reason
	}
	if v.Replacement != "" {
		s += " (use " + v.Replacement + " instead)"
	}
	return s
}

// Note says whether install picks the version, or why it skips it.
func (v *ShownVersion) Note(plugin string) string {
	if v.Picked {
		return "berth install " + plugin + " picks this"
	}
	return "skipped: " + v.Skipped
}
