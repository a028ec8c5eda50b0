//go:build unix

package clientconfig

import (
	"io/fs"
	"os"
	"syscall"
)

// keepOwner gives f the owner of the file described by fi, so that an
// edit run with sudo does not hand the user's file to root. Best effort.
func keepOwner(f *os.File, fi fs.FileInfo) {
	if fi == nil {
		return
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || (int(st.Uid) == os.Geteuid() && int(st.Gid) == os.Getegid()) {
		return
	}
	_ = f.Chown(int(st.Uid), int(st.Gid))
}
