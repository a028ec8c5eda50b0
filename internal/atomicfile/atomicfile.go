// Package atomicfile writes files so that a crash at any point leaves the
// old content or the new one, never a torn file, and removes trees that
// berth made read-only. It is berth's one implementation of these steps:
// every state file, approval, trust record, client configuration and
// signature goes through it.
//
// A replacement is a temp file in the destination's directory (so the
// rename cannot cross file systems), written, fsynced and closed, renamed
// over the destination (os.Rename replaces atomically on every platform
// berth runs on), then the directory is fsynced so the rename survives a
// power cut.
package atomicfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// DefaultTempTag is what a temp file's name has between the destination's
// name and its random suffix: ".<name>.tmp-<random>".
const DefaultTempTag = ".tmp-"

// Options tune Create. A nil *Options means the defaults.
type Options struct {
	// TempTag replaces DefaultTempTag in the temp file's name.
	TempTag string
}

// File is a temp file that replaces its destination only at Replace.
// Write it through the embedded *os.File, then Close (which syncs it),
// then Replace; defer Abort to remove it on every other path. A File is
// not safe for concurrent use.
type File struct {
	*os.File
	dest     string
	closed   bool
	replaced bool
}

// Create makes the temp file for dest, with mode perm (the umask does not
// apply), in dest's directory, which must exist.
func Create(dest string, perm fs.FileMode, opts *Options) (*File, error) {
	tag := DefaultTempTag
	if opts != nil && opts.TempTag != "" {
		tag = opts.TempTag
	}
	f, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+tag+"*")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &File{File: f, dest: dest}, nil
}

// Close syncs and closes the temp file. The destination is unchanged
// until Replace.
func (f *File) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	err := f.File.Sync()
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}

// Replace closes the temp file (see Close) and renames it over the
// destination. It does not sync the directory: call SyncDir for that,
// once after several changes of one directory if need be.
func (f *File) Replace() error {
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), f.dest); err != nil {
		return err
	}
	f.replaced = true
	return nil
}

// Abort closes and removes the temp file unless Replace succeeded. It is
// safe to call at any time and more than once.
func (f *File) Abort() {
	if f.replaced {
		return
	}
	if !f.closed {
		f.closed = true
		f.File.Close()
	}
	os.Remove(f.Name())
}

// WriteFile replaces path with data, mode perm: parent directories are
// created with mode 0700, then a temp file is written, synced and renamed
// over path, and the directory is synced.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := ReplaceFile(path, data, perm); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// ReplaceFile is WriteFile for a directory that exists, without the
// directory sync: for a caller that syncs it itself (SyncDir), after
// several changes or at the moment it chooses.
func ReplaceFile(path string, data []byte, perm fs.FileMode) error {
	f, err := Create(path, perm, nil)
	if err == nil {
		defer f.Abort()
		if _, err = f.Write(data); err == nil {
			err = f.Replace()
		}
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// WriteJSON is WriteFile of v as indented JSON with a final newline.
func WriteJSON(path string, v any, perm fs.FileMode) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteFile(path, append(data, '\n'), perm)
}

// WriteNew creates path, which must not exist (the error then wraps
// fs.ErrExist), with mode perm and data, and syncs it. A file it could
// not complete is removed. The directory is not synced. Errors name the
// step and the path.
func WriteNew(path string, data []byte, perm fs.FileMode) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("closing %s: %w", path, cerr)
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	// The umask may have cleared bits of perm.
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("setting the mode of %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", path, err)
	}
	return nil
}

// SyncDir fsyncs a directory, so that the renames and removals in it
// survive a crash. A platform that cannot sync directories is not an
// error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// RemoveTree removes dir and everything in it, even where directories
// were made read-only (a staged snapshot, an extracted archive). A
// missing dir is not an error.
func RemoveTree(dir string) error {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
