// Package store is berth's on-disk state and its install pipeline: the
// content-addressed snapshots of trusted bundles, the trust records and
// their signatures, state.json (what is enabled where, the pinned tool
// surfaces, and the generation) and config.json (the signer policy and the
// tool policy), all under one root, $BERTH_HOME ([Paths]).
//
// # The install pipeline
//
// [Store.Trust] is the one path from a source to a trusted, staged
// snapshot: it opens and validates the bundle (package bundle), checks a
// pinned digest, verifies the signature offline against the signer policy
// (package trust), reviews the bundle (package review), asks the caller's
// confirmation ([TrustOptions.Confirm]) and then stages an immutable copy
// and writes the trust record last. A record can only come from this path,
// so the signer it names is always one that Trust itself verified. The CLI's
// berth trust and the marketplace's install both run it.
//
// # Layout and safety
//
//	store/sha256/<hex>/                   staged snapshots, read-only
//	store/sha256/<hex>.meta.json          their listing and stat fingerprints
//	trust/<name>/<version>.json           trust records
//	trust/<name>/<version>.sigstore.json  the signature, for offline re-verify
//	state.json                            generation, enablements, pinned surfaces
//	config.json                           signer policy, tool policy
//	roots/<signer>.trusted_root.json      trusted roots of identity signers
//
// Every change takes one file lock and is written atomically (temp file,
// fsync, rename, directory fsync), in an order that leaves the old state or
// the new one at any crash: a snapshot is staged in a temp directory and
// renamed into place, the record is written last, and the generation is
// bumped after it. Snapshot paths are made only from a [Digest], which only
// [ParseDigest] makes, so a damaged file cannot name a path outside the
// store.
//
// # Generation and drift
//
// Every change bumps the generation in state.json; a [GenerationWatch]
// notices a moved generation through a file-system watch of state.json and
// config.json (no syscall while nothing changed), with a stat once a
// second and whenever the watch is not available. A [DriftChecker] guards one
// staged snapshot: a file-system watch and stat fingerprints on the fast
// path, a full re-hash when they differ; a difference is a [*DriftError]
// wrapping [ErrDrift].
//
// A Store is safe for concurrent use by goroutines and by processes. The
// package's one global is a counter of the state writes this process made,
// so that its generation watches see them without waiting for the
// file-system event.
package store
