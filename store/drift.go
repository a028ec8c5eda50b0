package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/trust"
)

// ErrDrift means a staged snapshot no longer matches what was reviewed.
// The CLI maps it to exit code 5.
var ErrDrift = errors.New("drift")

// DriftError names what changed in a staged snapshot.
type DriftError struct {
	Digest string // "sha256:<hex>"
	Path   string // the snapshot directory
	Diff   *bundle.Diff
}

func (e *DriftError) Error() string {
	return fmt.Sprintf("the staged copy %s no longer matches what was reviewed (%s): %s; run `berth verify` to see every difference, then re-trust the bundle", e.Path, e.Digest, e.Diff)
}

// Unwrap returns ErrDrift.
func (e *DriftError) Unwrap() error { return ErrDrift }

// checkSnapshot re-hashes a snapshot and compares it with the listing it
// was staged with. It returns the fresh fingerprints when they match.
func (s *Store) checkSnapshot(ctx context.Context, digest Digest) (map[string]Fingerprint, error) {
	meta, err := s.readMeta(digest)
	if err != nil {
		return nil, err
	}
	want, err := bundle.ParseListing([]byte(meta.Listing))
	if err != nil {
		return nil, err
	}
	dir := s.paths.Snapshot(digest)
	tree, ps, err := bundle.ReadTree(ctx, dir, nil)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &DriftError{Digest: digest.String(), Path: dir, Diff: &bundle.Diff{Removed: []string{"."}}}
	}
	if err != nil {
		return nil, err
	}
	// A special file or a hard link added to a snapshot is drift too.
	got := tree.Listing
	if got == nil {
		got = &bundle.Listing{}
	}
	d := bundle.Compare(want, got)
	for _, p := range ps {
		if p.Path != "." {
			d.Added = append(d.Added, p.Path+" ("+p.Rule+")")
		}
	}
	if !d.Empty() {
		return nil, &DriftError{Digest: digest.String(), Path: dir, Diff: d}
	}
	return fingerprints(ctx, dir)
}

// VerifyReport is the outcome of re-verifying one trust record offline.
type VerifyReport struct {
	Record *Record
	// Drift is set when the snapshot differs from the recorded digest.
	Drift *DriftError
	// Signature is the verification result; nil for unsigned records or
	// when verification failed.
	Signature *trust.Result
	// Revoked is set when a catalog revoked this version (Err is then a
	// *RevokedError).
	Revoked *Revocation
	// Err is the first failure: a *DriftError (ErrDrift), an trust.ErrUntrusted
	// signature failure, or another error.
	Err error
}

// Verify re-checks a trust record offline: it re-hashes the staged
// snapshot against the recorded digest, and re-verifies the stored
// signature over the recorded listing against the current signer policy
// (a signer scoped to another plugin never accepts it). A version a
// catalog revoked fails with a *RevokedError.
func (s *Store) Verify(ctx context.Context, rec *Record, v *trust.Verifier) *VerifyReport {
	rep := &VerifyReport{Record: rec}
	digest, err := ParseDigest(rec.Digest)
	if err != nil {
		rep.Err = fmt.Errorf("trust record %s is damaged (digest: %v); remove it and re-trust the plugin", rec.ID(), err)
		return rep
	}
	if r, err := s.Revoked(rec.Name, rec.Version, rec.Digest); err != nil || r != nil {
		rep.Revoked, rep.Err = r, err
		if r != nil {
			rep.Err = &RevokedError{Revocation: r}
		}
		return rep
	}
	if _, err := s.checkSnapshot(ctx, digest); err != nil {
		var de *DriftError
		if errors.As(err, &de) {
			rep.Drift = de
		}
		rep.Err = err
		return rep
	}
	if err := s.verifyFetched(ctx, rec); err != nil {
		var de *DriftError
		if errors.As(err, &de) {
			rep.Drift = de
		}
		rep.Err = err
		return rep
	}
	if rec.Unsigned {
		return rep
	}
	sig, err := os.ReadFile(s.paths.Signature(rec.Name, rec.Version))
	if err != nil {
		rep.Err = Untrustedf("the stored signature of %s is missing (%v); re-trust the bundle with its signature", rec.ID(), err)
		return rep
	}
	meta, err := s.readMeta(digest)
	if err != nil {
		rep.Err = err
		return rep
	}
	res, err := v.VerifyPlugin(ctx, rec.Name, []byte(meta.Listing), sig)
	if err != nil {
		rep.Err = fmt.Errorf("%s: %w", rec.ID(), err)
		return rep
	}
	// Signer continuity rests on the recorded signer, so the stored
	// signature must still be that signer's.
	if got := refOf(res); got.identity() != rec.Signer.identity() {
		rep.Err = Untrustedf("%s: the stored signature is by %s, but the trust record says %s; re-trust the bundle with its publisher's signature (berth trust SOURCE)",
			rec.ID(), got, rec.Signer)
		return rep
	}
	rep.Signature = res
	return rep
}

// DriftChecker guards one staged snapshot at every catalog and dispatch
// boundary. Check is cheap while nothing happened: a file-system watch
// (inotify, kqueue, ...) on every directory of the snapshot raises a flag
// on any change; only then, when no watch could be set up, or when the
// last sweep is older than fullSweepEvery (a watch does not see a write
// through a hard link elsewhere or a shared memory map) does Check compare
// the stat fingerprints of every entry, and only when those differ does it
// re-hash. It is safe for concurrent use.
type DriftChecker struct {
	store  *Store
	digest Digest
	dir    string

	mu       sync.Mutex
	fps      map[string]Fingerprint
	drift    error
	dirty    atomic.Bool
	watching atomic.Bool              // watcher is set: the fast path may trust dirty
	due      atomic.Bool              // fullSweepEvery passed since the last sweep started (a ticker sets it)
	sub      *watchSub                // guarded by mu
	current  atomic.Pointer[watchSub] // sub, for the callbacks
	watchErr error
	done     chan struct{}
}

// DriftChecker returns a checker for the snapshot of digest. Close it to
// release its watch.
func (s *Store) DriftChecker(digest Digest) (*DriftChecker, error) {
	meta, err := s.readMeta(digest)
	if err != nil {
		return nil, err
	}
	c := &DriftChecker{store: s, digest: digest, dir: s.paths.Snapshot(digest), fps: meta.Files, done: make(chan struct{})}
	c.dirty.Store(true) // the first Check always sweeps
	c.watch()
	return c, nil
}

// fullSweepEvery bounds how long Check trusts the watch alone.
const fullSweepEvery = 2 * time.Second

// watch sets up the file-system watch (a subscription to the Store's
// shared one) of every directory of the snapshot; without one every
// Check sweeps. The caller holds mu or is the constructor.
func (c *DriftChecker) watch() {
	c.watching.Store(false)
	if c.sub != nil {
		c.sub.close()
		c.sub = nil
	}
	select {
	case <-c.done: // closed: no new watch
		return
	default:
	}
	var dirs []string
	err := filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		c.watchErr = err
		return
	}
	// The callback runs under the hub's lock, from the moment subscribe
	// releases it: flags only. It is bound to this subscription (self),
	// so a replaced one cannot clear the new watch; lost catches a watch
	// that died before this one was marked as trusted.
	var self atomic.Pointer[watchSub]
	var lost atomic.Bool
	sub, err := c.store.hub.subscribe(dirs, fullSweepEvery, func(n hubNote, _ fsnotify.Event) {
		switch n {
		case noteTick:
			c.due.Store(true)
		case noteDead:
			c.dirty.Store(true)
			lost.Store(true)
			if me := self.Load(); me != nil && c.current.Load() == me {
				c.watching.Store(false)
			}
		default: // an event, or events lost
			c.dirty.Store(true)
		}
	})
	if err != nil {
		c.watchErr = err
		return
	}
	self.Store(sub)
	c.sub = sub
	c.current.Store(sub)
	c.watching.Store(true)
	if lost.Load() {
		c.watching.Store(false)
	}
}

// Watching reports whether a file-system watch backs the fast path.
func (c *DriftChecker) Watching() bool { return c.watching.Load() }

// Noticed reports whether the watch has seen a change (or lost events)
// since the last Check, so that the next Check sweeps. The watch delivers
// asynchronously: a test waits on Noticed for a change it made to reach
// the checker.
func (c *DriftChecker) Noticed() bool { return c.dirty.Load() }

// Check returns nil when the snapshot still matches what was reviewed, or a
// *DriftError (wrapping ErrDrift) naming what changed. Once drifted, a
// snapshot stays drifted for this checker.
func (c *DriftChecker) Check(ctx context.Context) error {
	if c.watching.Load() && !c.dirty.Load() && !c.due.Load() {
		c.mu.Lock()
		err := c.drift
		c.mu.Unlock()
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.drift != nil {
		return c.drift
	}
	c.dirty.Store(false)
	c.due.Store(false)
	fps, err := fingerprints(ctx, c.dir)
	if err == nil && maps.Equal(fps, c.fps) {
		return nil
	}
	if err != nil && ctx.Err() != nil {
		c.dirty.Store(true)
		return err
	}
	// Something differs, or the walk failed: re-hash to decide.
	fresh, err := c.store.checkSnapshot(ctx, c.digest)
	if err != nil {
		if errors.Is(err, ErrDrift) {
			c.drift = err
		} else {
			c.dirty.Store(true)
		}
		return err
	}
	c.fps = fresh
	// The tree changed without changing its content (a new empty
	// directory, a replaced directory, a touched file): the watch may not
	// cover every directory now, so set it up afresh, and sweep again at
	// the next Check for what changed before the new watch was in place.
	if c.watching.Load() {
		c.watch()
		c.dirty.Store(true)
	}
	return nil
}

// Close stops the watch.
func (c *DriftChecker) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.done:
		return nil
	default:
	}
	close(c.done)
	c.watching.Store(false)
	if c.sub != nil {
		c.sub.close()
		c.sub = nil
	}
	return nil
}
