// Package bundle reads berth plugin bundles: it decodes the manifest
// (berth.json) strictly, validates the bundle fail-closed, computes its
// canonical listing and digest, and extracts archives safely. It never
// runs anything from a bundle and never reads a secret value; it imports
// nothing else of berth.
//
// # Opening a bundle
//
// A bundle is a directory, a .tar.gz/.tgz or a .zip holding berth.json at
// its root (docs/manifest.md). [Open] reads and validates one and returns
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
// The package keeps no global mutable state; everything in it is safe for
// concurrent use on distinct values.
package bundle
