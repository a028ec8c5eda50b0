package fsx

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrReadChanged is a file that changed while it was read: between the
// look at it and the open, or while its bytes were read.
var ErrReadChanged = errors.New("changed while being read")

// ReadIn reads the regular file rel (slash-separated) of the tree at dir,
// of at most max bytes (one more is read, so the caller can tell it is too
// large). rel is resolved inside dir only (os.Root): a symlink on the way
// that leads out of the tree is an error, so a reader of a bundle never
// reads a file outside it. rel itself may not be a symlink; a file
// replaced between the look and the open is ErrReadChanged.
func ReadIn(dir, rel string, max int64) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	name := filepath.FromSlash(rel)
	fi, err := root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !os.SameFile(fi, st) {
		return nil, fmt.Errorf("%s: %w", rel, ErrReadChanged)
	}
	return io.ReadAll(io.LimitReader(f, max+1))
}

// LstatIn is os.Lstat of rel (slash-separated) inside the tree at dir,
// resolved as ReadIn resolves it: a path that leads out of the tree
// through a symlink is an error.
func LstatIn(dir, rel string) (fs.FileInfo, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.Lstat(filepath.FromSlash(rel))
}

// ExistsIn reports whether rel names something inside the tree at dir
// (LstatIn finds it).
func ExistsIn(dir, rel string) bool {
	_, err := LstatIn(dir, rel)
	return err == nil
}
