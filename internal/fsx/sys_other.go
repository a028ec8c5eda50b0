//go:build !unix

package fsx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// PrivateModes is false where mode bits do not say who may read and write
// a file (Windows uses ACLs, which berth does not inspect).
const PrivateModes = false

// OpenNoFollow opens path as os.OpenFile does, but refuses a symbolic link
// by an lstat before the open (there is no O_NOFOLLOW here).
func OpenNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, errSymlink
	}
	return os.OpenFile(path, flag, perm)
}

var errSymlink = fmt.Errorf("a symbolic link")

// IsSymlinkRefusal reports whether err is OpenNoFollow refusing a symbolic
// link.
func IsSymlinkRefusal(err error) bool { return errors.Is(err, errSymlink) }

// Owner cannot tell a file's owner here: ok is false.
func Owner(fs.FileInfo) (owner, me int, ok bool) { return 0, 0, false }

// UserName is the uid.
func UserName(uid int) string { return fmt.Sprint(uid) }

// openNonBlocking is os.Open: there are no FIFOs to block on here.
func openNonBlocking(path string) (*os.File, error) { return os.Open(path) }
