// Package procgroup starts child processes in their own process group and
// stops the group as a whole: a wrapper (sh -c, npx, a plugin) and every
// process it started. It is berth's one implementation of that, for the
// stdio servers of package pool and the native tool providers of package
// nativetool.
//
// The order of a graceful stop is the caller's first step (close the
// child's stdin, or go-plugin's shutdown), then [Terminate]: SIGTERM to the
// group, a grace period, SIGKILL to the group. Where the platform has no
// process groups (Windows), only the process itself is killed.
package procgroup

import "time"

// Terminate stops the group led by pid: SIGTERM, then up to grace for
// gone to report the process gone, then SIGKILL (also when it went, for
// what it left behind in the group). gone waits at most the duration it is
// given; WaitGone is one.
func Terminate(pid int, grace time.Duration, gone func(time.Duration) bool) {
	if pid <= 0 {
		return
	}
	signal(pid, false)
	gone(grace)
	Kill(pid)
}

// WaitGone waits up to d for every process of the group led by pid to be
// gone, and reports whether they are.
func WaitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for Alive(pid) {
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Kill sends SIGKILL to the group led by pid. A group that is already gone
// is not an error.
func Kill(pid int) error {
	if pid <= 0 {
		return nil
	}
	return signal(pid, true)
}
