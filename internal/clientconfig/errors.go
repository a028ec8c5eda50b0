package clientconfig

import (
	"errors"
	"fmt"
)

// ErrInvalidConfig marks a configuration file that berth will not edit: it
// does not parse, it holds comments where the client reads strict JSON, its
// top level or its servers key is not an object, or a name appears twice.
// The file is left untouched.
var ErrInvalidConfig = errors.New("invalid client configuration")

// ErrConflict marks an edit that would change a server entry berth did not
// write as it stands: connecting over a different entry of the same name,
// or disconnecting an entry that does not run berth. Options.Force allows
// it.
var ErrConflict = errors.New("conflicting server entry")

// ErrChanged marks a file that changed between the time berth read it and
// the time it was about to replace it (usually the client rewrote it). The
// file is left as the other writer left it.
var ErrChanged = errors.New("configuration changed during the edit")

// ErrOutsideWorkspace marks a project file (Target.Workspace) whose path
// passes through a symbolic link that leads out of the workspace, or that
// cannot be followed: a workspace could otherwise make berth write any
// file the user can write. Nothing is written.
var ErrOutsideWorkspace = errors.New("symbolic link out of the workspace")

// SyntaxError reports a configuration file that does not parse. It wraps
// ErrInvalidConfig.
type SyntaxError struct {
	// File is the file's path.
	File string
	// Line and Column (1-based, column in bytes) locate the problem.
	Line, Column int
	// Detail is the parser's description.
	Detail string
	// Client reads the file; JSONC reports whether it accepts comments
	// and trailing commas.
	Client Client
	JSONC  bool
}

func (e *SyntaxError) Error() string {
	format, rule := "JSON", fmt.Sprintf("%s reads strict JSON: no comments, no trailing commas", e.Client.Title())
	if e.JSONC {
		format, rule = "JSON with comments", fmt.Sprintf("%s accepts JSON with // and /* */ comments and trailing commas, nothing looser", e.Client.Title())
	}
	return fmt.Sprintf("%s is not valid %s: line %d, column %d: %s (%s)\n"+
		"fix: correct the file at that position, or move it aside to start a new one, then run berth again; nothing was changed",
		e.File, format, e.Line, e.Column, e.Detail, rule)
}

// Unwrap returns ErrInvalidConfig.
func (e *SyntaxError) Unwrap() error { return ErrInvalidConfig }

// invalidf reports a file berth will not edit, with the fix.
func invalidf(file, fix, format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s\nfix: %s; nothing was changed", file, ErrInvalidConfig, fmt.Sprintf(format, args...), fix)
}
