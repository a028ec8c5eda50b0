package cli

import (
	"errors"

	"github.com/berth-mcp/berth/bundle"
)

// Library errors name the option of the call that would change the
// outcome (a field of bundle.Limits, say), never one of berth's flags; the
// CLI renders them here in its own terms, as flags.

// limitFlags maps each cap of bundle.Limits to the flag that raises it.
var limitFlag = map[bundle.Limit]string{
	bundle.LimitMaxTotalSize: "--max-size",
	bundle.LimitMaxEntries:   "--max-entries",
	bundle.LimitMaxPathLen:   "--max-path",
}

// cliProblems returns the problems with every cap named by its flag.
func cliProblems(ps []*bundle.Problem) []*bundle.Problem {
	out := make([]*bundle.Problem, len(ps))
	for i, p := range ps {
		if f, ok := limitFlag[p.Limit]; ok {
			q := *p
			q.Message += " with " + f
			p = &q
		}
		out[i] = p
	}
	return out
}

// forCLI returns err as the CLI shows it: an error a library returned
// with a hint for its caller is rewritten so that the hint names the flag.
// It leaves wrapped errors as they are (their text includes the
// wrapper's), and keeps the categories, so exit codes do not change.
func forCLI(err error) error {
	var ie *bundle.InvalidError
	if errors.As(err, &ie) && error(ie) == err {
		return &bundle.InvalidError{Source: ie.Source, Problems: cliProblems(ie.Problems)}
	}
	return err
}
