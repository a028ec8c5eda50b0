//go:build !unix

package pool

import (
	"os"
	"syscall"
)

// procAttr: without process groups, berth signals the child alone.
func procAttr() *syscall.SysProcAttr { return nil }

func signalGroup(pid int, sig syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	p.Kill()
	return nil
}

const (
	sigTerm = syscall.Signal(15)
	sigKill = syscall.Signal(9)
)
