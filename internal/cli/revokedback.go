package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
)

// revokedAbove returns the revocation of the highest trusted version of
// name above version, when that version is revoked and no version above
// version is trusted and not revoked: installing version is then a step
// down from a revoked version. nil otherwise.
func revokedAbove(st *store.Store, name, version string) (*store.Revocation, error) {
	recs, err := st.Find(name, "")
	if errors.Is(err, store.ErrNotTrusted) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var top *store.Revocation
	for _, r := range recs {
		if !bundle.VersionNewer(version, r.Version) {
			continue
		}
		rv, err := st.Revoked(r.Name, r.Version, r.Digest)
		if err != nil {
			return nil, err
		}
		if rv == nil {
			return nil, nil
		}
		top = rv
	}
	return top, nil
}

// stepDownWords is what install and sync say before they take version
// below a revoked one.
func stepDownWords(rv *store.Revocation, version string) string {
	return fmt.Sprintf("%s %s is revoked by catalog %s (%s); this installs %s, an older version", rv.Name, rv.Version, rv.Catalog, review.Printable(rv.Reason), version)
}

// confirmInstall asks install's question, after saying when the version
// is a step down from a revoked one.
func (a *app) confirmInstall(st *store.Store, ic *marketplace.InstallCandidate, quiet, yes bool) error {
	if err := a.sayStepDown(st, ic, quiet); err != nil {
		return err
	}
	return a.confirm(fmt.Sprintf("Install %s %s from catalog %s?", ic.Plugin.Name, ic.Version.Version, ic.Catalog.Name), yes, "--yes")
}

// sayStepDown says, before install's confirmation, that the version it
// is about to install is below a trusted version a catalog revoked.
func (a *app) sayStepDown(st *store.Store, ic *marketplace.InstallCandidate, quiet bool) error {
	rv, err := revokedAbove(st, ic.Plugin.Name, ic.Version.Version)
	if err != nil || rv == nil || quiet {
		return err
	}
	fmt.Fprintf(a.stdout, "STEP DOWN: %s.\n", stepDownWords(rv, ic.Version.Version))
	return nil
}

// wayBack is the command that recovers from the revocation of
// name@version in the workspaces it was disabled in: enabling a trusted
// version that is not revoked, else berth upgrade, which installs the
// newest version the constraint allows that is not revoked. "" when
// berth knows none.
func (a *app) wayBack(st *store.Store, c *marketplace.Cache, catName, name, version string, workspaces []string) string {
	recs, err := st.Find(name, "")
	if err != nil {
		return ""
	}
	var constraint string
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if r.Version == version {
			if r.Catalog != nil {
				constraint = r.Catalog.Constraint
			}
			continue
		}
		if rv, err := st.Revoked(r.Name, r.Version, r.Digest); err != nil || rv != nil {
			continue
		}
		return "berth enable " + r.ID() + inWorkspaces(workspaces)
	}
	p, _, err := c.Plugin(catName, name)
	if err != nil {
		return ""
	}
	ro, err := a.resolveOptions()
	if err != nil {
		return ""
	}
	res, err := marketplace.Resolve(p, constraint, ro)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("berth upgrade %s%s (it installs %s)", name, inWorkspaces(workspaces), res.Chosen.Version)
}

func inWorkspaces(ws []string) string {
	if len(ws) == 0 {
		return ""
	}
	s := " --workspace " + ws[0]
	if len(ws) > 1 {
		s += " (and again for " + strings.Join(ws[1:], ", ") + ")"
	}
	return s
}
