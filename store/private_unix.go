//go:build unix

package store

import (
	"errors"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// privateModes says whether mode bits mean what they say for privacy
// here.
const privateModes = true

func openNoFollow(path string) (*os.File, error) {
	return openFileNoFollow(path, os.O_RDONLY, 0)
}

// openFileNoFollow opens path with O_NOFOLLOW (a symbolic link as the last
// component fails with ELOOP) and O_NONBLOCK, so that a FIFO planted in
// its place cannot block the open (the caller then refuses anything but a
// regular file, on which O_NONBLOCK has no effect).
func openFileNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func isSymlinkRefusal(err error) bool { return errors.Is(err, syscall.ELOOP) }

// ownerOf returns the owner of fi and the effective user of this process.
func ownerOf(fi fs.FileInfo) (owner, me int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), os.Geteuid(), true
}

// userName is "name (uid N)" when the user database knows the uid.
func userName(uid int) string {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil || u.Username == "" {
		return "uid " + strconv.Itoa(uid)
	}
	return u.Username + " (uid " + strconv.Itoa(uid) + ")"
}
