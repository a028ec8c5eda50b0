package clientconfig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/berth-mcp/berth/internal/atomicfile"
)

// Apply writes the prepared change. Unchanged and Absent write nothing.
// Otherwise an existing file is first copied to <file>.bak-<UTC time> (same
// mode), then replaced atomically: a temp file in the same directory,
// fsync, rename, fsync of the directory. The new file keeps the old one's
// mode (and owner, where the platform allows); a new file is 0600 for a
// user file and 0644 for a project file, in new directories made 0700 and
// 0755 respectively. If the file changed after Prepare read it, Apply
// writes nothing and returns an error wrapping ErrChanged.
//
// Apply must be called at most once.
func (ed *Edit) Apply(ctx context.Context) error {
	if ed.applied {
		panic("clientconfig: Edit.Apply called twice")
	}
	ed.applied = true
	if ed.data == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := filepath.Dir(ed.path)
	mode := ed.mode
	if !ed.existed {
		dirMode := fs.FileMode(0o755)
		mode = 0o644
		if ed.Target.User {
			dirMode, mode = 0o700, 0o600
		}
		if err := os.MkdirAll(dir, dirMode); err != nil {
			return fmt.Errorf("cannot create the folder of %s: %w", ed.Target.Path, err)
		}
	}
	f, err := atomicfile.Create(ed.path, mode, &atomicfile.Options{TempTag: ".berth-"})
	if err == nil {
		defer f.Abort() // a no-op once replaced
		if _, err = f.Write(ed.data); err == nil {
			keepOwner(f.File, ed.info)
			err = f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("cannot write %s: %w; nothing was changed", ed.Target.Path, err)
	}
	if err := ed.checkUnchanged(); err != nil {
		return err
	}
	if ed.existed {
		b, err := writeBackup(ed.path, ed.old, mode, ed.info, ed.opts.Now().UTC().Format("20060102T150405Z"))
		if err != nil {
			return fmt.Errorf("cannot back up %s: %w; nothing was changed", ed.Target.Path, err)
		}
		ed.Backup = b
	}
	if err := f.Replace(); err != nil {
		return fmt.Errorf("cannot replace %s: %w; nothing was changed", ed.Target.Path, err)
	}
	ed.Written = true
	_ = atomicfile.SyncDir(dir) // the rename is done; a failed directory sync only weakens durability
	return nil
}

// checkUnchanged reports ErrChanged when the file is no longer what
// Prepare read: another program (usually the client) wrote it meanwhile.
func (ed *Edit) checkUnchanged() error {
	changed := func() error {
		return fmt.Errorf("%s changed while berth was editing it (is %s running?): %w; nothing was written: quit %s and run berth again",
			ed.Target.Path, ed.Target.Client.Title(), ErrChanged, ed.Target.Client.Title())
	}
	f, err := os.Open(ed.path)
	if errors.Is(err, fs.ErrNotExist) {
		if ed.existed {
			return changed()
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", ed.Target.Path, err)
	}
	defer f.Close()
	if !ed.existed {
		return changed()
	}
	now, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", ed.Target.Path, err)
	}
	if !bytes.Equal(now, ed.old) {
		return changed()
	}
	return nil
}

// writeBackup copies old to path.bak-<stamp> (then -2, -3, ... when taken).
func writeBackup(path string, old []byte, mode fs.FileMode, owner fs.FileInfo, stamp string) (string, error) {
	for i := 1; i <= 100; i++ {
		name := path + ".bak-" + stamp
		if i > 1 {
			name += fmt.Sprintf("-%d", i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(old)
		if err == nil {
			err = f.Chmod(mode)
		}
		if err == nil {
			keepOwner(f, owner)
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
			return "", err
		}
		return name, nil
	}
	return "", fmt.Errorf("too many backups named %s.bak-%s*", path, stamp)
}
