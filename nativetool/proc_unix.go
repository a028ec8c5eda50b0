//go:build unix

package nativetool

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// setProcessGroup makes the plugin the leader of a new process group, so
// that the children it starts can be stopped with it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends SIGKILL (kill) or SIGTERM to the process group led by
// pid.
func signalGroup(pid int, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pid, sig)
}

// groupAlive reports whether any process of the group led by pid remains.
func groupAlive(pid int) bool {
	err := syscall.Kill(-pid, 0)
	return err == nil || err == syscall.EPERM
}

// processGone reports whether the process pid has exited, even if it is a
// zombie not yet reaped: go-plugin reaps the plugin only once its stdout
// and stderr are closed, which a child holding them can delay.
func processGone(pid int) bool {
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		// pid (comm) state ...; comm may contain spaces and parentheses.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
			return b[i+2] == 'Z' || b[i+2] == 'X'
		}
	}
	return syscall.Kill(pid, 0) == syscall.ESRCH
}
