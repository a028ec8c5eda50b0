//go:build unix

package mcpexport

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ownedByMe refuses a file another user owns: they could replace its
// token at will.
func ownedByMe(fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("is owned by uid %d, not by you (uid %d)", st.Uid, uid)
	}
	return nil
}
