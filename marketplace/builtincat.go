package marketplace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/marketplace/builtin"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/foreign"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// KindBuiltin is the built-in catalog (package builtin): entries compiled
// into berth, each pinned to its bundle's digest and its npm package's
// integrity. It is not a TUF catalog and nobody signs it at run time: its
// integrity is the binary's. It never expires, and no other catalog can
// revoke what it installed (its records name no catalog).
const KindBuiltin = "builtin"

// builtinRemovedFile, in the cache directory, records that the operator
// removed the catalog named builtin: berth then never puts the built-in
// catalog back by itself (berth marketplace add builtin --builtin does).
const builtinRemovedFile = ".builtin-removed"

// builtinList is the built-in catalog as an unsigned source's list.
func builtinList() (*unsignedList, error) {
	bc, err := builtin.Load()
	if err != nil {
		return nil, err
	}
	list := &unsignedList{tier: catalog.TierOfficial, tags: map[string][]string{}}
	for _, e := range bc.Plugins {
		list.plugins = append(list.plugins, &foreign.UnsignedPlugin{Name: e.Name, SourceName: e.Package, Description: e.Description, Homepage: e.Homepage,
			Versions: []*foreign.UnsignedVersion{{Version: e.Version, Status: catalog.StatusActive, Released: e.Released}}})
		list.tags[e.Name] = e.Tags
	}
	return list, nil
}

// BuiltinRemoved reports whether the operator removed the built-in
// catalog (and berth therefore does not put it back).
func (c *Cache) BuiltinRemoved() bool {
	_, err := os.Lstat(filepath.Join(c.dir, builtinRemovedFile))
	return err == nil
}

// EnsureBuiltin puts the built-in catalog of this berth into the cache
// under the name builtin, unless the operator removed it (a catalog of
// that name that they then added is theirs, and stays), or it is there
// already from this berth. A copy from another berth (another version or
// generation date) is replaced by this one's. It reads nothing from the
// network.
func (c *Cache) EnsureBuiltin(ctx context.Context) error {
	bc, err := builtin.Load()
	if err != nil {
		return err
	}
	current := func() (bool, error) {
		if c.BuiltinRemoved() {
			return true, nil
		}
		st, err := c.readState(builtin.Name)
		var nc *NoCatalogError
		switch {
		case errors.As(err, &nc):
			return false, nil
		case err != nil:
			return false, err
		}
		return st.Kind != KindBuiltin || st.Source == bc.Source(), nil
	}
	if ok, err := current(); ok || err != nil {
		return err
	}
	unlock, err := c.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if ok, err := current(); ok || err != nil {
		return err
	}
	list, err := builtinList()
	if err != nil {
		return err
	}
	st, err := c.readState(builtin.Name)
	if err == nil {
		// A copy of another berth's built-in catalog: replace it.
		dir := filepath.Join(c.dir, builtin.Name)
		now := c.o.Now().UTC()
		gen, err := c.writeUnsignedGen(dir, list, now)
		if err != nil {
			return err
		}
		st.pointAt(gen, list, now)
		st.Source = bc.Source()
		if err := writeState(dir, st); err != nil {
			return err
		}
		c.prune(dir, st)
		return nil
	}
	if _, err := os.Lstat(filepath.Join(c.dir, builtin.Name)); err == nil {
		return c.damaged(builtin.Name, fmt.Errorf("it has no state.json"))
	}
	tmp, err := os.MkdirTemp(c.dir, ".add-"+builtin.Name+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	st = &state{Name: builtin.Name, Source: bc.Source(), Kind: KindBuiltin, AddedAt: c.o.Now().UTC()}
	if err := c.writeUnsignedCopy(tmp, st, list); err != nil {
		return err
	}
	return c.commitAdd(tmp, builtin.Name, st)
}

// RestoreBuiltin undoes the operator's removal of the built-in catalog and
// puts it back. A catalog named builtin that the operator added is
// refused: remove it first.
func (c *Cache) RestoreBuiltin(ctx context.Context) (*CatalogInfo, error) {
	unlock, err := c.lock(ctx)
	if err != nil {
		return nil, err
	}
	st, err := c.readState(builtin.Name)
	if err == nil && st.Kind != KindBuiltin {
		unlock()
		return nil, fmt.Errorf("%w: the catalog named builtin is one you added (%s); remove it first (berth marketplace remove builtin) to have the built-in catalog back", ErrCatalogExists, st.Source)
	}
	err = os.Remove(filepath.Join(c.dir, builtinRemovedFile))
	unlock()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := c.EnsureBuiltin(ctx); err != nil {
		return nil, err
	}
	st, err = c.readState(builtin.Name)
	if err != nil {
		return nil, err
	}
	return c.info(st), nil
}

// markBuiltinRemoved records, under the cache lock, that the operator
// removed the catalog named builtin.
func (c *Cache) markBuiltinRemoved() error {
	if err := atomicfile.WriteFile(filepath.Join(c.dir, builtinRemovedFile), []byte("The operator removed the catalog named builtin; berth marketplace add builtin --builtin puts the built-in one back.\n"), 0o600); err != nil {
		return err
	}
	return atomicfile.SyncDir(c.dir)
}

// BuiltinIntegrityError is a built-in entry whose fetched package, as the
// registry served it at trust, is not the tarball the built-in catalog
// pins (npm's dist.integrity). Nothing is installed. It wraps
// trust.ErrUntrusted (exit 4).
type BuiltinIntegrityError struct {
	Name, Package, Version, Want, Got string
}

func (e *BuiltinIntegrityError) Error() string {
	got := e.Got
	if got == "" {
		got = "no staged package of that name and version"
	}
	return fmt.Sprintf("%v: %s of the built-in catalog runs %s@%s, which berth pins to the tarball with integrity %s; the registry served %s. Nothing was installed. Check the registry in $BERTH_HOME/fetchers/npmrc (a mirror that serves other bytes for a published version is broken or hostile)",
		trust.ErrUntrusted, e.Name, e.Package, e.Version, e.Want, got)
}

func (e *BuiltinIntegrityError) Unwrap() error { return trust.ErrUntrusted }

// checkBuiltinFetch checks that the trees resolved for a built-in entry
// hold its package at exactly its version and integrity, installed at the
// top (the package the server runs).
func checkBuiltinFetch(e *builtin.Entry, cand *store.Candidate) error {
	err := &BuiltinIntegrityError{Name: e.Name, Package: e.Package, Version: e.Version, Want: e.Integrity}
	for _, l := range cand.Fetched {
		for _, p := range l.Packages {
			if p.Path == "node_modules/"+e.Package && p.Name == e.Package {
				if p.Version != e.Version || p.Integrity != e.Integrity {
					err.Got = fmt.Sprintf("%s@%s with integrity %s", p.Name, p.Version, p.Integrity)
					return err
				}
				return nil
			}
		}
	}
	return err
}

// installBuiltin installs version v of entry p of the built-in catalog
// from src (its embedded bundle, written out): pinned to the digest the
// binary gives it (an operator's --digest must be that one), trusted
// unsigned through store.Store.Trust like any unsigned entry, with its
// fetched package checked against the pinned integrity before Confirm.
// The record's source is builtin:NAME and names no catalog, so no
// catalog can revoke it.
func (c *Cache) installBuiltin(ctx context.Context, st *store.Store, req UnsignedInstallRequest, p *foreign.UnsignedPlugin, v *foreign.UnsignedVersion, src string, out *UnsignedInstallResult) (*UnsignedInstallResult, error) {
	bc, err := builtin.Load()
	if err != nil {
		return nil, err
	}
	e := bc.Entry(p.Name)
	if e == nil || e.Version != v.Version {
		return nil, fmt.Errorf("%w: the copy of the built-in catalog lists %s %s, which this berth does not have; run berth marketplace update %s", ErrNoPlugin, p.Name, v.Version, req.Catalog)
	}
	want, err := store.ParseDigest(e.Digest)
	if err != nil {
		return nil, err
	}
	if !req.Digest.IsZero() && req.Digest != want {
		return nil, &store.DigestMismatchError{Source: fmt.Sprintf("%s %s of the built-in catalog", p.Name, v.Version), Got: e.Digest, Want: req.Digest.String()}
	}
	confirm := func(cand *store.Candidate) error {
		if err := checkBuiltinFetch(e, cand); err != nil {
			return err
		}
		if req.Confirm != nil {
			return req.Confirm(cand)
		}
		return nil
	}
	res, err := st.Trust(ctx, src, &store.TrustOptions{Bundle: req.Bundle, Digest: want, UnsignedUnsafe: true, SameSource: true, Source: "builtin:" + p.Name, Confirm: confirm, Fetch: req.Fetch})
	var dm *store.DigestMismatchError
	if errors.As(err, &dm) {
		dm.Source = entryLabel(out.Catalog, p, v)
	}
	if err != nil {
		return nil, err
	}
	out.Trust = res
	return out, nil
}
