package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// UnsafePathError refuses a part of the state directory that is not the
// operator's alone: owned by another user, writable by group or others,
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

// CheckPrivate checks that the state directory is the operator's alone:
// the root ($BERTH_HOME), approvals/, logs/, audit.log, state.json and
// config.json, where they exist, must belong to the user berth runs as and
// not be writable by group or others; approvals/, logs/ and the files
// must not be symbolic links (the root may be one, to a directory that
// passes). A problem is an *UnsafePathError that says how to fix it.
// Every berth command that uses the state, and pool.Open, check this
// first.
func (p Paths) CheckPrivate() error {
	if err := checkOwned(p.Root, true, true); err != nil {
		return err
	}
	for _, dir := range []string{p.Approvals(), p.Logs()} {
		if err := checkOwned(dir, true, false); err != nil {
			return err
		}
	}
	for _, f := range []string{p.Audit(), p.State(), p.Config()} {
		if err := checkOwned(f, false, false); err != nil {
			return err
		}
	}
	return nil
}

// checkOwned checks one path; a missing path passes. follow says whether
// the path itself may be a symbolic link (it is then checked where it
// leads).
func checkOwned(path string, dir, follow bool) error {
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
				Fix: fmt.Sprintf("remove the link (rm %s) and run berth again; berth creates what it needs", shellQuote(path))}
		}
		if fi, err = os.Stat(path); err != nil {
			return err
		}
	}
	return checkInfo(path, fi, dir)
}

// checkInfo checks the owner and mode of an opened or stat'ed path.
func checkInfo(path string, fi fs.FileInfo, dir bool) error {
	switch {
	case dir && !fi.IsDir():
		return &UnsafePathError{Path: path, Problem: "it is not a directory", Fix: fmt.Sprintf("move it away (mv %s %s.old) and run berth again", shellQuote(path), shellQuote(path))}
	case !dir && !fi.Mode().IsRegular():
		return &UnsafePathError{Path: path, Problem: "it is not a regular file", Fix: fmt.Sprintf("move it away (mv %s %s.old) and run berth again", shellQuote(path), shellQuote(path))}
	}
	if owner, me, ok := ownerOf(fi); ok && owner != me {
		return &UnsafePathError{Path: path, Problem: fmt.Sprintf("it belongs to user %s, not to the user berth runs as (%s)", userName(owner), userName(me)),
			Fix: fmt.Sprintf("give it to yourself (as root: chown -R %d %s) or set BERTH_HOME to a directory of your own", me, shellQuote(path))}
	}
	if m := fi.Mode().Perm(); privateModes && m&0o022 != 0 {
		want := "600"
		if dir {
			want = "700"
		}
		return &UnsafePathError{Path: path, Problem: fmt.Sprintf("it is writable by %s (mode %04o)", writers(m), m),
			Fix: fmt.Sprintf("make it yours alone: chmod %s %s", want, shellQuote(path))}
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
	return checkOwned(dir, true, false)
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
	f, err := openFileNoFollow(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, noFollowError(path, err)
	}
	if err := checkOpened(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// OpenPrivate opens a file of the state directory for reading without
// following a symbolic link, and refuses it unless it is a regular file of
// the user berth runs as that group and others cannot write.
func OpenPrivate(path string) (*os.File, error) {
	f, err := openNoFollow(path)
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
// longer file is an error.
func ReadPrivateFile(path string, limit int64) ([]byte, error) {
	f, err := OpenPrivate(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return data, nil
}

func checkOpened(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return checkInfo(path, fi, false)
}

// noFollowError words the error of an open that refused a symbolic link;
// other errors (a missing file: fs.ErrNotExist) pass unchanged.
func noFollowError(path string, err error) error {
	if isSymlinkRefusal(err) {
		target, _ := os.Readlink(path)
		return &UnsafePathError{Path: path, Problem: fmt.Sprintf("it is a symbolic link (to %s), and berth never follows one there", target),
			Fix: fmt.Sprintf("remove the link (rm %s) and run berth again; berth creates what it needs", shellQuote(path))}
	}
	return err
}

// shellQuote quotes a path for a command a person may paste.
func shellQuote(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '/' || r == '.' || r == '_' || r == '-' || r == '+' || r == ':') {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
