package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
)

var serverIDRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,127}$`)

func newLogsCmd(a *app) *cobra.Command {
	opts := &logsOptions{}
	cmd := &cobra.Command{
		Use: "logs PLUGIN__SERVER",
		Example: `  berth logs acme-notes__notes
  berth logs acme-notes__notes --lines 50`,
		Short: "Print the stderr tail of a server",
		Long: `Logs prints the last lines of a server's log, $BERTH_HOME/logs/<plugin>__<server>.log
(a native tool provider's: <plugin>__<entry>.log, with go-plugin's lines):
its stderr and berth's own lines about it (started, exited, restarts), from
every berth process that ran it. berth status lists the server names.
A line the server wrote starts with "| " and one of berth's own with
"berth <time>: ", so a server cannot write a line that reads as berth's.
Control characters, terminal escape sequences and bytes that are not UTF-8
are printed escaped (\x1b, \u202e, \x9b), as berth status prints them; with
--json they are JSON escapes (\u001b, \u009b), and a byte that is not UTF-8
is U+FFFD.`,
		Args: exactArgs(1, "one PLUGIN__SERVER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Server = args[0]
			return runLogs(cmd.Context(), a, opts)
		},
	}
	cmd.Flags().IntVar(&opts.Lines, "lines", pool.TailLines, "how many lines to print")
	a.jsonFlag(cmd, &opts.JSON, logsJSON{})
	return cmd
}

// logsOptions are the inputs of berth logs.
type logsOptions struct {
	// Server is the positional argument.
	Server string
	JSON   bool
	Lines  int
}

func runLogs(_ context.Context, a *app, opts *logsOptions) error {
	id := opts.Server
	if !serverIDRe.MatchString(id) {
		return usagef("%q is not a server name like acme-notes__notes (berth status lists them)", id)
	}
	if opts.Lines <= 0 {
		return usagef("--lines must be positive")
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	path := st.Paths().Log(id)
	tail, err := pool.TailLog(path, opts.Lines)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("there is no log of %s yet (%s); berth writes it when the server starts, for example with berth status", id, path)
	}
	if err != nil {
		return err
	}
	if opts.JSON {
		if tail == nil {
			tail = []string{}
		}
		return writeJSON(a.stdout, logsJSON{Server: id, File: path, Lines: tail})
	}
	for _, l := range tail {
		// A server writes what it likes to its stderr: escape what a
		// terminal would act on, as berth status does.
		fmt.Fprintln(a.stdout, review.PrintableLines(l))
	}
	return nil
}

// logsJSON is what logs --json prints.
type logsJSON struct {
	Server string `json:"server"`
	// File is the log file read.
	File string `json:"file"`
	// Lines are its last lines, oldest first, as written (a line the
	// server wrote starts with "| ", one of berth's with "berth "); control and
	// other invisible characters are JSON escapes (\u009b), a byte that
	// is not UTF-8 is U+FFFD.
	Lines []string `json:"lines"`
}
