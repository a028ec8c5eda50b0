//go:build !unix

package cli

import "os"

// crash ends this process at once, without cleanup.
func crash() {
	p, _ := os.FindProcess(os.Getpid())
	p.Kill()
}
