package atomicfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// Exchange swaps the entries a and b of the directory dir in one step
// (renameat2 with RENAME_EXCHANGE): a reader, or a crash, sees either
// both as they were or both swapped, never one missing. It fails with an
// error wrapping errors.ErrUnsupported where the file system cannot.
func Exchange(dir *os.File, a, b string) error {
	fd := int(dir.Fd())
	err := unix.Renameat2(fd, a, fd, b, unix.RENAME_EXCHANGE)
	if err == unix.EINVAL || err == unix.ENOSYS {
		return &os.LinkError{Op: "exchange", Old: a, New: b, Err: errUnsupported{err}}
	}
	if err != nil {
		return &os.LinkError{Op: "exchange", Old: a, New: b, Err: err}
	}
	return nil
}
