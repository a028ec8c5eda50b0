//go:build unix

package fsx

import (
	"errors"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// PrivateModes says whether mode bits say who may read and write a file
// here.
const PrivateModes = true

// OpenNoFollow opens path with O_NOFOLLOW (a symbolic link as the last
// component fails with ELOOP) and O_NONBLOCK, so that a FIFO planted in
// its place cannot block the open (the caller then refuses anything but a
// regular file, on which O_NONBLOCK has no effect).
func OpenNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// IsSymlinkRefusal reports whether err is OpenNoFollow refusing a symbolic
// link.
func IsSymlinkRefusal(err error) bool { return errors.Is(err, syscall.ELOOP) }

// Owner returns the owner of fi and the effective user of this process;
// ok is false where files have no Unix owner.
func Owner(fi fs.FileInfo) (owner, me int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), os.Geteuid(), true
}

// UserName is "name (uid N)" when the user database knows the uid, else
// "uid N".
func UserName(uid int) string {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil || u.Username == "" {
		return "uid " + strconv.Itoa(uid)
	}
	return u.Username + " (uid " + strconv.Itoa(uid) + ")"
}

// openNonBlocking opens path for reading with O_NONBLOCK, so that the
// open of a FIFO returns at once instead of waiting for a writer.
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
}
