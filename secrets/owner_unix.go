//go:build unix

package secrets

import (
	"io/fs"
	"os"
	"syscall"
)

// privateModes reports that file modes can say who may read a file.
const privateModes = true

// ownerOf reports whether fi belongs to the user berth runs as.
func ownerOf(fi fs.FileInfo) (mine, known bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false, false
	}
	return int(st.Uid) == os.Geteuid(), true
}
