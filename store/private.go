package store

import "github.com/berth-mcp/berth/internal/fsx"

// UnsafePathError refuses a part of the state directory that is not the
// operator's alone: owned by another user, writable by group or others,
// or a symbolic link where berth never follows one. It says how to fix it,
// as ssh does for ~/.ssh.
type UnsafePathError = fsx.UnsafePathError

// CheckPrivate checks that the state directory is the operator's alone:
// the root ($BERTH_HOME), approvals/, logs/, audit.log, state.json and
// config.json, where they exist, must belong to the user berth runs as and
// not be writable by group or others; approvals/, logs/ and the files
// must not be symbolic links (the root may be one, to a directory that
// passes). A problem is an *UnsafePathError that says how to fix it.
// Every berth command that uses the state, and pool.Open, check this
// first.
func (p Paths) CheckPrivate() error {
	if err := fsx.CheckPrivate(p.Root, true, true); err != nil {
		return err
	}
	for _, dir := range []string{p.Approvals(), p.Logs()} {
		if err := fsx.CheckPrivate(dir, true, false); err != nil {
			return err
		}
	}
	for _, f := range []string{p.Audit(), p.State(), p.Config()} {
		if err := fsx.CheckPrivate(f, false, false); err != nil {
			return err
		}
	}
	return nil
}
