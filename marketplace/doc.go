// Package marketplace implements berth's catalogs: TUF repositories
// (go-tuf/v2) of static files that list curated plugins, on the curator's
// side (Repository: init, add, status, refresh, sign, lint) and on the
// operator's side (Cache: a verified copy of every catalog added, a full
// TUF update on every refresh, offline search and show), plus what
// installing from a catalog needs: the catalog format, semver resolution,
// downloads checked while they stream, the check of a bundle against its
// catalog entry, the authority diff between versions, and berth.lock.
//
// The package verifies and describes; it never trusts, stages or enables
// a plugin: the caller runs berth's trust pipeline with what it returns.
// A catalog that fails verification is a *VerifyError, which wraps
// trust.ErrUntrusted; a source that cannot be reached wraps ErrNetwork.
// docs/marketplace.md describes the formats, the layouts and every rule.
package marketplace
