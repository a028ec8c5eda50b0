// Package fsx holds berth's file-system plumbing: the checks that a file
// or directory is the user's own and private, opens that never follow a
// symbolic link, a file lock taken with a context, a bounded read, and a
// copy that hashes what it copies.
package fsx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// UnsafePathError refuses a file or directory of berth's state that is not
// the operator's alone: owned by another user, writable by group or others,
// or a symbolic link where berth never follows one. It says how to fix it,
// as ssh does for ~/.ssh.
type UnsafePathError struct {
	Path    string
	Problem string
	Fix     string
}

func (e *UnsafePathError) Error() string {
	return fmt.Sprintf("berth refuses to use %s: %s, so another user could change or read berth's state through it; %s", e.Path, e.Problem, e.Fix)
}

// CheckPrivate checks that path is the operator's alone: owned by the user
// berth runs as, not writable by group or others, a directory if dir is
// set and a regular file if not; a missing path passes. follow says whether
// the path itself may be a symbolic link (it is then checked where it
// leads). A problem is an *UnsafePathError that says how to fix it.
func CheckPrivate(path string, dir, follow bool) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if !follow {
			target, _ := os.Readlink(path)
			return &UnsafePathError{Path: path, Problem: fmt.Sprintf("it is a symbolic link (to %s), and berth never follows one there", target),
				Fix: fmt.Sprintf("remove the link (rm %s) and run berth again; berth creates what it needs", ShellQuote(path))}
		}
		if fi, err = os.Stat(path); err != nil {
			return err
		}
	}
	return CheckInfo(path, fi, dir)
}

// CheckInfo checks the owner, type and mode of an opened or stat'ed path
// as CheckPrivate does.
func CheckInfo(path string, fi fs.FileInfo, dir bool) error {
	switch {
	case dir && !fi.IsDir():
		return &UnsafePathError{Path: path, Problem: "it is not a directory", Fix: fmt.Sprintf("move it away (mv %s %s.old) and run berth again", ShellQuote(path), ShellQuote(path))}
	case !dir && !fi.Mode().IsRegular():
		return &UnsafePathError{Path: path, Problem: "it is not a regular file", Fix: fmt.Sprintf("move it away (mv %s %s.old) and run berth again", ShellQuote(path), ShellQuote(path))}
	}
	if owner, me, ok := Owner(fi); ok && owner != me {
		return &UnsafePathError{Path: path, Problem: fmt.Sprintf("it belongs to user %s, not to the user berth runs as (%s)", UserName(owner), UserName(me)),
			Fix: fmt.Sprintf("give it to yourself (as root: chown -R %d %s) or set BERTH_HOME to a directory of your own", me, ShellQuote(path))}
	}
	if m := fi.Mode().Perm(); PrivateModes && m&0o022 != 0 {
		want := "600"
		if dir {
			want = "700"
		}
		return &UnsafePathError{Path: path, Problem: fmt.Sprintf("it is writable by %s (mode %04o)", writers(m), m),
			Fix: fmt.Sprintf("make it yours alone: chmod %s %s", want, ShellQuote(path))}
	}
	return nil
}

func writers(m fs.FileMode) string {
	switch {
	case m&0o020 != 0 && m&0o002 != 0:
		return "group and others"
	case m&0o020 != 0:
		return "its group"
	}
	return "others"
}

// EnsurePrivateDir creates dir with mode 0700 when it is missing (its
// parents too) and checks that it is the operator's alone: not a symbolic
// link, owned by the user berth runs as, not writable by group or others.
func EnsurePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return CheckPrivate(dir, true, false)
}

// OpenPrivateAppend opens a log for appending (audit.log, a server's
// log), creating it with mode 0600 in a private directory
// (EnsurePrivateDir). It never follows a symbolic link, and refuses a file
// that is not regular, belongs to another user, or is writable by group or
// others, with an *UnsafePathError.
func OpenPrivateAppend(path string) (*os.File, error) {
	if err := EnsurePrivateDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	return openChecked(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
}

// OpenPrivate opens a file of berth's state for reading without
// following a symbolic link, and refuses it unless it is a regular file of
// the user berth runs as that group and others cannot write.
func OpenPrivate(path string) (*os.File, error) { return openChecked(path, os.O_RDONLY, 0) }

// openChecked opens path with OpenNoFollow and refuses what checkOpened
// refuses.
func openChecked(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := OpenNoFollow(path, flag, perm)
	if err != nil {
		return nil, noFollowError(path, err)
	}
	if err := checkOpened(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadPrivateFile reads at most limit bytes of a file with OpenPrivate; a
// longer file is a *TooLargeError.
func ReadPrivateFile(path string, limit int64) ([]byte, error) {
	f, err := OpenPrivate(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, limit)
}

func checkOpened(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return CheckInfo(path, fi, false)
}

// noFollowError words the error of an open that refused a symbolic link;
// other errors (a missing file: fs.ErrNotExist) pass unchanged.
func noFollowError(path string, err error) error {
	if IsSymlinkRefusal(err) {
		target, _ := os.Readlink(path)
		return &UnsafePathError{Path: path, Problem: fmt.Sprintf("it is a symbolic link (to %s), and berth never follows one there", target),
			Fix: fmt.Sprintf("remove the link (rm %s) and run berth again; berth creates what it needs", ShellQuote(path))}
	}
	return err
}

// ShellQuote quotes a path for a command a person may paste.
func ShellQuote(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '/' || r == '.' || r == '_' || r == '-' || r == '+' || r == ':') {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
