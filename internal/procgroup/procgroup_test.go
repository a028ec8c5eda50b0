//go:build unix

package procgroup

import (
	"os/exec"
	"testing"
	"time"
)

// start runs script in sh as the leader of a new group.
func start(t *testing.T, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = Attr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Kill(cmd.Process.Pid); cmd.Wait() })
	return cmd
}

// TestTerminateStopsTheGroup: a group whose leader and child both ignore
// SIGTERM is gone after Terminate, by SIGKILL after the grace period.
func TestTerminateStopsTheGroup(t *testing.T) {
	cmd := start(t, `trap "" TERM; sleep 60 & wait`)
	pid := cmd.Process.Pid
	waited := make(chan struct{})
	go func() { cmd.Wait(); close(waited) }()
	time.Sleep(100 * time.Millisecond) // let sh start its child
	if !Alive(pid) {
		t.Fatal("the group is not alive after start")
	}
	begin := time.Now()
	Terminate(pid, 200*time.Millisecond, func(d time.Duration) bool { return WaitGone(pid, d) })
	if took := time.Since(begin); took < 200*time.Millisecond {
		t.Fatalf("Terminate returned after %v, before the grace period", took)
	}
	<-waited
	if !WaitGone(pid, 2*time.Second) {
		t.Fatal("the group outlived Terminate")
	}
	if !Exited(pid) {
		t.Fatal("Exited is false for a reaped process")
	}
}

// TestTerminateGraceful: a group that exits on SIGTERM is not waited for.
func TestTerminateGraceful(t *testing.T) {
	cmd := start(t, `sleep 60`)
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	gone := func(d time.Duration) bool {
		select {
		case <-exited:
			return true
		case <-time.After(d):
			return false
		}
	}
	begin := time.Now()
	Terminate(pid, 10*time.Second, gone)
	if took := time.Since(begin); took > 5*time.Second {
		t.Fatalf("Terminate waited %v for a process that exits on SIGTERM", took)
	}
	if err := Kill(pid); err != nil {
		t.Fatalf("Kill of a gone group: %v", err)
	}
}
