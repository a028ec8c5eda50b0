package store

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/berth-mcp/berth/internal/atomicfile"
)

// Revoke removes the trust records of name (one version, or all when
// version is ""), drops their enablements and bumps the generation. The
// snapshots stay until GC.
func (s *Store) Revoke(ctx context.Context, name, version string) ([]*Record, error) {
	r, err := s.RevokeWithReport(ctx, name, version)
	if r == nil {
		return nil, err
	}
	return r.Records, err
}

// Revoked is what RevokeWithReport did.
type Revoked struct {
	// Records are the trust records removed.
	Records []*Record
	// Disabled are the enablements dropped, sorted by workspace.
	Disabled []Disabled
}

// Disabled is one enablement that a revocation dropped.
type Disabled struct {
	// Workspace is the workspace it was enabled in.
	Workspace string `json:"workspace"`
	// Name and Version are the plugin and the version that was enabled.
	Name    string `json:"name"`
	Version string `json:"version"`
}

// RevokeWithReport is Revoke, also saying which workspaces it disabled
// the plugin in.
func (s *Store) RevokeWithReport(ctx context.Context, name, version string) (*Revoked, error) {
	if err := CheckRef(name, version); err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	recs, err := s.recordsOf(name)
	if err != nil {
		return nil, err
	}
	var gone []*Record
	for _, r := range recs {
		if version == "" || r.Version == version {
			gone = append(gone, r)
		}
	}
	if len(gone) == 0 {
		what := name
		if version != "" {
			what += "@" + version
		}
		return nil, NotTrustedf("%s is not trusted, so there is nothing to revoke (`berth list` shows what is trusted)", what)
	}
	// The state goes first: with the enablements dropped and the
	// generation bumped, running pools stop the plugin even if berth dies
	// before the records are gone (running revoke again finishes). The
	// records follow at once, before the directory syncs, so a pool that
	// reacts to the bump finds them gone.
	st, err := s.State()
	if err != nil {
		return nil, err
	}
	var disabled []Disabled
	for _, ws := range slices.Sorted(maps.Keys(st.Workspaces)) {
		w := st.Workspaces[ws]
		if e := w.Plugins[name]; e != nil {
			for _, r := range gone {
				if e.Version == r.Version {
					delete(w.Plugins, name)
					disabled = append(disabled, Disabled{Workspace: ws, Name: name, Version: r.Version})
				}
			}
		}
	}
	if err := s.replaceStateLocked(st); err != nil {
		return nil, err
	}
	s.hook("revoke-state-written")
	for _, r := range gone {
		if err := os.Remove(s.paths.Record(r.Name, r.Version)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		os.Remove(s.paths.Signature(r.Name, r.Version))
	}
	s.hook("revoke-removed")
	atomicfile.SyncDir(s.paths.PluginTrustDir(name))
	os.Remove(s.paths.PluginTrustDir(name)) // only if empty
	return &Revoked{Records: gone, Disabled: disabled}, atomicfile.SyncDir(s.paths.Root)
}

// isLeftover reports whether name is a staging temp dir (".tmp-*") or the
// temp file of an interrupted atomic write (".<base>.tmp-*").
func isLeftover(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-")
}

// GCResult lists what GC removed.
type GCResult struct {
	Snapshots []string `json:"snapshots"`
	Leftovers []string `json:"leftovers"`
}

// GC removes snapshots no trust record points to, their metadata, and
// the leftovers of interrupted staging and atomic writes (every
// ".<name>.tmp-*" and "store/sha256/.tmp-*" that berth makes, and
// serve.token's ".serve.token-*").
func (s *Store) GC(ctx context.Context) (*GCResult, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	recs, err := s.Records()
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	for _, r := range recs {
		if d, err := ParseDigest(r.Digest); err == nil {
			keep[d.hex] = true
		}
		for _, l := range r.Fetched {
			if d, err := ParseDigest(l.Tree); err == nil {
				keep[d.hex] = true
			}
		}
	}
	res := &GCResult{Snapshots: []string{}, Leftovers: []string{}}
	// Temp files of atomic writes that a crash cut short: of state.json
	// and config.json, of records and signatures, of signers' trusted
	// roots, of catalogs' revocations (all written under the lock that GC
	// holds); those of approvals and serve.token below.
	var temps []string
	for _, pattern := range []string{
		filepath.Join(s.paths.Root, ".*.tmp-*"),
		filepath.Join(s.paths.TrustDir(), "*", ".*.tmp-*"),
		filepath.Join(s.paths.Root, "roots", ".*.tmp-*"),
		filepath.Join(s.paths.Revocations(), "*", ".*.tmp-*"),
	} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			return nil, err
		}
		temps = append(temps, m...)
	}
	// The approvals and serve.token are written without the lock (by
	// berth serve), so only temp files too old to be a write in progress
	// go: an approval's ".<id>.tmp-*" and serve.token's ".serve.token-*"
	// (mcpexport.LoadOrCreateToken, which links it into place).
	var old []string
	for _, pattern := range []string{
		filepath.Join(s.paths.Approvals(), ".*.tmp-*"),
		filepath.Join(s.paths.Root, "."+filepath.Base(s.paths.ServeToken())+"-*"),
	} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			return nil, err
		}
		old = append(old, m...)
	}
	for _, p := range old {
		if fi, err := os.Lstat(p); err == nil && s.now().Sub(fi.ModTime()) > time.Minute {
			temps = append(temps, p)
		}
	}
	// Trees resolved at trust are staged from fetchers/stage, without the
	// lock while they resolve: only those a day old are a crash's.
	if stale, err := filepath.Glob(filepath.Join(s.paths.Fetchers(), "stage", "*")); err == nil {
		for _, p := range stale {
			if fi, err := os.Lstat(p); err == nil && s.now().Sub(fi.ModTime()) > 24*time.Hour {
				if err := atomicfile.RemoveTree(p); err != nil {
					return nil, err
				}
				res.Leftovers = append(res.Leftovers, p)
			}
		}
	}
	for _, p := range temps {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		res.Leftovers = append(res.Leftovers, p)
	}
	entries, err := os.ReadDir(s.paths.Store())
	if errors.Is(err, fs.ErrNotExist) {
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := e.Name()
		p := filepath.Join(s.paths.Store(), name)
		switch {
		case isLeftover(name):
			if err := atomicfile.RemoveTree(p); err != nil {
				return nil, err
			}
			res.Leftovers = append(res.Leftovers, p)
		case strings.HasSuffix(name, ".meta.json"):
			h := strings.TrimSuffix(name, ".meta.json")
			if !keep[h] {
				if err := os.Remove(p); err != nil {
					return nil, err
				}
				if _, err := os.Stat(filepath.Join(s.paths.Store(), h)); errors.Is(err, fs.ErrNotExist) {
					res.Leftovers = append(res.Leftovers, p)
				}
			}
		case e.IsDir() && !keep[name]:
			if err := atomicfile.RemoveTree(p); err != nil {
				return nil, err
			}
			res.Snapshots = append(res.Snapshots, "sha256:"+name)
		}
	}
	return res, atomicfile.SyncDir(s.paths.Store())
}
