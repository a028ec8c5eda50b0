// Package bundle reads berth plugin bundles: it decodes the manifest
// (berth.json) strictly, validates the bundle fail-closed, computes its
// canonical listing and digest, and extracts archives safely. It never
// runs anything from a bundle and never reads a secret value; of berth it
// imports only bundle/runtimefetch, the rules of stdio commands that fetch
// a package when they start.
//
// # Opening a bundle
//
// A bundle is a directory, a .tar.gz/.tgz or a .zip holding berth.json at
// its root (docs/manifest.md), or a source of another tool's format that
// a registered [Format] converts (see below). [Open] reads and validates one and returns
// either a valid [*Bundle] or an error: an invalid bundle is an
// [*InvalidError] listing every [*Problem] at once, each with its location
// and a stable rule ID ([Rules], docs/rules.md), and errors.Is(err,
// [ErrInvalidBundle]) is true. [Load] returns the problems separately and
// keeps an invalid bundle, so that its digest can still be shown.
//
// Reading is bounded by [Limits] (total size, number of entries, path
// length). A problem that a cap caused names the cap in [Problem.Limit].
//
// # Listing and digest
//
// The canonical listing ([Listing]) of a tree has one line per file,
// sorted by path bytes: "<mode> <sha256-hex> <size> <path>", with mode
// 100644, 100755 or 120000 (a symlink, hashed as its target string). The
// bundle digest is "sha256:" + the hex SHA-256 of the listing ([DigestOf]).
// A directory and an archive of the same tree have the same digest; an
// exec bit changes it. The listing is what a signature signs.
//
// # Archives
//
// [Extract] unpacks an archive into an empty directory and never writes
// outside it: absolute paths, "..", hard links, devices and duplicate
// entries are problems, symlinks are created after every file, and sizes
// are counted while streaming, so a zip bomb stops at the cap.
//
// # Other formats
//
// [Load] reads a source of another tool's format (an MCP Bundle, a Claude
// Code plugin, an MCP Registry server.json) through the [Format]s
// registered with [RegisterFormat]: it recognizes the format by its
// manifest, lets the Format convert it into a berth.json written beside
// the source's files, validates that tree like any other, and locates each
// problem at the source's file and field ([Import] says what was read).
// This package knows no format itself; package bundle/importer defines
// the three, and importing package bundle/formats registers them:
//
//	import _ "github.com/berth-mcp/berth/bundle/formats"
//
// Without it, Load reads berth bundles only.
//
// The package keeps no global mutable state but the format registry,
// which is written at init; everything in it is safe for concurrent use on
// distinct values.
package bundle
