package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/internal/fsx"
)

// State is state.json: the generation and what is enabled where. Every
// change to it happens under the store lock and bumps Generation.
type State struct {
	// Generation increases by one with every change to the state or the
	// configuration. Running pools compare it at every boundary.
	Generation uint64 `json:"generation"`
	// Workspaces maps an absolute, symlink-resolved workspace path to what
	// is enabled there.
	Workspaces map[string]*Workspace `json:"workspaces,omitempty"`
}

// Workspace is what is enabled in one workspace.
type Workspace struct {
	// Plugins maps a plugin name to its enablement.
	Plugins map[string]*Enablement `json:"plugins"`
	// Profiles maps a profile name to what it offers (berth profile).
	Profiles map[string]*Profile `json:"profiles,omitempty"`
}

// Enablement attaches one trusted version of a plugin to a workspace.
type Enablement struct {
	Version   string    `json:"version"`
	Digest    string    `json:"digest"`
	EnabledAt time.Time `json:"enabledAt"`
	// Surfaces are the pinned tool surfaces, by server name ("<plugin>"
	// for native tools is the tool provider's name).
	Surfaces map[string]*Surface `json:"surfaces,omitempty"`
}

// Surface is a server's reviewed tool surface: per tool, the hash of its
// canonical JSON (name, description, schemas, annotations).
type Surface struct {
	Tools map[string]string `json:"tools"`
	// UI are the MCP Apps templates (ui:// URI → pool.UITemplateHash)
	// its tools link or it lists; absent is none.
	UI         map[string]string `json:"ui,omitempty"`
	RecordedAt time.Time         `json:"recordedAt"`
}

// Workspace returns the workspace entry, creating it.
func (s *State) Workspace(path string) *Workspace {
	if s.Workspaces == nil {
		s.Workspaces = map[string]*Workspace{}
	}
	w := s.Workspaces[path]
	if w == nil {
		w = &Workspace{Plugins: map[string]*Enablement{}}
		s.Workspaces[path] = w
	}
	if w.Plugins == nil {
		w.Plugins = map[string]*Enablement{}
	}
	return w
}

// EnabledIn lists the workspaces where name is enabled.
func (s *State) EnabledIn(name string) []string {
	var out []string
	for path, w := range s.Workspaces {
		if w != nil && w.Plugins[name] != nil {
			out = append(out, path)
		}
	}
	sortStrings(out)
	return out
}

// ErrNoChange, returned by an update function, ends the update without
// writing and without bumping the generation.
var ErrNoChange = errors.New("no change")

// lock takes the store's file lock, waiting until ctx is done.
func (s *Store) lock(ctx context.Context) (func(), error) {
	if err := s.paths.ensure(); err != nil {
		return nil, err
	}
	if err := s.paths.CheckPrivate(); err != nil {
		return nil, err
	}
	unlock, err := fsx.Lock(ctx, s.paths.Lock())
	if err != nil {
		return nil, fmt.Errorf("waiting for the berth state lock %s: %w", s.paths.Lock(), err)
	}
	return unlock, nil
}

// State reads state.json without taking the lock (it is only ever replaced
// atomically). A missing file is the empty state of generation 0.
//
// It is decoded strictly (see FileError): an unknown field, a duplicate
// key, a wrong type, a null where a value is required, a missing field, a
// damaged digest or version, or a workspace that is not an absolute path is
// an error naming state.json, every problem and the fix, never a panic
// later.
func (s *Store) State() (*State, error) {
	st := &State{}
	if _, err := readStrict(s.paths.State(), st); err != nil {
		return nil, err
	}
	if ps := st.check(); len(ps) > 0 {
		return nil, &FileError{Path: s.paths.State(), Problems: ps, Fix: fixDamaged}
	}
	return st, nil
}

// check applies the rules that typing cannot: names, digests, versions
// and paths, and the rules of profiles (CheckProfile).
func (st *State) check() []string {
	var ps []string
	for _, ws := range slices.Sorted(maps.Keys(st.Workspaces)) {
		wp := jsonPath("workspaces", ws)
		if !filepath.IsAbs(ws) || filepath.Clean(ws) != ws {
			ps = append(ps, wp+": a workspace is an absolute, clean path")
		}
		for _, name := range slices.Sorted(maps.Keys(st.Workspaces[ws].Plugins)) {
			pp := jsonPath(wp+".plugins", name)
			e := st.Workspaces[ws].Plugins[name]
			if CheckRef(name, "") != nil {
				ps = append(ps, pp+": not a plugin name")
			}
			if !bundle.IsStrictSemver(e.Version) {
				ps = append(ps, pp+".version: not a strict semver version")
			}
			if _, err := ParseDigest(e.Digest); err != nil {
				ps = append(ps, pp+".digest: not a digest (sha256: and 64 lower-case hex digits)")
			}
			for _, key := range slices.Sorted(maps.Keys(e.Surfaces)) {
				if key == "" {
					ps = append(ps, pp+".surfaces: a surface without a server name")
				}
			}
		}
		for _, name := range slices.Sorted(maps.Keys(st.Workspaces[ws].Profiles)) {
			pp := jsonPath(wp+".profiles", name)
			for _, p := range CheckProfile(name, st.Workspaces[ws].Profiles[name]) {
				ps = append(ps, pp+": "+p)
			}
		}
	}
	return ps
}

// Update changes the state under the lock: it reads the current state,
// calls fn, bumps the generation and writes the result atomically. If fn
// returns ErrNoChange nothing is written; any other error aborts.
func (s *Store) Update(ctx context.Context, fn func(*State) error) (*State, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return s.updateLocked(fn)
}

func (s *Store) updateLocked(fn func(*State) error) (*State, error) {
	st, err := s.State()
	if err != nil {
		return nil, err
	}
	if err := fn(st); err != nil {
		if errors.Is(err, ErrNoChange) {
			return st, nil
		}
		return nil, err
	}
	return st, s.bumpLocked(st)
}

func (s *Store) bumpLocked(st *State) error {
	if err := s.replaceStateLocked(st); err != nil {
		return err
	}
	return atomicfile.SyncDir(s.paths.Root)
}

// replaceStateLocked bumps the generation and replaces state.json (temp
// file, fsync, rename); the caller syncs the root directory.
func (s *Store) replaceStateLocked(st *State) error {
	st.Generation++
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return s.replaceLocked(s.paths.State(), append(data, '\n'), "state-temp-written")
}

// replaceLocked replaces a state file atomically, calling the crash hook
// named step once the temp file is complete but not yet renamed.
func (s *Store) replaceLocked(path string, data []byte, step string) error {
	f, err := atomicfile.Create(path, 0o600, nil)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	s.hook(step)
	err = f.Replace()
	localWrites.Add(1) // even a failed rename may have replaced the file
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// GenerationWatch notices a moved generation cheaply. A file-system watch
// of the berth home (fsnotify) marks the watch dirty when state.json or
// config.json is written, replaced or removed, and a write through any
// Store of this process marks it at once; while neither happened a Check
// is a few memory loads: no syscall, no read. Once a second
// (verifyEvery), after an event, and whenever no watch could be set up or
// it failed, a Check stats both files as it did before the watch: a read
// follows only when one was replaced, or state.json was written so
// recently that a replacement could share its inode number, size and
// (coarse) modification time. After an event for state.json it is read
// regardless. A replaced (or, by the watch, written) config.json counts as
// a move too, so a configuration change whose bump a crash cut off (or a
// hand edit) is not missed. It is safe for concurrent use; Close it to
// release its watch.
type GenerationWatch struct {
	store   *Store
	mu      sync.Mutex
	last    os.FileInfo
	lastCfg os.FileInfo
	state   *State
	settled bool // last was older than racyWindow when it was read
	// local is the value of localWrites when a Check last looked.
	local uint64

	watching atomic.Bool   // the watch is up: the fast path may trust dirty
	dirty    atomic.Bool   // the watch saw state.json or config.json change
	dirtyCfg atomic.Bool   // ... config.json
	due      atomic.Bool   // verifyEvery passed since a Check last looked
	sub      *watchSub     // on the Store's shared watch; nil without one
	closed   bool          // guarded by mu
	stats    atomic.Uint64 // stat calls made, for tests
}

// verifyEvery bounds how long a Check trusts the watch alone: a watch of
// a directory does not see a write through a hard link elsewhere.
const verifyEvery = time.Second

// localWrites counts the state.json and config.json replacements made by
// any Store of this process, so that a watch in the same process (a pool
// and the CLI command or test that changed the state) sees them at once,
// before the file-system event arrives.
var localWrites atomic.Uint64

// racyWindow is how old state.json must be before its stat alone is
// trusted to tell replacements apart: file-system clocks tick coarsely
// and inode numbers are reused. On file systems with sub-second times the
// clock ticks every few milliseconds (Linux stamps files with the coarse
// clock), so 50ms is enough; a time with no sub-second part may come from
// a file system that keeps whole seconds, and then 2s is.
const (
	racyWindow     = 2 * time.Second
	racyWindowFine = 50 * time.Millisecond
)

// racy reports whether a file's stat may not yet tell it apart from a
// replacement written in the same clock tick.
func racy(fi os.FileInfo, now time.Time) bool {
	if fi == nil {
		return false
	}
	window := racyWindow
	if fi.ModTime().Nanosecond() != 0 {
		window = racyWindowFine
	}
	return now.Sub(fi.ModTime()) <= window
}

// WatchGeneration returns a watch whose first Check reads the state. If
// no file-system watch can be set up, every Check stats.
func (s *Store) WatchGeneration() *GenerationWatch {
	return s.watchGeneration(true)
}

func (s *Store) watchGeneration(withWatch bool) *GenerationWatch {
	w := &GenerationWatch{store: s}
	if withWatch {
		w.watch()
	}
	return w
}

// watch sets up the file-system watch of the directory that holds
// state.json and config.json (both are replaced by rename, so the
// directory is what can be watched), on the Store's shared watch.
func (w *GenerationWatch) watch() {
	root := filepath.Dir(w.store.paths.State())
	if filepath.Dir(w.store.paths.Config()) != root {
		return // not one directory: stat every time
	}
	stateName, cfgName := filepath.Base(w.store.paths.State()), filepath.Base(w.store.paths.Config())
	root = filepath.Clean(root)
	// The callback runs under the hub's lock, from the moment subscribe
	// releases it: flags only. lost catches a watch that stopped seeing
	// before it was marked as trusted.
	var lost atomic.Bool
	unwatch := func() {
		lost.Store(true)
		w.watching.Store(false)
		w.dirty.Store(true)
	}
	sub, err := w.store.hub.subscribe([]string{root}, verifyEvery, func(n hubNote, ev fsnotify.Event) {
		switch n {
		case noteTick:
			w.due.Store(true)
		case noteLost:
			w.dirty.Store(true) // an overflow may have lost events
		case noteDead:
			unwatch()
		case noteEvent:
			switch {
			case filepath.Clean(ev.Name) == root:
				// The directory itself went away or moved: the watch
				// sees nothing more.
				unwatch()
			case filepath.Base(ev.Name) == cfgName:
				w.dirtyCfg.Store(true)
				w.dirty.Store(true)
			case filepath.Base(ev.Name) == stateName:
				w.dirty.Store(true)
			}
		}
	})
	if err != nil {
		return
	}
	w.sub = sub
	w.watching.Store(true)
	if lost.Load() {
		w.watching.Store(false)
	}
}

// Watching reports whether a file-system watch backs the fast path.
func (w *GenerationWatch) Watching() bool { return w.watching.Load() }

// Close releases the watch; Check keeps working, by stat.
func (w *GenerationWatch) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	w.watching.Store(false)
	if w.sub != nil {
		w.sub.close()
	}
	return nil
}

// Check returns the current state and whether its generation moved (or
// config.json was replaced) since the previous Check (always true the
// first time).
func (w *GenerationWatch) Check() (*State, bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	local := localWrites.Load()
	if w.state != nil && w.settled && w.watching.Load() && !w.dirty.Load() && !w.due.Load() && local == w.local {
		return w.state, false, nil
	}
	// Clear the marks before looking, so a change made while this Check
	// looks marks the next one.
	event, cfgEvent := w.dirty.Swap(false), w.dirtyCfg.Swap(false)
	w.due.Store(false)
	w.stats.Add(2)
	fi, err := statOrNil(w.store.paths.State())
	if err != nil {
		w.dirty.Store(true)
		return nil, false, err
	}
	cfi, err := statOrNil(w.store.paths.Config())
	if err != nil {
		w.dirty.Store(true)
		return nil, false, err
	}
	cfgMoved := !sameFile(w.lastCfg, cfi) || cfgEvent
	if w.state != nil && w.settled && !event && sameFile(w.last, fi) && !cfgMoved {
		w.local = local
		return w.state, false, nil
	}
	readAt := time.Now()
	st, err := w.store.State()
	if err != nil {
		w.dirty.Store(true)
		return nil, false, err
	}
	moved := w.state == nil || st.Generation != w.state.Generation || cfgMoved
	w.last, w.lastCfg, w.state = fi, cfi, st
	w.settled = !racy(fi, readAt)
	w.local = local
	return st, moved, nil
}

// statOrNil stats path; a missing file is a nil FileInfo.
func statOrNil(path string) (os.FileInfo, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return fi, err
}

func sameFile(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
