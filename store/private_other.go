//go:build !unix

package store

import (
	"fmt"
	"io/fs"
	"os"
)

// privateModes is false where mode bits do not describe who may write a
// file (Windows uses ACLs, which berth does not inspect).
const privateModes = false

func openNoFollow(path string) (*os.File, error) { return openFileNoFollow(path, os.O_RDONLY, 0) }

// openFileNoFollow refuses a symbolic link by an lstat before the open
// (Windows has no O_NOFOLLOW).
func openFileNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, errSymlink
	}
	return os.OpenFile(path, flag, perm)
}

var errSymlink = fmt.Errorf("a symbolic link")

func isSymlinkRefusal(err error) bool { return err == errSymlink }

func ownerOf(fs.FileInfo) (owner, me int, ok bool) { return 0, 0, false }

func userName(uid int) string { return fmt.Sprint(uid) }
