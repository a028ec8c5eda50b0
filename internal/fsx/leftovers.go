package fsx

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// TempPrefixes name the temporary directories berth makes in the
// system's temp directory (TMPDIR): a download, an extracted archive, an
// imported bundle, an unsigned entry's bundle, a converted server.json, a
// built-in entry's bundle, and the work directories of an npm or pip
// resolution (berth-npm-* holds the operator's npm settings, auth tokens
// included, while npm runs). A test keeps this list in step with every
// MkdirTemp and CreateTemp of the tree.
// Each command removes its own on every path, an interrupt included;
// only a process killed outright (SIGKILL, a crash) leaves one, which
// berth gc sweeps (SweepTemp).
var TempPrefixes = []string{
	"berth-download-", "berth-extract-", "berth-import-", "berth-registry-", "berth-serverjson-",
	"berth-builtin-", "berth-npm-", "berth-npm-scripts-", "berth-pypi-",
	"berth-push-", "berth-pull-", "berth-mirror-",
}

// TempLeftoverAge is how old a temporary directory must be before berth
// gc takes it for a leftover: a younger one may belong to a command that
// is still running (an install waiting at its prompt, say).
const TempLeftoverAge = time.Hour

// SweepTemp removes the leftovers among dir's entries: a directory (not
// a symbolic link or anything else) whose name starts with one of
// prefixes, owned by this process's user, last modified before cutoff.
// Nothing else is touched: another user's directory of the same name
// (planted in a shared /tmp, say) is left, and the removal never follows
// a symbolic link. It returns what it removed.
func SweepTemp(dir string, prefixes []string, cutoff time.Time) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !hasAnyPrefix(e.Name(), prefixes) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() || !fi.ModTime().Before(cutoff) {
			continue
		}
		if owner, me, ok := Owner(fi); ok && owner != me {
			continue
		}
		if err := removeTree(p); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, p)
	}
	return removed, errors.Join(errs...)
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// removeTree removes dir and what it holds without following symbolic
// links (os.RemoveAll unlinks a link, never its target), making read-only
// directories inside writable first when a first attempt is refused.
func removeTree(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Type()&fs.ModeSymlink == 0 {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
