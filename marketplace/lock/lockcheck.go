package lock

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/store"
)

// DiffKind is how a workspace departs from its berth.lock.
type DiffKind string

// The ways a workspace departs from its lock.
const (
	// DiffMissing: the lock names a plugin that is not enabled.
	DiffMissing DiffKind = "missing"
	// DiffVersion: another version is enabled.
	DiffVersion DiffKind = "version"
	// DiffDigest: the locked version is enabled with another digest.
	DiffDigest DiffKind = "digest"
	// DiffSigner: the enabled bundle was trusted from another signer.
	DiffSigner DiffKind = "signer"
	// DiffCatalogOlder: the verified copy of the catalog is older than
	// the one the lock was resolved from (a rollback, or not updated).
	DiffCatalogOlder DiffKind = "catalog-older"
	// DiffCatalogRoot: the catalog of that name has other root keys than
	// the lock names (another catalog, or a rotated root).
	DiffCatalogRoot DiffKind = "catalog-root"
	// DiffCatalogMissing: the lock's catalog is not added.
	DiffCatalogMissing DiffKind = "catalog-missing"
	// DiffCatalogSource: the catalog of that name comes from another
	// source, or was pinned with another root, than the lock records: a
	// lock never replaces a catalog the operator has.
	DiffCatalogSource DiffKind = "catalog-source"
	// DiffRevoked: the locked version is revoked by its catalog (its
	// status there, or the revocation recorded here); Diff.StepTo is the
	// newest version the locked constraint allows that is not, which
	// sync takes once confirmed.
	DiffRevoked DiffKind = "revoked"
	// DiffNotLocked: a plugin is enabled that the lock does not name
	// (reported when pruning).
	DiffNotLocked DiffKind = "not-locked"
)

// Diff is one difference between a workspace and its lock.
type Diff struct {
	Name   string   `json:"name"`
	Kind   DiffKind `json:"kind"`
	Detail string   `json:"detail"`
	// Locked is the lock's entry; nil for DiffNotLocked.
	Locked *Plugin `json:"locked,omitempty"`
	// Enabled is what is enabled; nil for DiffMissing.
	Enabled *store.Enablement `json:"enabled,omitempty"`
	// StepTo is, for DiffRevoked, the version sync takes instead ("" when
	// the constraint allows none that is not revoked).
	StepTo string `json:"stepTo,omitempty"`
	// RevokedBy and Reason are, for DiffRevoked, the catalog that revoked
	// the locked version and its words.
	RevokedBy string `json:"revokedBy,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

func (d Diff) String() string { return fmt.Sprintf("%s: %s: %s", d.Name, d.Kind, d.Detail) }

// CheckOptions are Check's settings; nil means the defaults.
type CheckOptions struct {
	// Prune makes an enabled plugin the lock does not name a difference.
	Prune bool
	// Resolve are the options sync installs with (the operator's
	// min-release-age): a revoked version's StepTo is the version they
	// choose, so the question names the version sync installs.
	Resolve *marketplace.ResolveOptions
}

// Check compares what is enabled in workspace (the state's key: an
// absolute, symlink-resolved path) with the lock, and the lock's catalogs
// with their verified copies: every difference, sorted by plugin name.
// It reads only the state, the trust records and the verified copies.
func Check(c *marketplace.Cache, st *store.Store, workspace string, l *Lock, opts *CheckOptions) ([]Diff, error) {
	if opts == nil {
		opts = &CheckOptions{}
	}
	state, err := st.State()
	if err != nil {
		return nil, err
	}
	enabled := map[string]*store.Enablement{}
	if w := state.Workspaces[workspace]; w != nil {
		enabled = w.Plugins
	}
	infos := map[string]*marketplace.CatalogInfo{}
	list, err := c.List()
	if err != nil {
		return nil, err
	}
	for _, ci := range list {
		infos[ci.Name] = ci
	}
	diffs := []Diff{}
	add := func(name string, lp *Plugin, e *store.Enablement, kind DiffKind, format string, args ...any) {
		diffs = append(diffs, Diff{Name: name, Kind: kind, Detail: fmt.Sprintf(format, args...), Locked: lp, Enabled: e})
	}
	for i := range l.Plugins {
		lp := &l.Plugins[i]
		e := enabled[lp.Name]
		ci := infos[lp.Catalog.Name]
		switch {
		case lp.IsBuiltin():
			detail, err := checkBuiltin(c, ci, lp)
			if err != nil {
				return nil, err
			}
			if detail != "" {
				add(lp.Name, lp, e, DiffBuiltin, "%s", detail)
				continue
			}
		case ci == nil:
			add(lp.Name, lp, e, DiffCatalogMissing, "%s", missingCatalog(l, lp.Catalog.Name))
		case l.Catalog(ci.Name) != nil && (l.Catalog(ci.Name).Source != "" && l.Catalog(ci.Name).Source != ci.Source || l.Catalog(ci.Name).RootPin != ci.RootPin):
			lc := l.Catalog(ci.Name)
			add(lp.Name, lp, e, DiffCatalogSource, "catalog %s here comes from %s (root pin %s), and the lock records %s (root pin %s): another catalog under that name, and a lock never replaces one you have; check with whoever wrote the lock, then run berth lock", ci.Name, ci.Source, ci.RootPin, lc.Source, lc.RootPin)
		case !sameKeys(ci.RootKeyIDs, lp.Catalog.RootKeyIDs):
			add(lp.Name, lp, e, DiffCatalogRoot, "catalog %s has the root keys %s, and the lock names %s: another catalog under that name, or its root was rotated; check with the curator, then run berth lock", ci.Name, strings.Join(sorted(ci.RootKeyIDs), ","), strings.Join(sorted(lp.Catalog.RootKeyIDs), ","))
		case ci.TargetsVersion < lp.Catalog.TargetsVersion:
			add(lp.Name, lp, e, DiffCatalogOlder, "the verified copy of catalog %s is at targets version %d, older than the %d the lock was resolved from: run berth marketplace update %s (if it stays older, the catalog was rolled back)", ci.Name, ci.TargetsVersion, lp.Catalog.TargetsVersion, ci.Name)
		}
		if lp.IsBuiltin() {
			// No catalog revokes a built-in install.
		} else if d, err := revokedDiff(c, st, lp, e, opts.Resolve); err != nil {
			return nil, err
		} else if d != nil {
			diffs = append(diffs, *d)
			continue
		}
		switch {
		case e == nil:
			add(lp.Name, lp, nil, DiffMissing, "the lock names %s@%s, and it is not enabled here", lp.Name, lp.Version)
		case e.Version != lp.Version:
			add(lp.Name, lp, e, DiffVersion, "%s is enabled here, and the lock names %s", e.Version, lp.Version)
		case e.Digest != lp.Digest:
			add(lp.Name, lp, e, DiffDigest, "%s is enabled here with digest %s, and the lock pins %s", e.Version, e.Digest, lp.Digest)
		default:
			recs, err := st.Find(lp.Name, e.Version)
			if err != nil {
				if errors.Is(err, store.ErrNotTrusted) {
					add(lp.Name, lp, e, DiffMissing, "%s@%s is enabled here but no longer trusted", lp.Name, e.Version)
					continue
				}
				return nil, err
			}
			if r := recs[0]; !lp.MatchesRecord(r) {
				add(lp.Name, lp, e, DiffSigner, "%s@%s was trusted from %s, and the lock names %s", lp.Name, e.Version, recordOrigin(r), lockedOrigin(lp))
			}
		}
	}
	if opts.Prune {
		for _, name := range slices.Sorted(maps.Keys(enabled)) {
			if _, ok := l.Plugin(name); !ok {
				add(name, nil, enabled[name], DiffNotLocked, "%s@%s is enabled here, and the lock does not name it", name, enabled[name].Version)
			}
		}
	}
	sort.SliceStable(diffs, func(i, j int) bool { return diffs[i].Name < diffs[j].Name })
	return diffs, nil
}

func sameKeys(a, b []string) bool { return slices.Equal(sorted(a), sorted(b)) }

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// revokedDiff is the DiffRevoked of lp when its catalog revoked the
// locked version (the revocation recorded here, or its status in the
// catalog's verified copy) and it is not enabled in its place already.
func revokedDiff(c *marketplace.Cache, st *store.Store, lp *Plugin, e *store.Enablement, ro *marketplace.ResolveOptions) (*Diff, error) {
	d := &Diff{Name: lp.Name, Kind: DiffRevoked, Locked: lp, Enabled: e}
	rv, err := st.Revoked(lp.Name, lp.Version, lp.Digest)
	if err != nil {
		return nil, err
	}
	if rv != nil {
		d.RevokedBy, d.Reason = rv.Catalog, rv.Reason
	}
	p, _, err := c.Plugin(lp.Catalog.Name, lp.Name)
	if err == nil {
		if v := p.Version(lp.Version); v != nil && v.Digest == lp.Digest && v.Status == catalog.StatusRevoked && d.RevokedBy == "" {
			d.RevokedBy, d.Reason = lp.Catalog.Name, v.Reason
		}
	}
	if d.RevokedBy == "" {
		return nil, nil
	}
	to := "no version that " + constraintOrAny(lp.Constraint) + " allows can be installed in its place (revoked, yanked, or within your min-release-age): berth show " + lp.Name + " lists its versions and why; install another (berth install " + lp.Name + "@VERSION --enable), then berth lock"
	if p != nil {
		if res, err := marketplace.Resolve(p, lp.Constraint, ro); err == nil {
			d.StepTo = res.Chosen.Version
			to = "berth sync steps down to " + d.StepTo
			if bundle.VersionNewer(lp.Version, d.StepTo) {
				to = "berth sync takes " + d.StepTo
			}
		}
	}
	d.Detail = fmt.Sprintf("the lock names %s@%s, which catalog %s revoked (%s); %s", lp.Name, lp.Version, d.RevokedBy, d.Reason, to)
	return d, nil
}

func constraintOrAny(c string) string {
	if c == "" {
		return "any version"
	}
	return c
}

// missingCatalog says that the lock's catalog name is not added, where
// the lock says it lives, and how to add it.
func missingCatalog(l *Lock, name string) string {
	lc := l.Catalog(name)
	if lc == nil {
		return fmt.Sprintf("catalog %s is not added here, and the lock does not say where it lives (a berth that did not record catalog sources wrote it): ask whoever wrote it for the source and the root sha256, add it with berth marketplace add %s SOURCE --root-sha256 HEX, and run berth lock to record them", name, name)
	}
	if lc.Source == "" {
		return fmt.Sprintf("catalog %s is not added here; the lock records its root pin %s but not where it lives (whoever wrote the lock added it from a local directory, which a lock does not record): ask them where, and add it by hand: berth marketplace add %s SOURCE --root-sha256 %s", name, lc.RootPin, name, strings.TrimPrefix(lc.RootPin, "sha256:"))
	}
	add := fmt.Sprintf("berth marketplace add %s %s --root-sha256 %s", name, lc.Source, strings.TrimPrefix(lc.RootPin, "sha256:"))
	if err := lc.CheckAddable(); err != nil {
		return fmt.Sprintf("catalog %s is not added here; the lock says it lives at %s with root pin %s, and %v: if you trust it, add it yourself: %s", name, lc.Source, lc.RootPin, err, add)
	}
	return fmt.Sprintf("catalog %s is not added here; the lock says it lives at %s with root pin %s: berth sync --add-catalog %s adds it (or %s)", name, lc.Source, lc.RootPin, name, add)
}

// ErrNotAddable marks a catalog source that berth does not add from a
// lock.
var ErrNotAddable = errors.New("berth adds a catalog from a lock only from an https:// source")

// CheckAddable says why berth will not add c on a lock's word (an
// *ErrNotAddable error), or nil: only an https:// source is added. A
// lock may come from a stranger's repository, and a directory, a
// file:// URL or a loopback http:// source names something on this
// machine (a local path is the lock author's machine's, not yours).
func (c *CatalogSource) CheckAddable() error {
	src, err := marketplace.ParseSource(c.Source)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotAddable, err)
	}
	if !strings.HasPrefix(strings.ToLower(src.String()), "https://") {
		return fmt.Errorf("%w, and %s is not one", ErrNotAddable, c.Source)
	}
	return nil
}

// recordOrigin says where a trust record comes from, for a difference.
func recordOrigin(r *store.Record) string {
	switch {
	case IsBuiltinRecord(r):
		return "berth's built-in catalog"
	case r.Signer != nil:
		return r.Signer.String()
	default:
		return "no signer (" + r.Source + ")"
	}
}

// lockedOrigin says where the lock says lp comes from.
func lockedOrigin(lp *Plugin) string {
	if lp.IsBuiltin() {
		return "berth's built-in catalog"
	}
	return signerString(lp.Signer)
}
