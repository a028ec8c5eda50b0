package store

import "time"

// Store is berth's on-disk state: the content-addressed snapshots, the
// trust records with their signatures, state.json and config.json. Every
// change happens under one file lock and is written atomically; a crash
// at any point leaves the old state or the new one. A Store is safe for
// concurrent use by goroutines and by processes. Open one per process and
// give it to everything that works on the same state (pool.Open), so that
// its options apply to every change.
type Store struct {
	paths Paths
	now   func() time.Time
	hook  func(step string)
	hub   watchHub // the file-system watch its checkers share
}

// StoreOptions tune a Store. A nil *StoreOptions means the defaults.
type StoreOptions struct {
	// Now is the clock for record times; nil means time.Now.
	Now func() time.Time
	// CrashHookUnsafe, when set, is called at each named step of a state
	// change ("stage-copied", "stage-meta-written", "stage-renamed",
	// "signer-added", "signature-written", "record-written",
	// "generation-bumped", "revoke-state-written", "revoke-removed",
	// "revoked-disabled", "revocation-written", and "state-temp-written"
	// and "config-temp-written" when the temp file of state.json or
	// config.json is complete but not yet renamed). Crash tests use it to
	// kill the process there; nothing else should set it.
	CrashHookUnsafe func(step string)
}

// Open returns the store under paths. It creates nothing until the first
// change.
func Open(paths Paths, opts *StoreOptions) *Store {
	s := &Store{paths: paths, now: time.Now, hook: func(string) {}}
	if opts != nil {
		if opts.Now != nil {
			s.now = opts.Now
		}
		if opts.CrashHookUnsafe != nil {
			s.hook = opts.CrashHookUnsafe
		}
	}
	return s
}

// Paths returns the store's paths.
func (s *Store) Paths() Paths { return s.paths }
