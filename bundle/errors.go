package bundle

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrInvalidBundle is the category of every validation failure. The CLI maps
// it to exit code 3.
var ErrInvalidBundle = errors.New("invalid bundle")

// Problem is one broken rule, at one location.
type Problem struct {
	// Path locates the problem: a JSON path in the manifest
	// ("mcpServers.notes.stdio.env.NOTES_TOKEN"), a file path in the
	// bundle ("bin/tool"), or "." for the bundle as a whole.
	Path string `json:"path"`
	// Rule is a stable kebab-case ID, listed in docs/rules.md.
	Rule string `json:"rule"`
	// Message says what is wrong and how to fix it. It never holds a
	// secret value.
	Message string `json:"message"`
	// Limit is set when a cap of Limits caused the problem: the message
	// then ends with "or raise the cap", and Limit names the field that
	// sets it.
	Limit Limit `json:"-"`
}

func (p *Problem) Error() string {
	return fmt.Sprintf("%s: %s [%s]", p.Path, p.Message, p.Rule)
}

// InvalidError reports every problem found in a bundle. It matches
// ErrInvalidBundle with errors.Is, and errors.As finds each *Problem.
type InvalidError struct {
	Source   string
	Problems []*Problem
	// OnlyServer is set when the source is of another format and every
	// problem lies in one of its servers: that server's name in the
	// source, which --without NAME leaves out to import the rest.
	OnlyServer string
}

func (e *InvalidError) Error() string {
	var b strings.Builder
	n := len(e.Problems)
	fmt.Fprintf(&b, "%s is not a valid bundle: %d problem", e.Source, n)
	if n != 1 {
		b.WriteString("s")
	}
	for _, p := range e.Problems {
		b.WriteString("\n  - ")
		b.WriteString(p.Error())
	}
	if e.OnlyServer != "" {
		fmt.Fprintf(&b, "\nEvery problem is in the server %q: to import the rest, leave it out with berth import %s --without %s --out DIR (berth lists it as not carried over).", e.OnlyServer, shellWord(e.Source), shellWord(e.OnlyServer))
	}
	return b.String()
}

// Is reports whether target is ErrInvalidBundle.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalidBundle }

// Unwrap returns the problems, so callers can walk them.
func (e *InvalidError) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		errs[i] = p
	}
	return errs
}

// problems collects Problems in the order found.
type problems struct {
	list []*Problem
}

func (ps *problems) add(path, rule, format string, args ...any) {
	ps.list = append(ps.list, &Problem{Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// addLimit adds a problem that the cap limit caused.
func (ps *problems) addLimit(path, rule string, limit Limit, format string, args ...any) {
	ps.list = append(ps.list, &Problem{Path: path, Rule: rule, Message: fmt.Sprintf(format, args...), Limit: limit})
}

func (ps *problems) empty() bool { return len(ps.list) == 0 }

// sorted returns the problems sorted by path, then rule, keeping the order
// of problems at the same place.
func (ps *problems) sorted() []*Problem {
	out := append([]*Problem(nil), ps.list...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Rule < out[j].Rule
	})
	return out
}

// shellWord quotes s for a POSIX shell when it holds anything but
// letters, digits and -_.
func shellWord(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
