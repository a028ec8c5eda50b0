package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
)

type jsonProblem struct {
	Path    string `json:"path"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

func jsonProblems(ps []*bundle.Problem) []jsonProblem {
	out := []jsonProblem{}
	for _, p := range cliProblems(ps) {
		out = append(out, jsonProblem{p.Path, p.Rule, p.Message})
	}
	return out
}

// validateJSON is what validate --json prints.
type validateJSON struct {
	Valid  bool          `json:"valid"`
	Digest string        `json:"digest"`
	Errors []jsonProblem `json:"errors"`
	// Format is the format of a source berth imported (bundle.Import).
	Format string   `json:"format,omitempty"`
	Notes  []string `json:"notes,omitempty"`
}

func newValidateCmd(a *app) *cobra.Command {
	opts := &validateOptions{}
	cmd := &cobra.Command{
		Use: "validate SOURCE",
		Example: `  berth validate ./acme-notes
  berth validate acme-notes-1.4.2.zip --json`,
		Short: "Check a bundle against every rule, fail-closed",
		Long: `Validate checks a bundle (a directory, .tar.gz, .tgz or .zip) against every
rule of manifest v1 and of the file tree, and prints every problem at once,
each with its location, its rule ID (see docs/rules.md) and how to fix it.
It never runs anything from the bundle and never reads a secret.

It reads other formats too, by their content: an MCP Bundle (.mcpb, or a
directory with manifest.json), a Claude Code plugin (a directory with
.claude-plugin/plugin.json) and an MCP Registry server.json. Their problems
are located in the source's own file and field.

Exit code 0 means valid; 3 means invalid.`,
		Args: exactArgs(1, "one SOURCE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Source = args[0]
			return runValidate(cmd.Context(), a, opts)
		},
	}
	limitFlags(cmd, &opts.Bundle)
	a.jsonFlag(cmd, &opts.JSON, validateJSON{})
	return cmd
}

// validateOptions are the inputs of berth validate.
type validateOptions struct {
	// Source is the positional argument.
	Source string
	JSON   bool
	Bundle bundle.Options
}

func runValidate(ctx context.Context, a *app, opts *validateOptions) error {
	if err := checkLimits(&opts.Bundle); err != nil {
		return err
	}
	hctx, stopProgress := a.hashing(ctx, !opts.JSON, "hashing")
	b, problems, err := bundle.Load(hctx, opts.Source, &opts.Bundle)
	stopProgress()
	if err != nil {
		return err
	}
	defer b.Close()
	var invalid error
	if len(problems) > 0 {
		invalid = &bundle.InvalidError{Source: opts.Source, Problems: problems, OnlyServer: b.OnlyServer(problems)}
	}
	if opts.JSON {
		out := validateJSON{Valid: invalid == nil, Digest: b.Digest, Errors: jsonProblems(problems), Notes: b.Notes}
		if b.Import != nil {
			out.Format = b.Import.Format
		}
		if err := writeJSON(a.stdout, out); err != nil {
			return err
		}
		if invalid != nil {
			return &reported{invalid}
		}
		return nil
	}
	if invalid != nil {
		return invalid
	}
	for _, n := range b.Notes {
		fmt.Fprintf(a.stderr, "note: %s\n", n)
	}
	name := b.Manifest.Name + " " + b.Manifest.Version
	if imp := importedAs(b); imp != "" {
		name += ", " + imp
	}
	fmt.Fprintf(a.stdout, "%s is a valid bundle: %s, %s\n", opts.Source, name, b.Digest)
	return nil
}
