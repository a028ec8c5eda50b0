package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/internal/fsx"
)

// stage copies a valid bundle into the content-addressed store, under the
// lock, and returns its path. Only record stages for good: a snapshot no
// record names is removed by GC.
func (s *Store) stage(ctx context.Context, b *bundle.Bundle) (string, error) {
	d, err := ParseDigest(b.Digest)
	if err != nil {
		return "", err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := s.stageLocked(ctx, b, d, nil); err != nil {
		return "", err
	}
	return s.paths.Snapshot(d), nil
}

// stageLocked copies the bundle into a temp dir inside the store,
// re-computes the digest of the copy, makes it read-only, records its
// fingerprints and renames it into place. An intact existing snapshot of
// the same digest is reused; a damaged one is replaced. progress, when
// not nil, is told how far the copy has got.
func (s *Store) stageLocked(ctx context.Context, b *bundle.Bundle, digest Digest, progress StageProgress) (reused bool, err error) {
	final := s.paths.Snapshot(digest)
	if _, err := os.Stat(final); err == nil {
		if _, derr := s.checkSnapshot(ctx, digest); derr == nil {
			return true, nil
		}
		// Damaged: move it aside for gc and stage afresh.
		aside := filepath.Join(s.paths.Store(), ".tmp-damaged-"+filepath.Base(final)+"-"+fmt.Sprint(s.now().UnixNano()))
		if err := os.Rename(final, aside); err != nil {
			return false, fmt.Errorf("replacing the damaged snapshot %s: %w", final, err)
		}
	}
	if err := os.MkdirAll(s.paths.Store(), 0o700); err != nil {
		return false, err
	}
	tmp, err := os.MkdirTemp(s.paths.Store(), ".tmp-")
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			atomicfile.RemoveTree(tmp)
		}
	}()
	if err := copyBundle(ctx, b, tmp, progress); err != nil {
		return false, err
	}
	s.hook("stage-copied")
	tree, ps, err := bundle.ReadTree(ctx, tmp, nil)
	if err != nil {
		return false, err
	}
	if len(ps) > 0 || tree.Listing == nil || tree.Listing.Digest() != b.Digest {
		return false, fmt.Errorf("the staged copy of %s does not match the bundle (the source changed while berth copied it?); try again", b.Source)
	}
	if err := makeReadOnly(tmp); err != nil {
		return false, err
	}
	fps, err := fingerprints(ctx, tmp)
	if err != nil {
		return false, err
	}
	meta := &snapshotMeta{Digest: b.Digest, Listing: string(tree.Listing.Bytes()), Files: fps}
	if err := atomicfile.WriteJSON(s.paths.SnapshotMeta(digest), meta, 0o600); err != nil {
		return false, err
	}
	s.hook("stage-meta-written")
	if err := os.Rename(tmp, final); err != nil {
		return false, err
	}
	if err := atomicfile.SyncDir(s.paths.Store()); err != nil {
		return false, err
	}
	s.hook("stage-renamed")
	return false, nil
}

// copyBundle copies the bundle's directories, files and symlinks into dst,
// checking each file's hash against the listing while copying, and tells
// progress (when not nil) how many bytes are copied.
func copyBundle(ctx context.Context, b *bundle.Bundle, dst string, progress StageProgress) error {
	for _, d := range b.Tree.Dirs() {
		if err := os.MkdirAll(filepath.Join(dst, filepath.FromSlash(d)), 0o700); err != nil {
			return err
		}
	}
	var count *copyCount
	if progress != nil {
		count = &copyCount{f: progress}
		for _, e := range b.Listing().Entries {
			if e.Mode != bundle.ModeSymlink {
				count.total += e.Size
			}
		}
		progress(0, count.total)
	}
	buf := make([]byte, 256<<10)
	for _, e := range b.Listing().Entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		to := filepath.Join(dst, filepath.FromSlash(e.Path))
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			return err
		}
		if e.Mode == bundle.ModeSymlink {
			if err := os.Symlink(e.Target, to); err != nil {
				return err
			}
			continue
		}
		perm := os.FileMode(0o600)
		if e.Mode == bundle.ModeExec {
			perm = 0o700
		}
		if err := copyFile(filepath.Join(b.Dir, filepath.FromSlash(e.Path)), to, perm, e, buf, count); err != nil {
			return err
		}
	}
	return nil
}

// copyCount reports the bytes copied of a bundle to a StageProgress.
type copyCount struct {
	f             StageProgress
	copied, total int64
}

func (c *copyCount) Write(p []byte) (int, error) {
	c.copied += int64(len(p))
	c.f(min(c.copied, c.total), c.total)
	return len(p), nil
}

func copyFile(from, to string, perm os.FileMode, e bundle.Entry, buf []byte, count *copyCount) error {
	c := fsx.Copy{Size: e.Size, SHA256: e.SHA256, Perm: perm, Sync: true, Buf: buf}
	if count != nil {
		c.Progress = count
	}
	err := fsx.CopyFile(from, to, c)
	if errors.Is(err, fsx.ErrChanged) {
		return fmt.Errorf("%s changed while berth copied it; make sure nothing writes to the bundle and try again", from)
	}
	return err
}
