//go:build unix

package store

import (
	"io/fs"
	"syscall"
)

func sysFingerprint(fi fs.FileInfo, f *Fingerprint) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		f.Ino = uint64(st.Ino)
		f.Dev = uint64(st.Dev)
		f.Ctime = ctimeNs(st)
	}
}
