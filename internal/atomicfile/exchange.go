package atomicfile

import "errors"

// errUnsupported is an exchange the system or file system cannot do.
type errUnsupported struct{ err error }

func (e errUnsupported) Error() string {
	if e.err == nil {
		return "swapping two directory entries in one step is not supported here"
	}
	return "swapping two directory entries in one step is not supported here: " + e.err.Error()
}

func (e errUnsupported) Unwrap() []error {
	if e.err == nil {
		return []error{errors.ErrUnsupported}
	}
	return []error{errors.ErrUnsupported, e.err}
}
