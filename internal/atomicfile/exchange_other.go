//go:build !linux

package atomicfile

import "os"

// Exchange swaps the entries a and b of the directory dir in one step
// where the system can; here it cannot, and says so with an error
// wrapping errors.ErrUnsupported.
func Exchange(dir *os.File, a, b string) error {
	return &os.LinkError{Op: "exchange", Old: a, New: b, Err: errUnsupported{nil}}
}
