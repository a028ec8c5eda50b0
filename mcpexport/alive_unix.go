//go:build unix

package mcpexport

import (
	"errors"
	"syscall"
)

// alive reports whether a process exists (signal 0 checks without
// signalling).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
