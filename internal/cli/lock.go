package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/lock"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// lockJSON is what lock --json prints.
type lockJSON struct {
	Path string     `json:"path"`
	Lock *lock.Lock `json:"lock"`
}

const lockLong = `Lock writes DIR/berth.lock (the workspace, default the current directory)
from the plugins enabled there: per plugin its name, version, digest,
constraint, signer, and the catalog it was installed from with the key IDs
of its root and the targets version berth had verified; and per catalog
where it lives (its source) and its root pin, so a teammate's berth sync
can add it (berth sync --add-catalog NAME). The lock is meant
to be committed: teammates run berth sync to get the same plugins, and
berth sync --check in CI reports where a workspace departs from it.

A plugin the lock names that is not enabled in the workspace (disabled,
or disabled by a catalog's revocation) is never dropped silently: lock
refuses, naming it and the command that enables a version again, unless
--drop NAME lets it leave the lock.

Every enabled plugin must have been installed from a catalog (berth
install): one trusted by hand cannot be locked, and lock refuses, naming
it, and writes nothing. A constraint already in the lock is kept.
When a lock exists, install --enable and upgrade update it; enable and
disable alone never do.`

// lockOptions are the inputs of berth lock.
type lockOptions struct {
	Workspace string
	JSON      bool
	// Drop names the locked plugins that are not enabled and may leave
	// the lock.
	Drop []string
}

func newLockCmd(a *app) *cobra.Command {
	opts := &lockOptions{}
	cmd := &cobra.Command{
		Use:   "lock",
		Short: "Write berth.lock from what is enabled in the workspace",
		Long:  lockLong,
		Example: `  berth lock
  berth lock --workspace ~/src/project
  git add berth.lock`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLock(cmd.Context(), a, opts)
		},
	}
	workspaceFlag(cmd, &opts.Workspace)
	cmd.Flags().StringArrayVar(&opts.Drop, "drop", nil, "let this locked plugin, which is not enabled here, leave the lock (repeatable)")
	a.jsonFlag(cmd, &opts.JSON, lockJSON{})
	return cmd
}

func runLock(_ context.Context, a *app, opts *lockOptions) error {
	ws, err := pool.Workspace(opts.Workspace)
	if err != nil {
		return err
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	old, err := lock.Read(ws)
	if err != nil {
		return err
	}
	state, err := st.State()
	if err != nil {
		return err
	}
	l, errs := lockOf(st, state.Workspaces[ws], old)
	errs = append(errs, a.lockDrops(st, ws, old, l, opts.Drop)...)
	if len(errs) > 0 {
		return fmt.Errorf("berth.lock was not written, because:\n  %s", strings.Join(errs, "\n  "))
	}
	if err := a.recordCatalogs(l, old); err != nil {
		return err
	}
	if err := lock.Write(ws, l); err != nil {
		return err
	}
	path := filepath.Join(ws, lock.File)
	if opts.JSON {
		return writeJSON(a.stdout, lockJSON{Path: path, Lock: l})
	}
	fmt.Fprintf(a.stdout, "Wrote %s: %d plugin(s).\n", path, len(l.Plugins))
	for _, p := range l.Plugins {
		if p.IsBuiltin() {
			fmt.Fprintf(a.stdout, "  %s@%s  %s  from the built-in catalog of berth %s\n", p.Name, p.Version, p.Digest, p.Catalog.BerthVersion)
			continue
		}
		fmt.Fprintf(a.stdout, "  %s@%s  %s  from catalog %s (targets version %d)\n", p.Name, p.Version, p.Digest, p.Catalog.Name, p.Catalog.TargetsVersion)
	}
	a.sayLocalCatalogs(l)
	return nil
}

// lockDrops says which plugins of old would leave the lock l, which
// has only what is enabled in ws, without drop naming them: each with
// why it is not enabled and how to enable it again.
func (a *app) lockDrops(st *store.Store, ws string, old, l *lock.Lock, drop []string) []string {
	if old == nil {
		return nil
	}
	var errs []string
	for _, p := range old.Plugins {
		if _, ok := l.Plugin(p.Name); ok || slices.Contains(drop, p.Name) {
			continue
		}
		why := ""
		back := "berth enable " + p.Name + " --workspace " + ws
		if rv, err := st.Revoked(p.Name, p.Version, p.Digest); err == nil && rv != nil {
			why = fmt.Sprintf(": %s@%s was revoked by catalog %s (%s)", p.Name, p.Version, rv.Catalog, review.Printable(rv.Reason))
			back = ""
			if _, c, err := a.storeAndCatalogs(); err == nil {
				back = a.wayBack(st, c, rv.Catalog, p.Name, p.Version, []string{ws})
			}
			if back == "" {
				back = "berth show " + p.Name + " lists its versions; berth install " + p.Name + "@VERSION --enable --workspace " + ws
			}
		}
		errs = append(errs, fmt.Sprintf("%s is in berth.lock (%s) and not enabled in %s%s; enable a version again (%s), or let it leave the lock: berth lock --drop %s", p.Name, p.Version, ws, why, back, p.Name))
	}
	for _, n := range drop {
		if _, ok := l.Plugin(n); ok {
			errs = append(errs, fmt.Sprintf("--drop %s: it is enabled in %s, so the lock keeps it; disable it first (berth disable %s --workspace %s)", n, ws, n, ws))
		}
	}
	return errs
}

// lockOf is the lock of what is enabled in w (nil: nothing), keeping the
// constraints of old; errs say which plugins cannot be locked.
func lockOf(st *store.Store, w *store.Workspace, old *lock.Lock) (l *lock.Lock, errs []string) {
	l = &lock.Lock{LockVersion: lock.FormatVersion, Plugins: []lock.Plugin{}}
	if w == nil {
		return l, nil
	}
	names := make([]string, 0, len(w.Plugins))
	for n := range w.Plugins {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		e := w.Plugins[n]
		recs, err := st.Find(n, e.Version)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		entry, err := lock.Entry(recs[0])
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if old != nil {
			if p, ok := old.Plugin(n); ok {
				entry.Constraint = p.Constraint
			}
		}
		l.Set(entry)
	}
	return l, errs
}

// syncAction is one thing sync did, or would do.
type syncAction struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// Action is "install", "enable", "disable" or "refuse".
	Action string `json:"action"`
	Detail string `json:"detail,omitempty"`
	Error  string `json:"error,omitempty"`
}

// syncJSON is what sync --json prints.
type syncJSON struct {
	Workspace   string      `json:"workspace"`
	InStep      bool        `json:"inStep"`
	Differences []lock.Diff `json:"differences"`
	// Actions are what sync did (empty with --check).
	Actions []syncAction `json:"actions"`
}

const syncLong = `Sync reads the workspace's berth.lock and makes the workspace match it: it
updates the lock's catalogs, installs each locked plugin from its catalog
at the locked version, digest and signer (through the same path as berth
install), and enables it; a version already trusted with that digest and
signer is only enabled. --prune also disables what the lock does not name.
A plugin the lock records from berth's built-in catalog is installed from
the built-in catalog of this berth, only when it holds the locked version
with the locked digest (else refused, exit 4, naming what differs).

Sync refuses (exit 4) a catalog older than the lock (a rollback), with
other root keys, or that no longer allows the locked signer; a locked
version that is revoked; and a trusted version with another digest or
signer than the locked one. A yanked locked version is installed with a
warning. A locked version its catalog revoked is replaced, once confirmed
(--yes off a terminal), by the newest version the locked constraint
allows that is not revoked (a step down, said so), and the lock updated.

The lock records where each catalog lives (its source and root pin). A
catalog the lock names and you have not added is added only on your
word: --add-catalog NAME, or a yes on a terminal to a question that
shows its source and root sha256; --yes never adds one, only an https://
source is added, and a catalog you have under that name is never
replaced (one from another source or root is refused, exit 4).

--check changes nothing (not even the catalog copies) and lists every
difference: a plugin missing, enabled at another version or digest, or
trusted from another signer, a catalog copy older than the lock, and with
--prune a plugin the lock does not name. It exits 5 when there is any, 0
when the workspace is in step: a CI gate.`

// syncOptions are the inputs of berth sync.
type syncOptions struct {
	Workspace                           string
	Check, Prune, Yes, AllowStale, JSON bool
	// AddCatalog names the catalogs the lock names that sync may add
	// (where the lock says they live, pinned to its root).
	AddCatalog []string
}

func newSyncCmd(a *app) *cobra.Command {
	opts := &syncOptions{}
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Make the workspace what its berth.lock says: install and enable, or --check",
		Long:  syncLong,
		Example: `  berth sync
  berth sync --check
  berth sync --prune --yes --workspace ~/src/project`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSync(cmd.Context(), a, opts)
		},
	}
	workspaceFlag(cmd, &opts.Workspace)
	f := cmd.Flags()
	f.BoolVar(&opts.Check, "check", false, "change nothing: list every difference, exit 5 when there is any")
	f.BoolVar(&opts.Prune, "prune", false, "also disable the plugins the lock does not name")
	f.BoolVarP(&opts.Yes, "yes", "y", false, "install without asking, new signers included (required when not on a terminal)")
	f.BoolVar(&opts.AllowStale, "allow-stale", false, "accept a catalog copy past its expiry (the trust records say so)")
	f.StringArrayVar(&opts.AddCatalog, "add-catalog", nil, "add this catalog the lock names and you have not added, from the source and root pin the lock records (repeatable; --yes never adds one)")
	a.jsonFlag(cmd, &opts.JSON, syncJSON{})
	return cmd
}

func runSync(ctx context.Context, a *app, opts *syncOptions) error {
	if opts.JSON && !opts.Yes && !opts.Check {
		return usagef("--json cannot ask for confirmation; add --yes (or use --check)")
	}
	ws, err := pool.Workspace(opts.Workspace)
	if err != nil {
		return err
	}
	l, err := lock.Read(ws)
	if err != nil {
		return err
	}
	if l == nil {
		return fmt.Errorf("there is no %s in %s; write one with berth lock (after berth install NAME --enable)", lock.File, ws)
	}
	st, c, err := a.storeAndCatalogs()
	if err != nil {
		return err
	}
	if opts.Check && len(opts.AddCatalog) > 0 {
		return usagef("--add-catalog adds a catalog, and --check changes nothing; run berth sync --add-catalog NAME")
	}
	if !opts.Check {
		if err := a.addLockedCatalogs(ctx, c, l, opts); err != nil {
			return err
		}
		if err := a.refreshLocked(ctx, c, st, l, opts.AllowStale); err != nil {
			return err
		}
	}
	// One set of resolve options, and one clock, for the step-down the
	// question names and the install that takes it.
	ro, err := a.resolveOptions()
	if err != nil {
		return err
	}
	ro.Now = time.Now()
	diffs, err := lock.Check(c, st, ws, l, &lock.CheckOptions{Prune: opts.Prune, Resolve: ro})
	if err != nil {
		return err
	}
	out := syncJSON{Workspace: ws, InStep: len(diffs) == 0, Differences: diffs, Actions: []syncAction{}}
	if opts.Check {
		return a.syncCheck(ws, l, diffs, &out, opts)
	}
	return a.applySync(ctx, &syncRun{a: a, st: st, c: c, ws: ws, ro: ro, out: &out, opts: opts}, l, diffs)
}

// refreshLocked updates the catalogs the lock names (each once).
func (a *app) refreshLocked(ctx context.Context, c *marketplace.Cache, st *store.Store, l *lock.Lock, allowStale bool) error {
	have, err := c.Names()
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, p := range l.Plugins {
		n := p.Catalog.Name
		if p.IsBuiltin() || seen[n] || !contains(have, n) {
			continue
		}
		seen[n] = true
		if err := a.refreshCatalog(ctx, c, st, n, allowStale); err != nil {
			return err
		}
	}
	return nil
}

// syncCheck reports the differences for sync --check, and fails (exit
// 5) when there is any.
func (a *app) syncCheck(ws string, l *lock.Lock, diffs []lock.Diff, out *syncJSON, opts *syncOptions) error {
	if opts.JSON {
		if err := writeJSON(a.stdout, out); err != nil {
			return err
		}
	} else if len(diffs) == 0 {
		fmt.Fprintf(a.stdout, "%s is in step with its berth.lock (%d plugin(s)).\n", ws, len(l.Plugins))
		a.sayUnrecordedCatalogs(l)
	} else {
		fmt.Fprintf(a.stdout, "%s departs from its berth.lock in %d way(s):\n", ws, len(diffs))
		for _, d := range diffs {
			fmt.Fprintf(a.stdout, "  %s %s: %s\n", d.Name, d.Kind, d.Detail)
		}
		if missing := missingCatalogs(diffs); len(missing) > 0 {
			fmt.Fprintf(a.stdout, "Catalog(s) the lock names are not added here: %s. Add them first (berth sync --add-catalog NAME adds one from where the lock says it lives, pinned to its root), then run berth sync.\n", strings.Join(missing, ", "))
		} else if opts.Prune {
			fmt.Fprintln(a.stdout, "Run berth sync --prune to install and enable what the lock names, and disable what it does not.")
		} else {
			fmt.Fprintln(a.stdout, "Run berth sync to install and enable what the lock names.")
		}
	}
	if len(diffs) > 0 {
		return &reported{store.Driftf("%s departs from its berth.lock", ws)}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// syncPlan is what sync does for one plugin.
type syncPlan struct {
	lp      *lock.Plugin
	install bool
	refuse  error
	disable bool
	name    string
	// revoked is the DiffRevoked of lp: sync steps to revoked.StepTo,
	// once confirmed.
	revoked *lock.Diff
}

// planSync turns the differences into one plan per plugin, and the
// locked versions that need an install.
func planSync(st *store.Store, diffs []lock.Diff) ([]*syncPlan, []string, error) {
	var plans []*syncPlan
	byName := map[string]*syncPlan{}
	for _, d := range diffs {
		p := byName[d.Name]
		if p == nil {
			p = &syncPlan{lp: d.Locked, name: d.Name}
			byName[d.Name] = p
			plans = append(plans, p)
		}
		switch d.Kind {
		case lock.DiffNotLocked:
			p.disable = true
		case lock.DiffCatalogMissing:
			p.refuse = errors.New(d.Detail)
		case lock.DiffCatalogRoot, lock.DiffCatalogOlder, lock.DiffCatalogSource, lock.DiffBuiltin:
			p.refuse = fmt.Errorf("%s: %w", d.Detail, errUntrustedLock)
		case lock.DiffRevoked:
			p.revoked = &d
			if d.StepTo == "" {
				p.refuse = fmt.Errorf("%s: %w", d.Detail, errUntrustedLock)
			}
		}
	}
	needInstall := []string{}
	for _, p := range plans {
		if p.disable || p.refuse != nil {
			continue
		}
		if p.revoked != nil {
			needInstall = append(needInstall, p.lp.Name+"@"+p.revoked.StepTo)
			continue
		}
		recs, err := st.Find(p.lp.Name, p.lp.Version)
		switch {
		case errors.Is(err, store.ErrNotTrusted):
			p.install = true
			needInstall = append(needInstall, p.lp.Name+"@"+p.lp.Version)
		case err != nil:
			return nil, nil, err
		case recs[0].Digest != p.lp.Digest:
			p.refuse = fmt.Errorf("%s@%s is trusted with digest %s, and the lock pins %s: versions are immutable, so one of them is not what it claims; check with the publisher (berth revoke %s@%s removes yours): %w", p.lp.Name, p.lp.Version, recs[0].Digest, p.lp.Digest, p.lp.Name, p.lp.Version, errUntrustedLock)
		case p.lp.IsBuiltin() && !p.lp.MatchesRecord(recs[0]):
			p.refuse = fmt.Errorf("%s@%s is trusted here from %s, not from berth's built-in catalog as the lock says; remove yours (berth revoke %s@%s), then run berth sync: %w", p.lp.Name, p.lp.Version, recordFrom(recs[0]), p.lp.Name, p.lp.Version, errUntrustedLock)
		case !p.lp.MatchesRecord(recs[0]):
			p.refuse = fmt.Errorf("%s@%s is trusted from %s, and the lock names another signer: %w; check with the team who locked it", p.lp.Name, p.lp.Version, recordFrom(recs[0]), errUntrustedLock)
		}
	}
	return plans, needInstall, nil
}

// applySync does what the differences call for, plugin by plugin; a
// refusal of one does not stop the others, and the worst exit code wins.
func (a *app) applySync(ctx context.Context, s *syncRun, l *lock.Lock, diffs []lock.Diff) error {
	st, ws, out, opts := s.st, s.ws, s.out, s.opts
	plans, needInstall, err := planSync(st, diffs)
	if err != nil {
		return err
	}
	for _, p := range plans {
		if d := p.revoked; d != nil && p.refuse == nil && !opts.Yes && !a.isTerminal() {
			return usagef("%s@%s is revoked by catalog %s (%s); sync would step to %s, the newest version %s allows that is not revoked, and berth is not on a terminal to ask: pass --yes to confirm", d.Name, d.Locked.Version, d.RevokedBy, review.Printable(d.Reason), d.StepTo, constraintOrAnyWords(d.Locked.Constraint))
		}
	}
	if len(needInstall) > 0 && !opts.Yes && !a.isTerminal() {
		return usagef("sync needs to install %s, and berth is not on a terminal to ask: pass --yes to confirm", strings.Join(needInstall, ", "))
	}
	for _, p := range plans {
		s.apply(ctx, p)
	}
	worst := s.worst
	out.InStep = worst == nil
	if opts.JSON {
		if err := writeJSON(a.stdout, out); err != nil {
			return err
		}
	} else if worst == nil {
		if len(plans) == 0 {
			fmt.Fprintf(a.stdout, "%s is in step with its berth.lock (%d plugin(s)); nothing to do.\n", ws, len(l.Plugins))
		} else {
			fmt.Fprintf(a.stdout, "%s is in step with its berth.lock.\n", ws)
		}
	}
	if worst != nil {
		return &reported{worst}
	}
	return nil
}

// syncRun is one run of applySync: what every plan shares, and the
// worst failure so far.
type syncRun struct {
	a     *app
	st    *store.Store
	c     *marketplace.Cache
	ws    string
	ro    *marketplace.ResolveOptions
	out   *syncJSON
	opts  *syncOptions
	worst error
}

// fail records a failed action of p; the others go on.
func (s *syncRun) fail(p *syncPlan, action string, err error) {
	s.worst = worse(s.worst, err)
	s.out.Actions = append(s.out.Actions, syncAction{Name: p.name, Action: action, Error: err.Error()})
	if !s.opts.JSON {
		fmt.Fprintf(s.a.stderr, "berth: %s: %s\n", p.name, strings.TrimRight(forCLI(err).Error(), "\n"))
	}
}

// apply carries out one plan: refuse, disable, or install (when needed)
// and enable.
func (s *syncRun) apply(ctx context.Context, p *syncPlan) {
	a, st, ws, out, asJSON := s.a, s.st, s.ws, s.out, s.opts.JSON
	switch {
	case p.refuse != nil:
		s.fail(p, "refuse", p.refuse)
		return
	case p.disable:
		gone, err := pool.Disable(ctx, st, ws, p.name)
		if err != nil {
			s.fail(p, "disable", err)
			return
		}
		out.Actions = append(out.Actions, syncAction{Name: p.name, Version: gone.Version, Action: "disable", Detail: "the lock does not name it"})
		if !asJSON {
			fmt.Fprintf(a.stdout, "Disabled %s@%s in %s: the lock does not name it.\n", p.name, gone.Version, ws)
		}
		return
	}
	lp := p.lp
	if p.revoked != nil {
		s.stepDown(ctx, p)
		return
	}
	if p.install && !s.install(ctx, p) {
		return
	}
	en, err := pool.Enable(ctx, st, ws, lp.Name, lp.Version)
	if err != nil {
		s.fail(p, "enable", err)
		return
	}
	detail := ""
	if en.Replaced != "" {
		detail = "replacing " + en.Replaced
	}
	out.Actions = append(out.Actions, syncAction{Name: lp.Name, Version: lp.Version, Action: "enable", Detail: detail})
	if !asJSON {
		if en.Replaced != "" {
			fmt.Fprintf(a.stdout, "Enabled %s@%s in %s (replacing %s).\n", lp.Name, lp.Version, ws, en.Replaced)
		} else {
			fmt.Fprintf(a.stdout, "Enabled %s@%s in %s.\n", lp.Name, lp.Version, ws)
		}
		if !en.Already {
			if err := a.sayRulesOf(st, en.Record); err != nil {
				s.fail(p, "enable", err)
			}
		}
	}
}

// install installs p's locked version from its catalog; false when it
// failed (and was recorded).
func (s *syncRun) install(ctx context.Context, p *syncPlan) bool {
	a, lp, asJSON, yes := s.a, p.lp, s.opts.JSON, s.opts.Yes
	if lp.IsBuiltin() {
		return s.installBuiltin(ctx, p)
	}
	req := marketplace.InstallRequest{Name: lp.Name, Catalog: lp.Catalog.Name, Pin: lp.Pin(), AllowStale: s.opts.AllowStale, Resolve: s.ro}
	res, err := a.installOne(ctx, s.st, s.c, req, installShow{quiet: asJSON}, func(ic *marketplace.InstallCandidate) error {
		if !asJSON {
			a.showCandidate(ic, !yes)
		}
		return a.confirm(fmt.Sprintf("Install %s %s from catalog %s, as berth.lock names it?", lp.Name, lp.Version, lp.Catalog.Name), yes, "--yes")
	})
	if err != nil {
		s.fail(p, "install", err)
		return false
	}
	s.out.Actions = append(s.out.Actions, syncAction{Name: lp.Name, Version: lp.Version, Action: "install", Detail: strings.Join(res.Warnings, "; ")})
	if !asJSON {
		for _, w := range res.Warnings {
			fmt.Fprintf(a.stderr, "berth: warning: %s\n", w)
		}
	}
	return true
}

// errUntrustedLock marks a locked plugin that sync refuses to follow
// (exit 4).
var errUntrustedLock = fmt.Errorf("berth does not follow the lock here: %w", trust.ErrUntrusted)

func constraintOrAnyWords(c string) string {
	if c == "" {
		return "the lock"
	}
	return c
}

// stepDown replaces p's revoked locked version with the newest version
// its constraint allows that is not revoked, once confirmed: installed
// through the install path unless trusted already, enabled, and the
// lock updated.
func (s *syncRun) stepDown(ctx context.Context, p *syncPlan) {
	a, st, lp, d, asJSON, yes := s.a, s.st, p.lp, p.revoked, s.opts.JSON, s.opts.Yes
	rec, err := s.stepRecord(p)
	if err != nil {
		s.fail(p, "refuse", err)
		return
	}
	if err := a.confirm(fmt.Sprintf("%s@%s is revoked by catalog %s (%s). Step to %s instead, and record it in berth.lock?", lp.Name, lp.Version, d.RevokedBy, review.Printable(d.Reason), d.StepTo), yes, "--yes"); err != nil {
		s.fail(p, "install", err)
		return
	}
	if rec == nil {
		req := marketplace.InstallRequest{Name: lp.Name, Catalog: lp.Catalog.Name, Constraint: lp.Constraint, AllowStale: s.opts.AllowStale, Resolve: s.ro}
		res, err := a.installOne(ctx, st, s.c, req, installShow{quiet: asJSON}, func(ic *marketplace.InstallCandidate) error {
			if !asJSON {
				a.showCandidate(ic, !yes)
			}
			return a.confirm(fmt.Sprintf("Install %s %s from catalog %s?", lp.Name, ic.Version.Version, lp.Catalog.Name), yes, "--yes")
		})
		if err != nil {
			s.fail(p, "install", err)
			return
		}
		rec = res.Trust.Record
		s.out.Actions = append(s.out.Actions, syncAction{Name: lp.Name, Version: rec.Version, Action: "install", Detail: strings.Join(res.Warnings, "; ")})
	}
	if !asJSON {
		fmt.Fprintf(a.stdout, "Stepped %s down from %s (revoked by catalog %s) to %s.\n", lp.Name, lp.Version, d.RevokedBy, rec.Version)
	}
	if _, err := a.enableAndLock(ctx, st, s.ws, rec, lp.Constraint, !asJSON); err != nil {
		s.fail(p, "enable", err)
		return
	}
	s.out.Actions = append(s.out.Actions, syncAction{Name: lp.Name, Version: rec.Version, Action: "enable", Detail: fmt.Sprintf("in place of %s, revoked by catalog %s; berth.lock updated", lp.Version, d.RevokedBy)})
}

// stepRecord is the trusted record of p's step-to version that the step
// down may enable without an install: nil when none is trusted (or it is
// revoked), and an errUntrustedLock refusal when the one trusted is not
// what the lock's catalog lists for that version: another digest, not
// installed from that catalog (by name and root keys), or a signer the
// catalog does not allow for the plugin. Only what an install from the
// catalog would give may take a locked plugin's place.
func (s *syncRun) stepRecord(p *syncPlan) (*store.Record, error) {
	lp, to := p.lp, p.revoked.StepTo
	recs, err := s.st.Find(lp.Name, to)
	if errors.Is(err, store.ErrNotTrusted) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rec := recs[0]
	if rv, err := s.st.Revoked(rec.Name, rec.Version, rec.Digest); err != nil || rv != nil {
		return nil, err
	}
	cp, _, err := s.c.Plugin(lp.Catalog.Name, lp.Name)
	if err != nil {
		return nil, err
	}
	v := cp.Version(to)
	if v == nil {
		return nil, fmt.Errorf("catalog %s does not list %s@%s: run berth sync again: %w", lp.Catalog.Name, lp.Name, to, errUntrustedLock)
	}
	fix := fmt.Sprintf("berth revoke %s@%s removes yours, then berth sync installs the catalog's", lp.Name, to)
	switch {
	case rec.Digest != v.Digest:
		return nil, fmt.Errorf("%s@%s is trusted here with digest %s, and catalog %s lists it with %s: versions are immutable, so one of them is not what it claims, and sync does not step down to yours; %s: %w", lp.Name, to, rec.Digest, lp.Catalog.Name, v.Digest, fix, errUntrustedLock)
	case rec.Catalog == nil:
		return nil, fmt.Errorf("%s@%s is trusted here by hand (%s), not installed from catalog %s as the lock's plugin is; %s: %w", lp.Name, to, recordFrom(rec), lp.Catalog.Name, fix, errUntrustedLock)
	case rec.Catalog.Name != lp.Catalog.Name || (len(lp.Catalog.RootKeyIDs) > 0 && !slices.Equal(slices.Sorted(slices.Values(rec.Catalog.RootKeyIDs)), slices.Sorted(slices.Values(lp.Catalog.RootKeyIDs)))):
		return nil, fmt.Errorf("%s@%s is trusted here from catalog %s (root keys %s), and the lock names catalog %s (root keys %s); %s: %w", lp.Name, to, rec.Catalog.Name, strings.Join(rec.Catalog.RootKeyIDs, ","), lp.Catalog.Name, strings.Join(lp.Catalog.RootKeyIDs, ","), fix, errUntrustedLock)
	case !slices.ContainsFunc(cp.Signers, func(sg *catalog.Signer) bool { return sg.Matches(rec.Signer) }):
		return nil, fmt.Errorf("%s@%s is trusted here from %s, a signer catalog %s no longer allows for %s; %s: %w", lp.Name, to, recordFrom(rec), lp.Catalog.Name, lp.Name, fix, errUntrustedLock)
	}
	return rec, nil
}

// missingCatalogs are the catalogs of the catalog-missing differences.
func missingCatalogs(diffs []lock.Diff) []string {
	var out []string
	for _, d := range diffs {
		if d.Kind == lock.DiffCatalogMissing && d.Locked != nil && !slices.Contains(out, d.Locked.Catalog.Name) {
			out = append(out, d.Locked.Catalog.Name)
		}
	}
	return out
}
