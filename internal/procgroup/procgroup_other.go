//go:build !unix

package procgroup

import (
	"os"
	"syscall"
)

// Attr is nil: without process groups a child is signalled alone.
func Attr() *syscall.SysProcAttr { return nil }

// signal kills the process itself: there is no group, and no SIGTERM.
func signal(pid int, _ bool) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	p.Kill()
	return nil
}

// Alive is false: a group cannot be asked for.
func Alive(int) bool { return false }

// Exited is false: the caller learns it from Wait.
func Exited(int) bool { return false }
