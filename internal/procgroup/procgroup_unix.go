//go:build unix

package procgroup

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// Attr is the SysProcAttr that makes a child the leader of a new process
// group, so that the group can be signalled as a whole.
func Attr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// signal sends SIGKILL (kill) or SIGTERM to the group led by pid.
func signal(pid int, kill bool) error {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	err := syscall.Kill(-pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Alive reports whether any process of the group led by pid remains (a
// zombie counts until it is reaped).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(-pid, 0)
	return err == nil || err == syscall.EPERM
}

// Exited reports whether the process pid has exited, even if it is a
// zombie not yet reaped (go-plugin reaps a plugin only once its stdout and
// stderr are closed, which a child holding them can delay).
func Exited(pid int) bool {
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		// pid (comm) state ...; comm may contain spaces and parentheses.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
			return b[i+2] == 'Z' || b[i+2] == 'X'
		}
	}
	return syscall.Kill(pid, 0) == syscall.ESRCH
}
