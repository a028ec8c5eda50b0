package lock

import (
	"errors"
	"fmt"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/store"
)

// Outdated is one plugin installed from a catalog, against what its
// catalog now offers.
type Outdated struct {
	Name    string `json:"name"`
	Catalog string `json:"catalog"`
	// Current is the highest version installed from a catalog.
	Current string `json:"current"`
	// Constraint is the one it was installed for, or the workspace lock's.
	Constraint string `json:"constraint"`
	// Wanted is the newest version the constraint allows (resolved as
	// install would: no yanked, revoked, too new or unsupported version);
	// "" when none.
	Wanted string `json:"wanted"`
	// Latest is the newest installable version with no constraint.
	Latest string `json:"latest"`
	// Status is Current's status in the catalog; Reason says why it is
	// not active. "" when the catalog no longer lists Current.
	Status catalog.Status `json:"status"`
	Reason string         `json:"reason,omitempty"`
	// Upgrade is true when Wanted is newer than Current, or when a
	// catalog revoked Current and Wanted is another version.
	Upgrade bool `json:"upgrade"`
	// RevokedBy names the catalog that revoked Current (its recorded
	// revocation, or its status in the catalog), "" when none did; Reason
	// then gives its words.
	RevokedBy string `json:"revokedBy,omitempty"`
	// StepDown is true when Current is revoked and Wanted, the newest
	// version the constraint allows that is not, is older: upgrade shows
	// it and asks, as it does for grown authority.
	StepDown bool `json:"stepDown"`
	// Problem says why the catalog could not be asked (removed, no longer
	// lists the plugin).
	Problem string `json:"problem,omitempty"`
	// Note says what a person should know about the upgrade: that the
	// source dropped the plugin's version (Wanted is a derived version in
	// place of the release version Current; docs/marketplace.md).
	Note string `json:"note,omitempty"`

	record   *store.Record
	plugin   *catalog.Plugin
	catalog  *marketplace.CatalogInfo
	wantedV  *catalog.Version
	currentV *catalog.Version
}

// Record is the trust record of Current.
func (o *Outdated) Record() *store.Record { return o.record }

// Plugin is the catalog's entry, nil with a Problem.
func (o *Outdated) Plugin() *catalog.Plugin { return o.plugin }

// CatalogInfo is the catalog's verified copy, nil with a Problem.
func (o *Outdated) CatalogInfo() *marketplace.CatalogInfo { return o.catalog }

// WantedVersion is the catalog's entry of Wanted, nil when none.
func (o *Outdated) WantedVersion() *catalog.Version { return o.wantedV }

// CurrentVersion is the catalog's entry of Current, nil when the catalog
// no longer lists it (or lists it with another digest).
func (o *Outdated) CurrentVersion() *catalog.Version { return o.currentV }

// ListOutdated lists, per plugin installed from a catalog (a trust record
// naming one), its highest installed version against the verified copy
// of that catalog: the newest version its constraint allows, the latest,
// and the installed version's status. constraints, when it names a
// plugin, overrides the constraint of its record (a workspace lock's).
// It reads only the verified copies.
func ListOutdated(c *marketplace.Cache, st *store.Store, constraints map[string]string, ro *marketplace.ResolveOptions) ([]*Outdated, error) {
	recs, err := st.Records()
	if err != nil {
		return nil, err
	}
	latest := map[string]*store.Record{}
	var names []string
	revoked := map[*store.Record]*store.Revocation{}
	for _, r := range recs { // sorted by name, then version
		if r.Catalog == nil {
			continue
		}
		rv, err := st.Revoked(r.Name, r.Version, r.Digest)
		if err != nil {
			return nil, err
		}
		if rv != nil {
			revoked[r] = rv
		}
		l := latest[r.Name]
		if l == nil {
			names = append(names, r.Name)
		}
		// The current version is the latest one not revoked; a revoked
		// one only while no other is trusted.
		if l == nil || (revoked[l] != nil || rv == nil) && laterRecord(l, r) || revoked[l] != nil && rv == nil {
			latest[r.Name] = r
		}
	}
	out := []*Outdated{}
	for _, name := range names {
		r := latest[name]
		o := &Outdated{Name: name, Catalog: r.Catalog.Name, Current: r.Version, Constraint: r.Catalog.Constraint, record: r}
		if c, ok := constraints[name]; ok {
			o.Constraint = c
		}
		out = append(out, o)
		p, ci, err := c.Plugin(r.Catalog.Name, name)
		switch {
		case errors.Is(err, marketplace.ErrNoCatalog):
			o.Problem = fmt.Sprintf("catalog %s is not added any more (berth marketplace add)", r.Catalog.Name)
			continue
		case errors.Is(err, marketplace.ErrUnsignedSource):
			o.Problem = fmt.Sprintf("catalog %s is now an unsigned source, not the signed catalog %s came from (berth marketplace list)", r.Catalog.Name, name)
			continue
		case errors.Is(err, marketplace.ErrNoPlugin):
			o.Problem = fmt.Sprintf("catalog %s no longer lists %s", r.Catalog.Name, name)
			continue
		case err != nil:
			return nil, err
		}
		o.plugin, o.catalog = p, ci
		if v := p.Version(r.Version); v != nil && v.Digest == r.Digest {
			o.currentV, o.Status, o.Reason = v, v.Status, v.Reason
			if v.Status == catalog.StatusRevoked {
				o.RevokedBy = r.Catalog.Name
			}
		}
		if rv := revoked[r]; rv != nil {
			o.RevokedBy, o.Reason = rv.Catalog, rv.Reason
		}
		if res, err := marketplace.Resolve(p, o.Constraint, ro); err == nil {
			o.Wanted, o.wantedV = res.Chosen.Version, res.Chosen
			// Two contents of a versionless plugin: what the source
			// offers now is the newer (bundle.VersionNewer).
			o.Upgrade = bundle.VersionNewer(o.Current, o.Wanted)
			if o.RevokedBy != "" && o.Wanted != o.Current {
				// Resolve never picks a revoked version: the way back
				// may be a step down.
				o.StepDown = !o.Upgrade
				o.Upgrade = true
			}
			if o.Upgrade && bundle.DroppedVersion(o.Current, o.Wanted) {
				o.Note = fmt.Sprintf("the source dropped the plugin's version %s: it now offers the content-derived %s, which berth takes as newer, since the source offers it now (docs/marketplace.md)", o.Current, o.Wanted)
			}
		} else if res == nil {
			o.Problem = err.Error()
		}
		if res, err := marketplace.Resolve(p, "", ro); err == nil {
			o.Latest = res.Chosen.Version
		}
	}
	return out, nil
}

// laterRecord reports whether r, which comes after l in the store's order
// (by version), is the current one of its plugin: it is, except that a
// derived version and a release version are not ordered by semver, and
// then the one trusted last is what its source offered last.
func laterRecord(l, r *store.Record) bool {
	if bundle.IsDerivedVersion(l.Version) == bundle.IsDerivedVersion(r.Version) {
		return true
	}
	return r.TrustedAt.After(l.TrustedAt)
}
