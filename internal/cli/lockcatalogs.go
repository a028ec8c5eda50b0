package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/lock"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
)

// recordCatalogs sets in l, for each catalog its plugins are resolved
// from, where that catalog lives and its root pin, from the operator's
// catalog of that name when it has the root keys the plugins were
// resolved with, else as old recorded it; entries no plugin needs go.
// Only an https:// source is written: for a catalog added from a local
// directory the entry has the name and root pin, no source (the lock is
// committed, and a path names this machine and no teammate can add it).
func (a *app) recordCatalogs(l, old *lock.Lock) error {
	c, err := a.catalogs()
	if err != nil {
		return err
	}
	list, err := c.List()
	if err != nil {
		return err
	}
	infos := map[string]*marketplace.CatalogInfo{}
	for _, ci := range list {
		infos[ci.Name] = ci
	}
	for _, p := range l.Plugins {
		n := p.Catalog.Name
		ci := infos[n]
		switch {
		case ci != nil && ci.Kind == marketplace.KindTUF && sameKeyIDs(ci.RootKeyIDs, p.Catalog.RootKeyIDs):
			l.SetCatalog(lock.CatalogSource{Name: n, Source: ci.Source, RootPin: ci.RootPin})
		case old != nil && old.Catalog(n) != nil && l.Catalog(n) == nil:
			l.SetCatalog(*old.Catalog(n))
		}
		if lc := l.Catalog(n); lc != nil && !lock.Recordable(lc.Source) {
			lc.Source = ""
		}
	}
	l.PruneCatalogs()
	return nil
}

func sameKeyIDs(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// addLockedCatalogs adds the catalogs the lock names that the operator
// has not added, each only on the operator's word: --add-catalog NAME,
// or a yes to a question on a terminal that shows its source and root
// pin. --yes never adds one, and a catalog the operator has is never
// replaced (lock.Check reports a different one, and sync refuses it).
func (a *app) addLockedCatalogs(ctx context.Context, c *marketplace.Cache, l *lock.Lock, opts *syncOptions) error {
	have, err := c.Names()
	if err != nil {
		return err
	}
	var names []string
	for _, p := range l.Plugins {
		if n := p.Catalog.Name; !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, n := range opts.AddCatalog {
		switch {
		case !slices.Contains(names, n):
			return usagef("--add-catalog %s: the lock resolves no plugin from a catalog %s", n, n)
		case l.Catalog(n) == nil:
			return fmt.Errorf("--add-catalog %s: the lock does not say where catalog %s lives (a berth that did not record catalog sources wrote it): add it with berth marketplace add %s SOURCE --root-sha256 HEX", n, n, n)
		case l.Catalog(n).Source == "" && !slices.Contains(have, n):
			return fmt.Errorf("--add-catalog %s: the lock records catalog %s's root pin but not where it lives (it was added from a local directory where the lock was written, which a lock does not record): ask whoever wrote the lock where, and add it by hand: berth marketplace add %s SOURCE --root-sha256 %s", n, n, n, strings.TrimPrefix(l.Catalog(n).RootPin, "sha256:"))
		case slices.Contains(have, n):
			fmt.Fprintf(a.stderr, "berth: --add-catalog %s: you have a catalog %s already, and a lock never replaces one; sync checks it against the lock\n", n, n)
		}
	}
	for _, n := range names {
		lc := l.Catalog(n)
		if lc == nil || slices.Contains(have, n) {
			continue
		}
		named := slices.Contains(opts.AddCatalog, n)
		if !named && (opts.JSON || !a.isTerminal()) {
			continue
		}
		if err := lc.CheckAddable(); err != nil {
			if named {
				return store.Untrustedf("--add-catalog %s: the lock says catalog %s lives at %s: %w (if you trust it, add it yourself: berth marketplace add %s SOURCE --root-sha256 HEX)", n, n, review.Printable(lc.Source), err, n)
			}
			continue
		}
		if !named {
			ok, err := a.askAddCatalog(lc)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
		}
		if err := a.addLockedCatalog(ctx, c, lc, opts.JSON); err != nil {
			return err
		}
	}
	return nil
}

// askAddCatalog shows a catalog the lock names and asks whether to add
// it.
func (a *app) askAddCatalog(lc *lock.CatalogSource) (bool, error) {
	fmt.Fprintf(a.stdout, "The lock resolves plugins from catalog %s, which you have not added:\n  source:      %s\n  root sha256: %s\nA lock may come from anyone who can change this repository: add the catalog only if you trust its curator, who decides what its plugins are.\n", lc.Name, review.Printable(lc.Source), strings.TrimPrefix(lc.RootPin, "sha256:"))
	return a.ask(fmt.Sprintf("Add catalog %s?", lc.Name))
}

// addLockedCatalog adds the catalog lc, pinned to the lock's root.
func (a *app) addLockedCatalog(ctx context.Context, c *marketplace.Cache, lc *lock.CatalogSource, quiet bool) error {
	src, err := marketplace.ParseSource(lc.Source)
	if err != nil {
		return err
	}
	r, err := c.Add(ctx, lc.Name, src, marketplace.RootPin{SHA256: strings.TrimPrefix(lc.RootPin, "sha256:")})
	if err != nil {
		if errors.Is(err, marketplace.ErrCatalogExists) {
			return fmt.Errorf("catalog %s was added meanwhile; a lock never replaces one: %w", lc.Name, err)
		}
		return fmt.Errorf("adding catalog %s as berth.lock names it: %w", lc.Name, err)
	}
	if !quiet {
		fmt.Fprintf(a.stdout, "Added catalog %s from %s (root pin %s), as berth.lock names it: %d plugin(s).\n", r.Name, r.Source, lc.RootPin, r.Plugins)
	}
	return nil
}

// sayUnrecordedCatalogs notes the catalogs the lock does not say where
// they live (a lock written before berth recorded them, or one added
// from a local directory): a teammate's sync cannot add them.
func (a *app) sayUnrecordedCatalogs(l *lock.Lock) {
	var names []string
	for _, p := range l.Plugins {
		if n := p.Catalog.Name; !p.IsBuiltin() && l.Catalog(n) == nil && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) > 0 {
		fmt.Fprintf(a.stdout, "The lock does not record where catalog(s) %s live (an older berth wrote it), so a teammate's berth sync cannot add them: run berth lock to record their source and root pin.\n", strings.Join(names, ", "))
	}
	a.sayLocalCatalogs(l)
}

// sayLocalCatalogs notes the catalogs the lock records by name and root
// pin only, as added from a local directory.
func (a *app) sayLocalCatalogs(l *lock.Lock) {
	var local []string
	for _, c := range l.Catalogs {
		if c.Source == "" {
			local = append(local, c.Name)
		}
	}
	if len(local) > 0 {
		fmt.Fprintf(a.stdout, "The lock records catalog(s) %s by name and root pin only: added from a local directory, whose path a lock does not record (it names this machine, and berth sync adds a catalog only from https://). A teammate adds them by hand (berth marketplace add NAME SOURCE --root-sha256 HEX), then runs berth sync.\n", strings.Join(local, ", "))
	}
}
