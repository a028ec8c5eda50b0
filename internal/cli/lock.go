package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/lock"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// lockJSON is what lock --json prints.
type lockJSON struct {
	Path string     `json:"path"`
	Lock *lock.Lock `json:"lock"`
}

func (a *app) lockCommand() *cobra.Command {
	var workspace string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "lock",
		Short: "Write berth.lock from what is enabled in the workspace",
		Long: `Lock writes DIR/berth.lock (the workspace, default the current directory)
from the plugins enabled there: per plugin its name, version, digest,
constraint, signer, and the catalog it was installed from with the key IDs
of its root and the targets version berth had verified. The lock is meant
to be committed: teammates run berth sync to get the same plugins, and
berth sync --check in CI reports where a workspace departs from it.

Every enabled plugin must have been installed from a catalog (berth
install): one trusted by hand cannot be locked, and lock refuses, naming
it, and writes nothing. A constraint already in the lock is kept.
When a lock exists, install --enable and upgrade update it; enable and
disable alone never do.`,
		Example: `  berth lock
  berth lock --workspace ~/src/project
  git add berth.lock`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := pool.Workspace(workspace)
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
			l := &lock.Lock{LockVersion: lock.FormatVersion, Plugins: []lock.Plugin{}}
			var errs []string
			if w := state.Workspaces[ws]; w != nil {
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
			}
			if len(errs) > 0 {
				return fmt.Errorf("berth.lock was not written, because:\n  %s", strings.Join(errs, "\n  "))
			}
			if err := lock.Write(ws, l); err != nil {
				return err
			}
			path := filepath.Join(ws, lock.File)
			if asJSON {
				return writeJSON(a.stdout, lockJSON{Path: path, Lock: l})
			}
			fmt.Fprintf(a.stdout, "Wrote %s: %d plugin(s).\n", path, len(l.Plugins))
			for _, p := range l.Plugins {
				fmt.Fprintf(a.stdout, "  %s@%s  %s  from catalog %s (targets version %d)\n", p.Name, p.Version, p.Digest, p.Catalog.Name, p.Catalog.TargetsVersion)
			}
			return nil
		},
	}
	workspaceFlag(cmd, &workspace)
	a.jsonFlag(cmd, &asJSON, lockJSON{})
	return cmd
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

func (a *app) syncCommand() *cobra.Command {
	var workspace string
	var check, prune, yes, allowStale, asJSON bool
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Make the workspace what its berth.lock says: install and enable, or --check",
		Long: `Sync reads the workspace's berth.lock and makes the workspace match it: it
updates the lock's catalogs, installs each locked plugin from its catalog
at the locked version, digest and signer (through the same path as berth
install), and enables it; a version already trusted with that digest and
signer is only enabled. --prune also disables what the lock does not name.

Sync refuses (exit 4) a catalog older than the lock (a rollback), with
other root keys, or that no longer allows the locked signer; a locked
version that is revoked; and a trusted version with another digest or
signer than the locked one. A yanked locked version is installed with a
warning.

--check changes nothing (not even the catalog copies) and lists every
difference: a plugin missing, enabled at another version or digest, or
trusted from another signer, a catalog copy older than the lock, and with
--prune a plugin the lock does not name. It exits 5 when there is any, 0
when the workspace is in step: a CI gate.`,
		Example: `  berth sync
  berth sync --check
  berth sync --prune --yes --workspace ~/src/project`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if asJSON && !yes && !check {
				return usagef("--json cannot ask for confirmation; add --yes (or use --check)")
			}
			ws, err := pool.Workspace(workspace)
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
			st, err := a.store()
			if err != nil {
				return err
			}
			c, err := a.catalogs()
			if err != nil {
				return err
			}
			if !check {
				have, err := c.Names()
				if err != nil {
					return err
				}
				seen := map[string]bool{}
				for _, p := range l.Plugins {
					n := p.Catalog.Name
					if seen[n] || !contains(have, n) {
						continue
					}
					seen[n] = true
					if err := a.refreshCatalog(ctx, c, st, n, allowStale); err != nil {
						return err
					}
				}
			}
			diffs, err := lock.Check(c, st, ws, l, prune)
			if err != nil {
				return err
			}
			out := syncJSON{Workspace: ws, InStep: len(diffs) == 0, Differences: diffs, Actions: []syncAction{}}
			if check {
				if asJSON {
					if err := writeJSON(a.stdout, out); err != nil {
						return err
					}
				} else if len(diffs) == 0 {
					fmt.Fprintf(a.stdout, "%s is in step with its berth.lock (%d plugin(s)).\n", ws, len(l.Plugins))
				} else {
					fmt.Fprintf(a.stdout, "%s departs from its berth.lock in %d way(s):\n", ws, len(diffs))
					for _, d := range diffs {
						fmt.Fprintf(a.stdout, "  %s %s: %s\n", d.Name, d.Kind, d.Detail)
					}
					if prune {
						fmt.Fprintln(a.stdout, "Run berth sync --prune to install and enable what the lock names, and disable what it does not.")
					} else {
						fmt.Fprintln(a.stdout, "Run berth sync to install and enable what the lock names.")
					}
				}
				if len(diffs) > 0 {
					return &reported{fmt.Errorf("%s departs from its berth.lock: %w", ws, store.ErrDrift)}
				}
				return nil
			}
			return a.applySync(cmd, st, c, ws, l, diffs, &out, yes, allowStale, asJSON)
		},
	}
	workspaceFlag(cmd, &workspace)
	f := cmd.Flags()
	f.BoolVar(&check, "check", false, "change nothing: list every difference, exit 5 when there is any")
	f.BoolVar(&prune, "prune", false, "also disable the plugins the lock does not name")
	f.BoolVarP(&yes, "yes", "y", false, "install without asking, new signers included (required when not on a terminal)")
	f.BoolVar(&allowStale, "allow-stale", false, "accept a catalog copy past its expiry (the trust records say so)")
	a.jsonFlag(cmd, &asJSON, syncJSON{})
	return cmd
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// applySync does what the differences call for, plugin by plugin; a
// refusal of one does not stop the others, and the worst exit code wins.
func (a *app) applySync(cmd *cobra.Command, st *store.Store, c *marketplace.Cache, ws string, l *lock.Lock, diffs []lock.Diff, out *syncJSON, yes, allowStale, asJSON bool) error {
	ctx := cmd.Context()
	type plan struct {
		lp      *lock.Plugin
		install bool
		refuse  error
		disable bool
		name    string
	}
	var plans []*plan
	byName := map[string]*plan{}
	for _, d := range diffs {
		p := byName[d.Name]
		if p == nil {
			p = &plan{lp: d.Locked, name: d.Name}
			byName[d.Name] = p
			plans = append(plans, p)
		}
		switch d.Kind {
		case lock.DiffNotLocked:
			p.disable = true
		case lock.DiffCatalogMissing:
			p.refuse = errors.New(d.Detail)
		case lock.DiffCatalogRoot, lock.DiffCatalogOlder:
			p.refuse = fmt.Errorf("%s: %w", d.Detail, errUntrustedLock)
		}
	}
	needInstall := []string{}
	for _, p := range plans {
		if p.disable || p.refuse != nil {
			continue
		}
		recs, err := st.Find(p.lp.Name, p.lp.Version)
		switch {
		case errors.Is(err, store.ErrNotTrusted):
			p.install = true
			needInstall = append(needInstall, p.lp.Name+"@"+p.lp.Version)
		case err != nil:
			return err
		case recs[0].Digest != p.lp.Digest:
			p.refuse = fmt.Errorf("%s@%s is trusted with digest %s, and the lock pins %s: versions are immutable, so one of them is not what it claims; check with the publisher (berth revoke %s@%s removes yours): %w", p.lp.Name, p.lp.Version, recs[0].Digest, p.lp.Digest, p.lp.Name, p.lp.Version, errUntrustedLock)
		case !p.lp.Signer.Matches(recs[0].Signer):
			p.refuse = fmt.Errorf("%s@%s is trusted from %s, and the lock names another signer: %w; check with the team who locked it", p.lp.Name, p.lp.Version, recs[0].Signer, errUntrustedLock)
		}
	}
	if len(needInstall) > 0 && !yes && !a.isTerminal() {
		return usagef("sync needs to install %s, and berth is not on a terminal to ask: pass --yes to confirm", strings.Join(needInstall, ", "))
	}
	ro, err := a.resolveOptions()
	if err != nil {
		return err
	}
	var worst error
	fail := func(p *plan, action string, err error) {
		worst = worse(worst, err)
		out.Actions = append(out.Actions, syncAction{Name: p.name, Action: action, Error: err.Error()})
		if !asJSON {
			fmt.Fprintf(a.stderr, "berth: %s: %s\n", p.name, strings.TrimRight(forCLI(err).Error(), "\n"))
		}
	}
	for _, p := range plans {
		switch {
		case p.refuse != nil:
			fail(p, "refuse", p.refuse)
			continue
		case p.disable:
			gone, err := pool.Disable(ctx, st, ws, p.name)
			if err != nil {
				fail(p, "disable", err)
				continue
			}
			out.Actions = append(out.Actions, syncAction{Name: p.name, Version: gone.Version, Action: "disable", Detail: "the lock does not name it"})
			if !asJSON {
				fmt.Fprintf(a.stdout, "Disabled %s@%s in %s: the lock does not name it.\n", p.name, gone.Version, ws)
			}
			continue
		}
		lp := p.lp
		if p.install {
			bar := a.downloadBar(!asJSON)
			res, err := c.Install(ctx, st, marketplace.InstallRequest{Name: lp.Name, Catalog: lp.Catalog.Name, Pin: lp.Pin(), AllowStale: allowStale, Resolve: ro,
				Download: &marketplace.DownloadOptions{Progress: bar.progress(lp.Name)},
				Confirm: func(ic *marketplace.InstallCandidate) error {
					bar.done()
					if !asJSON {
						a.showCandidate(ic, !yes)
					}
					return a.confirm(fmt.Sprintf("Install %s %s from catalog %s, as berth.lock names it?", lp.Name, lp.Version, lp.Catalog.Name), yes, "--yes")
				}})
			bar.done()
			if err != nil {
				fail(p, "install", err)
				continue
			}
			out.Actions = append(out.Actions, syncAction{Name: lp.Name, Version: lp.Version, Action: "install", Detail: strings.Join(res.Warnings, "; ")})
			if !asJSON {
				a.printInstalled(res)
				for _, w := range res.Warnings {
					fmt.Fprintf(a.stderr, "berth: warning: %s\n", w)
				}
			}
		}
		en, err := pool.Enable(ctx, st, ws, lp.Name, lp.Version)
		if err != nil {
			fail(p, "enable", err)
			continue
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
					fail(p, "enable", err)
				}
			}
		}
	}
	out.InStep = worst == nil
	if asJSON {
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

// errUntrustedLock marks a locked plugin that sync refuses to follow
// (exit 4).
var errUntrustedLock = fmt.Errorf("berth does not follow the lock here: %w", trust.ErrUntrusted)
