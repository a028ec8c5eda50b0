//go:build !unix

package mcpexport

import "os"

// alive reports whether a process exists; on these systems FindProcess
// fails for a process that is gone.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	_, err := os.FindProcess(pid)
	return err == nil
}
