package fsx

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// NotRegularError is a file berth reads only when it is a regular file
// (a catalog's metadata, a marketplace.json) that is something else: a
// FIFO, which would block a read forever, a device, a socket or a
// directory. Rule is the rule it breaks, "special-file", as in a bundle.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

// RuleSpecialFile is the rule a NotRegularError names (bundle's
// RuleSpecialFile).
const RuleSpecialFile = "special-file"

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file (rule %s): berth reads only regular files there; replace it with the file it stands for, or remove it", e.Path, e.Kind(), RuleSpecialFile)
}

// Kind names what the file is: "a FIFO", "a device", "a socket", "a
// directory" or "a special file".
func (e *NotRegularError) Kind() string {
	switch m := e.Mode; {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "a special file"
}

// OpenRegular opens path for reading, following symbolic links, without
// ever blocking on a FIFO (O_NONBLOCK where the system has it), and
// refuses anything that is not a regular file, by an fstat of what it
// opened, with a *NotRegularError.
func OpenRegular(path string) (*os.File, error) {
	f, err := openNonBlocking(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	return f, nil
}

// ReadRegularFile is ReadFile of a regular file only (OpenRegular), whose
// reads stop when ctx is done.
func ReadRegularFile(ctx context.Context, path string, limit int64) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(ContextReader(ctx, f), path, limit)
}

// ContextReader is r whose every Read fails with ctx's error once ctx is
// done.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return &ctxReader{ctx: ctx, r: r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
