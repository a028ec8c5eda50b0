// Package cli is berth's command line: flags, output (text and --json),
// exit codes and prompts. It holds no logic a library user needs; that
// lives in bundle, review, trust, pool and mcpexport.
package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"reflect"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/importer"
	"github.com/berth-mcp/berth/bundle/runtimefetch"
	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// Exit codes. They are a contract: later versions add codes, none changes.
const (
	ExitOK        = 0
	ExitFailure   = 1
	ExitUsage     = 2
	ExitInvalid   = 3
	ExitUntrusted = 4
	ExitDrift     = 5
	ExitDenied    = 6
)

// Main runs berth with the process's arguments and standard streams and
// returns the exit code.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// Run runs berth with the given arguments and streams. It builds a fresh
// command tree each time, so it can be called many times in one process.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(ctx, args, os.Getenv, stdin, stdout, stderr)
}

// run is Run with the environment given as a lookup function.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv, interrupted: ctx.Done()}
	a.completing = len(args) > 0 && strings.HasPrefix(args[0], cobra.ShellCompRequestCmd)
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetIn(stdin)
	out := &watchedWriter{w: stdout}
	a.stdout = out
	root.SetOut(out)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	code := exitCode(err)
	var rep *reported
	reportedErr := errors.As(err, &rep)
	msg := strings.TrimRight(forCLI(err).Error(), "\n")
	if !reportedErr {
		fmt.Fprintf(stderr, "berth: %s\n", msg)
		if code == ExitUsage {
			fmt.Fprintf(stderr, "Run 'berth help' or 'berth %s --help' for usage.\n", commandName(root, args))
		}
	}
	// With --json, the error is a JSON object on stdout too, unless the
	// command already printed its payload there (which then describes
	// the failure): stdout stays one JSON value.
	if wantsJSON(cmd, args) && !out.wrote {
		writeJSON(stdout, errorJSON{Error: errorBody{Message: msg, Rule: errorRule(err), ExitCode: code}})
	}
	return code
}

// errorJSON is what a command given --json prints on stdout when it
// fails before printing its payload.
type errorJSON struct {
	Error errorBody `json:"error"`
}

// errorBody is the error of errorJSON: the message printed on stderr, the
// ID of the rule broken (docs/rules.md) when the error has one, and the
// exit code.
type errorBody struct {
	Message  string `json:"message"`
	Rule     string `json:"rule,omitempty"`
	ExitCode int    `json:"exitCode"`
}

// ruleError is an error that breaks a rule with a stable ID: a rule of
// docs/rules.md, or a catalog's refusal of docs/marketplace.md (expired,
// bad-signature…). Error types whose Rule is a field are named in
// errorRule instead.
type ruleError interface {
	error
	Rule() string
}

// errorRule is the rule ID an error carries: that of a bundle's first
// problem (when there are several, the first one's), of a refused
// command, of a special file, or of any ruleError in its chain.
func errorRule(err error) string {
	var p *bundle.Problem
	if errors.As(err, &p) {
		return p.Rule
	}
	var ce *runtimefetch.CommandError
	if errors.As(err, &ce) {
		return ce.Rule
	}
	var me *importer.MCPBPackageError
	if errors.As(err, &me) {
		return me.Rule
	}
	var re ruleError
	if errors.As(err, &re) {
		return re.Rule()
	}
	var nr *fsx.NotRegularError
	if errors.As(err, &nr) {
		return fsx.RuleSpecialFile
	}
	return ""
}

// wantsJSON reports whether the command ran (or was to run) with --json:
// its flag when it parsed, else the argument itself, before any "--".
func wantsJSON(cmd *cobra.Command, args []string) bool {
	if cmd != nil {
		if f := cmd.Flags().Lookup("json"); f != nil && f.Value.String() == "true" {
			return true
		}
	}
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "--json=true":
			return true
		}
	}
	return false
}

// watchedWriter records whether anything was written to it.
type watchedWriter struct {
	w     io.Writer
	wrote bool
}

func (w *watchedWriter) Write(p []byte) (int, error) {
	if len(p) > 0 {
		w.wrote = true
	}
	return w.w.Write(p)
}

func commandName(root *cobra.Command, args []string) string {
	if c, _, err := root.Find(args); err == nil && c != root {
		return strings.TrimPrefix(c.CommandPath(), "berth ")
	}
	return "COMMAND"
}

// app holds what every command shares: the streams and the environment.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// interrupted is closed when the command is interrupted (the done
	// channel of Run's context: Ctrl-C, SIGTERM); a prompt stops waiting
	// then (readLine).
	interrupted <-chan struct{}

	// payloads are the types that each command's --json prints, for
	// docs/cli.md (jsonFlag).
	payloads map[*cobra.Command]reflect.Type
	// noProgress is --no-progress.
	noProgress bool
	// openBrowser opens a sign-in URL (berth login); nil means the
	// system browser (openBrowser in login.go). Tests set it.
	openBrowser func(url string) error
	// completing is set for cobra's completion requests (__complete),
	// which write no state: catalogs then does not put the built-in
	// catalog into the cache.
	completing bool
	// clock and newTicker drive ticking (what long work shows); nil means
	// time.Now and a time.Ticker. Tests set them.
	clock     func() time.Time
	newTicker func(time.Duration) (<-chan time.Time, func())
}

// jsonFlag adds --json to cmd: it prints one value of payload's type,
// whose fields docs/cli.md documents (a test keeps it true).
func (a *app) jsonFlag(cmd *cobra.Command, dst *bool, payload any) {
	cmd.Flags().BoolVar(dst, "json", false, "print the result as JSON (the payload is described in docs/cli.md)")
	if a.payloads == nil {
		a.payloads = map[*cobra.Command]reflect.Type{}
	}
	a.payloads[cmd] = reflect.TypeOf(payload)
}

// isTerminal reports whether stdin and stdout are both a terminal, so a
// prompt can be shown and answered.
func (a *app) isTerminal() bool {
	in, ok1 := a.stdin.(*os.File)
	out, ok2 := a.stdoutFile()
	return ok1 && ok2 && term.IsTerminal(int(in.Fd())) && term.IsTerminal(int(out.Fd()))
}

// stdoutFile returns the file behind a.stdout, if it is one.
func (a *app) stdoutFile() (*os.File, bool) {
	w := a.stdout
	if ww, ok := w.(*watchedWriter); ok {
		w = ww.w
	}
	f, ok := w.(*os.File)
	return f, ok
}

// usageError is a mistake in how berth was called (exit 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// reported wraps an error whose details the command already printed; Run
// only maps it to an exit code.
type reported struct{ err error }

func (e *reported) Error() string { return e.err.Error() }
func (e *reported) Unwrap() error { return e.err }

// exitCode maps an error to its exit code through the error categories of
// berth's packages.
func exitCode(err error) int {
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		return ExitUsage
	case errors.Is(err, bundle.ErrInvalidBundle):
		return ExitInvalid
	case errors.Is(err, trust.ErrUntrusted):
		return ExitUntrusted
	case errors.Is(err, store.ErrDrift):
		return ExitDrift
	case errors.Is(err, pool.ErrDenied):
		return ExitDenied
	}
	return ExitFailure
}

// writeJSON prints v as indented JSON, with every character a terminal
// would act on or hide escaped (see escapeInvisible): plugins' text
// reaches --json output too (log lines, descriptions), and a person may
// read it in a terminal.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(escapeInvisible(buf.Bytes()))
	return err
}

// escapeInvisible rewrites encoding/json output so that it holds no
// character that is not printable but for its own layout (space and
// newline): DEL and C1 controls (U+007F–U+009F; U+009B is CSI to some
// terminals), bidirectional overrides, zero-width and other format
// characters become \uXXXX escapes. encoding/json escapes U+0000–U+001F
// and U+2028/U+2029 itself, and turns bytes that are not UTF-8 into
// U+FFFD. Such characters can only occur inside JSON strings, where the
// escape decodes to the same text.
func escapeInvisible(data []byte) []byte {
	hidden := func(r rune) bool { return r >= 0x7f && !unicode.IsPrint(r) }
	if bytes.IndexFunc(data, hidden) < 0 {
		return data
	}
	out := make([]byte, 0, len(data)+32)
	for len(data) > 0 {
		r, n := utf8.DecodeRune(data)
		if hidden(r) && !(r == utf8.RuneError && n == 1) {
			for _, u := range utf16.Encode([]rune{r}) {
				out = fmt.Appendf(out, `\u%04x`, u)
			}
		} else {
			out = append(out, data[:n]...)
		}
		data = data[n:]
	}
	return out
}

// exactArgs checks the number of positional arguments, as a usage error.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %s (got %d arguments)", cmd.CommandPath(), names, len(args))
		}
		return nil
	}
}

func rangeArgs(lo, hi int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return usagef("%s takes %s (got %d arguments)", cmd.CommandPath(), names, len(args))
		}
		return nil
	}
}
