package pool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/runtimefetch"
	"github.com/berth-mcp/berth/fetched"
	"github.com/berth-mcp/berth/store"
)

// A runtime-fetched server whose trust record holds a lock
// (store.Record.Fetched) runs from the tree berth resolved and staged at
// trust: the lock's program, given the manifest's arguments after the
// package, in the tree (its working directory, read-only), with no package
// manager and no registry. The tree is drift-checked with the bundle's
// snapshot at every boundary. A server with a fetch and no lock (trusted
// by an older berth, or an ecosystem berth does not stage) fetches when it
// starts, as fetch.go says, and Status says so.

// FetchStatus is what Status says of a runtime-fetched server.
type FetchStatus struct {
	// Package is the package as the manifest names it.
	Package string `json:"package"`
	// Staged is true when the server runs from the tree staged at trust.
	Staged bool `json:"staged"`
	// Lock and Tree are the lock's and the tree's digests (Staged).
	Lock string `json:"lock,omitempty"`
	Tree string `json:"tree,omitempty"`
	// Note says, when not staged, why and how to stage it.
	Note string `json:"note,omitempty"`
}

// fetchStatus is the FetchStatus of a server of pl, nil when it fetches
// nothing.
func (pl *plugin) fetchStatus(name string, spec *bundle.Server) *FetchStatus {
	if spec == nil || spec.Stdio == nil {
		return nil
	}
	f, err := runtimefetch.Read(spec.Stdio.Command, spec.Stdio.Args)
	if err != nil || f == nil {
		return nil
	}
	if l := pl.lockOf(name); l != nil {
		return &FetchStatus{Package: f.Package, Staged: true, Lock: l.Digest(), Tree: l.Tree}
	}
	st := &FetchStatus{Package: f.Package}
	if fetched.Stages(f) {
		st.Note = "fetched from the registry at every start: trusted by a berth that did not stage fetched servers; re-trust it (berth trust, berth upgrade) to stage its tree"
	} else {
		st.Note = "fetched from the registry at every start: berth stages npm packages run with node and PyPI packages only (not " + f.Tool + ")"
	}
	return st
}

// lockOf is the lock of the plugin's server name, nil for none.
func (pl *plugin) lockOf(name string) *fetched.Lock {
	for _, l := range pl.fetched {
		if l != nil && l.Server == name {
			return l
		}
	}
	return nil
}

// openTrees opens a drift checker on every staged tree of the record.
func (pl *plugin) openTrees(rec *store.Record) error {
	pl.fetched = rec.Fetched
	for _, l := range rec.Fetched {
		d, err := store.ParseDigest(l.Tree)
		if err != nil {
			return fmt.Errorf("%s@%s: the fetched tree of server %s: %w; re-trust the plugin", pl.name, pl.version, l.Server, err)
		}
		dc, err := pl.p.store.DriftChecker(d)
		if err != nil {
			return fmt.Errorf("%s@%s: the fetched tree of server %s: %w", pl.name, pl.version, l.Server, err)
		}
		pl.trees = append(pl.trees, dc)
	}
	return nil
}

// checkTrees is checkDrift's part for the staged trees.
func (pl *plugin) checkTrees(ctx context.Context) error {
	for i, dc := range pl.trees {
		if err := dc.Check(ctx); err != nil {
			if !errors.Is(err, store.ErrDrift) {
				return fmt.Errorf("checking the fetched tree of %s@%s for drift: %w", pl.name, pl.version, err)
			}
			return pl.markDrifted(fmt.Errorf("%s@%s drifted (the fetched tree of server %s): %w", pl.name, pl.version, pl.fetched[i].Server, err))
		}
	}
	return nil
}

func (pl *plugin) closeTrees() {
	for _, dc := range pl.trees {
		dc.Close()
	}
}

// stagedSpawn resolves a server that runs from its staged tree: the
// lock's program (or node and the program, when the program has no exec
// bit; for a PyPI tree, its python and the program) with the manifest's
// arguments after the package, in the tree.
func (p *Pool) stagedSpawn(id string, st *bundle.Stdio, snapshot string, l *fetched.Lock, src *sources) (*spawnSpec, error) {
	f, err := runtimefetch.Read(st.Command, st.Args)
	if err != nil || f == nil || f.Package != l.Package {
		return nil, permanent("server %s: its trust record's fetched tree is of %s, which the manifest does not run; re-trust the plugin", id, l.Package)
	}
	tree := p.paths.Snapshot(treeDigest(l.Tree))
	prog := filepath.Join(tree, filepath.FromSlash(l.Program))
	bare := bundle.Stdio{Command: prog, Args: f.Args, Env: st.Env, Cwd: tree}
	if fi, err := os.Stat(prog); err != nil {
		return nil, permanent("server %s: the staged program %s is missing (%v); run berth verify, then re-trust the plugin", id, l.Program, err)
	} else if l.Ecosystem == runtimefetch.EcosystemPyPI {
		py, err := pypiInterpreter(id, l, tree)
		if err != nil {
			return nil, err
		}
		bare.Command, bare.Args = py, append([]string{prog}, f.Args...)
	} else if fi.Mode().Perm()&0o111 == 0 {
		bare.Command, bare.Args = "node", append([]string{prog}, f.Args...)
	}
	sp, err := resolveStdio(id, &bare, snapshot, p.workspace, p.baseEnv, src)
	if err != nil {
		return nil, err
	}
	sp.env = fetched.RunEnv(l, tree, sp.env)
	sp.fetchedTrees = append(sp.fetchedTrees, tree)
	return sp, nil
}

// pypiInterpreter is the python a PyPI tree runs with: the one whose
// absolute path pip wrote on the program's first line at trust (the tree's
// digest covers it). The server runs "<python> <tree>/bin/<script>" with
// the tree on PYTHONPATH (fetched.RunEnv), never a python found on PATH
// now, so that what runs is what was resolved for.
func pypiInterpreter(id string, l *fetched.Lock, tree string) (string, error) {
	py, err := fetched.Interpreter(l, tree)
	if err != nil {
		return "", permanent("server %s: its staged program: %v; run berth verify, then re-trust the plugin", id, err)
	}
	if fi, err := os.Stat(py); err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return "", permanent("server %s: the python its tree of %s was installed with at trust, %s, is gone or not executable; re-trust the plugin (berth trust) to resolve it with the python on PATH now", id, l.Package, py)
	}
	return py, nil
}

func treeDigest(s string) store.Digest {
	d, err := store.ParseDigest(s)
	if err != nil {
		panic("pool: a lock's tree digest was not checked: " + err.Error())
	}
	return d
}
