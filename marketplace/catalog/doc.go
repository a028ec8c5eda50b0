// Package catalog is berth's catalog format, which the curator's
// repository (marketplace/repo), the operator's cache (marketplace) and
// the lock (marketplace/lock) all read: the types of catalog.json
// (Catalog, Plugin, Version, Signer) and of a version's review summary
// (Summary), the lenient parser (Parse: a malformed entry is a Problem
// and skipped, the rest list), and the rules of an entry (CheckPlugin,
// ValidTag). It reads no file and talks to no network.
// docs/marketplace.md describes the format and every rule.
package catalog
