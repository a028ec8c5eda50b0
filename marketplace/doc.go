// Package marketplace is the operator's side of berth's catalogs: a cache
// of verified copies of TUF repositories (go-tuf/v2) of static files that
// list curated plugins. Cache adds a catalog pinned by its first root,
// runs a full TUF update on every refresh, and answers search and show
// offline; it also lists the read-only, unsigned sources (an MCP
// Registry, a Claude Code marketplace.json) whose formats
// marketplace/foreign reads. Around the cache is what installing from a
// catalog needs: semver resolution, downloads checked while they stream,
// the check of a bundle against its catalog entry's review summary, the
// authority diff between versions, install (Cache.Install) and the
// statuses of a refresh applied to what is trusted (Cache.ApplyStatus).
//
// The catalog format is marketplace/catalog, the curator's repository
// marketplace/repo, and berth.lock (with the checks of sync and
// outdated) marketplace/lock.
//
// The package verifies and describes; it never trusts, stages or enables
// a plugin: Install runs berth's trust pipeline (store.Store.Trust) with
// what it verified. A catalog that fails verification is a *VerifyError,
// which wraps trust.ErrUntrusted; a source that cannot be reached wraps
// ErrNetwork. docs/marketplace.md describes the formats, the layouts and
// every rule.
package marketplace
