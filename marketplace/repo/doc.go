// Package repo is the curator's side of a berth catalog: a TUF
// repository of static files (go-tuf/v2) with its role keys kept outside
// what is served. Init makes one, Open opens it, and Repository adds
// signed bundles (Add: validate, verify the signature against the
// curator's signer policy, pack and check the archive, publish), sets
// statuses, refreshes expiring metadata, signs the hand-edited working
// copy and lints the whole. docs/marketplace.md describes the layout.
package repo
