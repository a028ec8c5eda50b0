package clientconfig

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/internal/fsx"
)

// Apply writes the prepared change. Unchanged and Absent write nothing.
// Otherwise an existing file is first copied into Options.BackupDir (see
// BackupDirFor; mode 0600, the last KeepBackups copies per file kept), then
// replaced atomically: a temp file in the same directory,
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
	// Again at the time of writing: the workspace's links may have
	// changed since Prepare.
	if err := checkInWorkspace(ed.Target); err != nil {
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
		if ed.opts.BackupDir == "" {
			panic("clientconfig: Options.BackupDir is required to replace a file")
		}
		b, err := writeBackup(ed.opts.BackupDir, ed.path, ed.old, ed.opts.Now().UTC().Format("20060102T150405Z"))
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
	f, err := fsx.OpenRegular(ed.path)
	if errors.Is(err, fs.ErrNotExist) {
		if ed.existed {
			return changed()
		}
		return nil
	}
	if nr := (*fsx.NotRegularError)(nil); errors.As(err, &nr) {
		return notRegular(ed.Target.Path, nr)
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

// KeepBackups is how many backups of one file Apply keeps.
const KeepBackups = 5

// BackupDirFor is the directory under root that holds the backups of the
// file path: its name and a hash of its whole path, so two files of the
// same name never share one. Its file "source" names path.
func BackupDirFor(root, path string) string {
	sum := sha256.Sum256([]byte(path))
	return filepath.Join(root, filepath.Base(path)+"-"+hex.EncodeToString(sum[:6]))
}

var backupName = regexp.MustCompile(`\.\d{8}T\d{6}Z(-\d+)?$`)

// writeBackup copies old, the content of path, to
// BackupDirFor(root, path)/<name>.<stamp> (then -2, -3, ... when taken),
// mode 0600, and removes all but the last KeepBackups backups of path.
func writeBackup(root, path string, old []byte, stamp string) (string, error) {
	dir := BackupDirFor(root, path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	src := filepath.Join(dir, "source")
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		_ = atomicfile.WriteNew(src, []byte(path+"\n"), 0o600)
	}
	base := filepath.Join(dir, filepath.Base(path)+"."+stamp)
	var name string
	for i := nextSuffix(dir, filepath.Base(base)); ; i++ {
		if i > 100 {
			return "", fmt.Errorf("too many backups named %s* (100 in one second); berth keeps %d per file: remove the extra ones in %s", base, KeepBackups, dir)
		}
		name = base
		if i > 1 {
			name += fmt.Sprintf("-%d", i)
		}
		err := atomicfile.WriteNew(name, old, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		break
	}
	_ = atomicfile.SyncDir(dir)
	pruneBackups(dir, filepath.Base(path))
	return name, nil
}

// nextSuffix is the -N to try first for a backup named base in dir: one
// after the highest there. A name pruning freed is never reused, or the
// newest backup would sort as the oldest and be pruned at once.
func nextSuffix(dir, base string) int {
	next := 1
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), base)
		if !ok {
			continue
		}
		n := 1
		if rest != "" {
			d, ok := strings.CutPrefix(rest, "-")
			var err error
			if n, err = strconv.Atoi(d); !ok || err != nil {
				continue
			}
		}
		next = max(next, n+1)
	}
	return next
}

// pruneBackups removes all but the newest KeepBackups backups in dir of
// the file named base. Best effort: a backup it cannot remove stays.
func pruneBackups(dir, base string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type backup struct {
		name string
		mod  time.Time
	}
	var bs []backup
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(n, base+".") || !backupName.MatchString(n) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		bs = append(bs, backup{n, fi.ModTime()})
	}
	// Newest first: by the stamp in the name, then by -N, then by time.
	sort.Slice(bs, func(i, j int) bool {
		si, sj := backupStamp(bs[i].name), backupStamp(bs[j].name)
		if si != sj {
			return si > sj
		}
		return bs[i].mod.After(bs[j].mod)
	})
	for _, b := range bs[min(len(bs), KeepBackups):] {
		os.Remove(filepath.Join(dir, b.name))
	}
}

// backupStamp orders backup names: the UTC stamp, then the -N suffix
// zero-padded.
func backupStamp(name string) string {
	m := backupName.FindString(name)
	stamp, n, _ := strings.Cut(strings.TrimPrefix(m, "."), "-")
	if n == "" {
		n = "0"
	}
	return stamp + fmt.Sprintf("%06s", n)
}
