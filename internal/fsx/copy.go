package fsx

import (
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
)

// ErrChanged is a copy whose source was not the file expected: not a
// regular file (a symbolic link among others), or not of the size and
// SHA-256 sum given.
var ErrChanged = errors.New("changed while being copied")

// Copy says how CopyFile copies.
type Copy struct {
	// Size and SHA256 are what the source must be.
	Size   int64
	SHA256 [32]byte
	// Perm is the new file's mode.
	Perm fs.FileMode
	// Sync makes the copy durable (fsync) before it is closed.
	Sync bool
	// Buf, when not nil, is the buffer to copy through.
	Buf []byte
	// Progress, when not nil, also receives every byte copied.
	Progress io.Writer
}

// CopyFile copies the file from into a new file to (which must not exist)
// while hashing it, and returns ErrChanged if from is not a regular file
// (it never follows a symbolic link) of c.Size bytes with the sum
// c.SHA256. For a symbolic link the error also says what the open said
// (its message is OpenNoFollow's error, and IsSymlinkRefusal holds). The new file is left in place on error; the caller removes
// what it was writing into.
func CopyFile(from, to string, c Copy) error {
	in, err := OpenNoFollow(from, os.O_RDONLY, 0)
	if IsSymlinkRefusal(err) {
		return symlinkRefusal{err}
	}
	if err != nil {
		return err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil {
		return err
	} else if !fi.Mode().IsRegular() {
		return ErrChanged
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, c.Perm)
	if err != nil {
		return err
	}
	h := sha256.New()
	w := io.MultiWriter(out, h)
	if c.Progress != nil {
		w = io.MultiWriter(out, h, c.Progress)
	}
	n, err := io.CopyBuffer(w, io.LimitReader(in, c.Size+1), c.Buf)
	if err == nil && c.Sync {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if n != c.Size || [32]byte(h.Sum(nil)) != c.SHA256 {
		return ErrChanged
	}
	return nil
}

// symlinkRefusal is CopyFile's ErrChanged for a symbolic link: it reads as
// the open's own error.
type symlinkRefusal struct{ err error }

func (e symlinkRefusal) Error() string        { return e.err.Error() }
func (e symlinkRefusal) Unwrap() error        { return e.err }
func (e symlinkRefusal) Is(target error) bool { return target == ErrChanged }
