package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/runtimefetch"
	"github.com/berth-mcp/berth/fetched"
	"github.com/berth-mcp/berth/internal/atomicfile"
)

// A runtime-fetched server's tree (npx, uvx; package fetched) is resolved
// at trust, before the review is shown, into a private directory under
// $BERTH_HOME/fetchers/stage, and staged with the record like a bundle's
// snapshot: content-addressed by its canonical listing's digest
// (store/sha256/<hex>, read-only, with its metadata and fingerprints), so
// that the drift checker, Verify and GC treat it as one. The record's
// Fetched holds each lock.

// resolvedFetch is one resolved tree, before it is staged.
type resolvedFetch struct {
	lock *fetched.Lock
	dir  string
}

type resolvedFetches []resolvedFetch

func (rs resolvedFetches) locks() []*fetched.Lock {
	var out []*fetched.Lock
	for _, r := range rs {
		out = append(out, r.lock)
	}
	return out
}

// remove removes what was not staged (a staged tree was renamed away).
func (rs resolvedFetches) remove() {
	for _, r := range rs {
		if _, err := os.Lstat(r.dir); err == nil {
			atomicfile.RemoveTree(r.dir)
		}
	}
}

// resolveFetches resolves the tree of every stdio server of b whose
// command fetches a package berth stages (fetched.Resolve); a server of
// an ecosystem berth does not stage (go, oci, deno) is left to fetch when
// it starts. A failed resolution fails the trust, naming the server.
func (s *Store) resolveFetches(ctx context.Context, b *bundle.Bundle, o *fetched.Options) (resolvedFetches, error) {
	var out resolvedFetches
	names := slices.Sorted(maps.Keys(b.Manifest.MCPServers))
	var opts fetched.Options
	if o != nil {
		opts = *o
	}
	opts.Fetchers = s.paths.Fetchers()
	haveConfig := false
	for _, name := range names {
		srv := b.Manifest.MCPServers[name]
		if srv == nil || srv.Stdio == nil {
			continue
		}
		f, err := runtimefetch.Read(srv.Stdio.Command, srv.Stdio.Args)
		if err != nil || f == nil {
			continue // validation refused it already, or it fetches nothing
		}
		if f.Ecosystem != runtimefetch.EcosystemNPM && f.Ecosystem != runtimefetch.EcosystemPyPI {
			continue
		}
		if !haveConfig {
			cfg, err := s.Config()
			if err != nil {
				return out, err
			}
			opts.AllowScripts = cfg.FetchAllowScripts
			haveConfig = true
		}
		root := filepath.Join(s.paths.Fetchers(), "stage")
		if err := os.MkdirAll(root, 0o700); err != nil {
			return out, err
		}
		dir, err := os.MkdirTemp(root, name+"-")
		if err != nil {
			return out, err
		}
		l, err := fetched.Resolve(ctx, name, f, dir, &opts)
		if errors.Is(err, fetched.ErrNotStaged) {
			atomicfile.RemoveTree(dir)
			continue
		}
		if err != nil {
			atomicfile.RemoveTree(dir)
			return out, &FetchError{Plugin: b.Manifest.Name, Server: name, Package: f.Package, Err: err}
		}
		out = append(out, resolvedFetch{lock: l, dir: dir})
	}
	return out, nil
}

// FetchError is a runtime-fetched server whose package berth could not
// resolve and stage at trust.
type FetchError struct {
	Plugin, Server, Package string
	Err                     error
}

func (e *FetchError) Error() string {
	msg := e.Err.Error()
	if !strings.HasPrefix(msg, "server "+e.Server+":") {
		msg = "server " + e.Server + ": " + e.Package + ": " + msg
	}
	return fmt.Sprintf("%s: berth resolves a fetched server's whole package tree at trust and runs it from there: %s", e.Plugin, msg)
}

func (e *FetchError) Unwrap() error { return e.Err }

// sameFetched reports whether a record's locks are those just resolved,
// with their trees intact.
func (s *Store) sameFetched(ctx context.Context, have []*fetched.Lock, now resolvedFetches) bool {
	if len(have) != len(now) {
		return false
	}
	for i, l := range have {
		if l.Digest() != now[i].lock.Digest() || l.Tree != now[i].lock.Tree {
			return false
		}
		d, err := ParseDigest(l.Tree)
		if err != nil {
			return false
		}
		if _, err := s.checkSnapshot(ctx, d); err != nil {
			return false
		}
	}
	return true
}

// stageTreeLocked moves a resolved tree into the store as the snapshot of
// its digest, read-only, with its metadata; an intact snapshot of the same
// digest is reused.
func (s *Store) stageTreeLocked(ctx context.Context, dir, want string) error {
	digest, err := ParseDigest(want)
	if err != nil {
		return err
	}
	final := s.paths.Snapshot(digest)
	if _, err := os.Stat(final); err == nil {
		if _, derr := s.checkSnapshot(ctx, digest); derr == nil {
			return nil
		}
		aside := filepath.Join(s.paths.Store(), ".tmp-damaged-"+filepath.Base(final)+"-"+fmt.Sprint(s.now().UnixNano()))
		if err := os.Rename(final, aside); err != nil {
			return fmt.Errorf("replacing the damaged snapshot %s: %w", final, err)
		}
	}
	if err := os.MkdirAll(s.paths.Store(), 0o700); err != nil {
		return err
	}
	tree, ps, err := bundle.ReadTree(ctx, dir, nil)
	if err != nil {
		return err
	}
	if len(ps) > 0 || tree.Listing == nil || tree.Listing.Digest() != want {
		return fmt.Errorf("the resolved tree %s changed after it was resolved (it is not %s); try again", dir, want)
	}
	if err := makeReadOnly(dir); err != nil {
		return err
	}
	fps, err := fingerprints(ctx, dir)
	if err != nil {
		return err
	}
	meta := &snapshotMeta{Digest: want, Listing: string(tree.Listing.Bytes()), Files: fps}
	if err := atomicfile.WriteJSON(s.paths.SnapshotMeta(digest), meta, 0o600); err != nil {
		return err
	}
	if err := os.Rename(dir, final); err != nil {
		return err
	}
	return atomicfile.SyncDir(s.paths.Store())
}

// FetchedTree is the directory of a lock's staged tree.
func (s *Store) FetchedTree(l *fetched.Lock) (string, error) {
	d, err := ParseDigest(l.Tree)
	if err != nil {
		return "", fmt.Errorf("the fetched tree of server %s: %w", l.Server, err)
	}
	return s.paths.Snapshot(d), nil
}

// LockOf returns the record's lock of server, nil when it has none (no
// fetch, an ecosystem berth does not stage, or a record of an older
// berth).
func (r *Record) LockOf(server string) *fetched.Lock {
	for _, l := range r.Fetched {
		if l != nil && l.Server == server {
			return l
		}
	}
	return nil
}

// verifyFetched re-checks every staged tree of rec offline: its files
// against its digest, and its lock file against the recorded lock.
func (s *Store) verifyFetched(ctx context.Context, rec *Record) error {
	for _, l := range rec.Fetched {
		d, err := ParseDigest(l.Tree)
		if err != nil {
			return fmt.Errorf("trust record %s is damaged (the tree of server %s: %v); re-trust the plugin", rec.ID(), l.Server, err)
		}
		if _, err := s.checkSnapshot(ctx, d); err != nil {
			return fmt.Errorf("the fetched tree of server %s: %w", l.Server, err)
		}
		if err := fetched.Check(s.paths.Snapshot(d), l); err != nil {
			return fmt.Errorf("%s: %w", rec.ID(), err)
		}
	}
	return nil
}

// SetFetchAllowScripts sets the npm packages whose install scripts may
// run (confined) at trust; nil or empty allows none.
func (s *Store) SetFetchAllowScripts(ctx context.Context, names []string) (*Config, error) {
	for _, n := range names {
		if !npmName(n) {
			return nil, fmt.Errorf("%q is not an npm package name", n)
		}
	}
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	return s.UpdateConfig(ctx, func(c *Config) error {
		if slices.Equal(c.FetchAllowScripts, names) {
			return ErrNoChange
		}
		c.FetchAllowScripts = names
		if len(names) == 0 {
			c.FetchAllowScripts = nil
		}
		return nil
	})
}

func npmName(n string) bool {
	f, err := runtimefetch.Read("npx", []string{n + "@1.0.0"})
	return err == nil && f != nil && f.Package == n+"@1.0.0"
}
