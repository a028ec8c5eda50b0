package lock

import (
	"fmt"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/builtin"
	"github.com/berth-mcp/berth/store"
)

// DiffBuiltin: the lock names a plugin of berth's built-in catalog that
// the built-in catalog here does not hold at the locked version and
// digest, or the operator removed or replaced the built-in catalog.
const DiffBuiltin DiffKind = "builtin"

// builtinEntry is the lock's entry for rec, installed from berth's
// built-in catalog: it is locked only while this berth's built-in catalog
// holds rec's version with rec's digest, so that the berth version the
// lock records is the one whose catalog it came from.
func builtinEntry(rec *store.Record) (Plugin, error) {
	bc, err := builtin.Load()
	if err != nil {
		return Plugin{}, err
	}
	e := bc.Entry(rec.Name)
	if e == nil || e.Version != rec.Version || e.Digest != rec.Digest {
		has := "has no " + rec.Name
		if e != nil {
			has = fmt.Sprintf("has %s@%s (digest %s)", e.Name, e.Version, e.Digest)
		}
		return Plugin{}, fmt.Errorf("%s was installed from the built-in catalog of another berth, and this berth's built-in catalog (%s) %s, so berth.lock cannot say which berth's catalog it comes from: install this berth's version (berth install %s) and lock again, or disable it (berth disable %s)", rec.ID(), bc.Source(), has, rec.Name, rec.Name)
	}
	return Plugin{
		Name:    rec.Name,
		Version: rec.Version,
		Digest:  rec.Digest,
		Signer:  Signer{Kind: SignerBuiltin},
		Catalog: Catalog{Name: builtin.Name, Source: SourceBuiltin, BerthVersion: bundle.BerthVersion},
	}, nil
}

// checkBuiltin says how the built-in catalog here departs from lp, a
// plugin of berth's built-in catalog, or "" when it holds lp's version
// with lp's digest. ci is the catalog named builtin here, nil when none.
// A lock never makes anything else count as built in: only the catalog
// compiled into this berth is consulted, and only its digest binds.
func checkBuiltin(c *marketplace.Cache, ci *marketplace.CatalogInfo, lp *Plugin) (string, error) {
	bc, err := builtin.Load()
	if err != nil {
		return "", err
	}
	written := fmt.Sprintf("the lock names %s@%s with digest %s from the built-in catalog of berth %s", lp.Name, lp.Version, lp.Digest, lp.Catalog.BerthVersion)
	fix := fmt.Sprintf("install a berth whose built-in catalog has it, or install this berth's version (berth install %s --catalog builtin) and run berth lock", lp.Name)
	switch {
	case ci != nil && ci.Kind != marketplace.KindBuiltin:
		return fmt.Sprintf("%s, and the catalog named builtin here is one you added (%s) in place of berth's built-in catalog; a lock never makes it count as built in: remove it (berth marketplace remove builtin) and put the built-in one back (berth marketplace add builtin --builtin), or install %s from a catalog and run berth lock", written, ci.Source, lp.Name), nil
	case c.BuiltinRemoved():
		return fmt.Sprintf("%s, and you removed the built-in catalog: put it back with berth marketplace add builtin --builtin, or install %s from a catalog and run berth lock", written, lp.Name), nil
	}
	e := bc.Entry(lp.Name)
	switch {
	case e == nil:
		return fmt.Sprintf("%s, and this berth's built-in catalog (%s) has no %s: install a berth whose built-in catalog has it, or let it leave the lock (berth lock --drop %s)", written, bc.Source(), lp.Name, lp.Name), nil
	case e.Version != lp.Version:
		return fmt.Sprintf("%s, and this berth's built-in catalog (%s) has %s@%s: %s", written, bc.Source(), e.Name, e.Version, fix), nil
	case e.Digest != lp.Digest:
		return fmt.Sprintf("%s, and this berth's built-in catalog (%s) has %s@%s with digest %s: the same version with other bytes, so one of them is not what it claims; %s", written, bc.Source(), e.Name, e.Version, e.Digest, fix), nil
	}
	return "", nil
}
