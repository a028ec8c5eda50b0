package cli

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/review"
)

// limitFlags adds the tree caps to a command that opens bundles.
func limitFlags(cmd *cobra.Command, opts *bundle.Options) {
	f := cmd.Flags()
	f.Int64Var(&opts.Limits.MaxTotalSize, "max-size", bundle.DefaultMaxTotalSize, "largest total size of a bundle's files, in bytes")
	f.IntVar(&opts.Limits.MaxEntries, "max-entries", bundle.DefaultMaxEntries, "most files, directories and symlinks in a bundle")
	f.IntVar(&opts.Limits.MaxPathLen, "max-path", bundle.DefaultMaxPathLen, "longest path in a bundle, in bytes")
}

// openBundle opens and validates a bundle. The caller must Close it.
func openBundle(ctx context.Context, source string, opts *bundle.Options) (*bundle.Bundle, error) {
	if opts.Limits.MaxTotalSize <= 0 || opts.Limits.MaxEntries <= 0 || opts.Limits.MaxPathLen <= 0 {
		return nil, usagef("--max-size, --max-entries and --max-path must be positive")
	}
	return bundle.Open(ctx, source, opts)
}

type jsonProblem struct {
	Path    string `json:"path"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

func problemsOf(err error) []jsonProblem {
	out := []jsonProblem{}
	var ie *bundle.InvalidError
	if errors.As(err, &ie) {
		for _, p := range ie.Problems {
			out = append(out, jsonProblem{p.Path, p.Rule, p.Message})
		}
	}
	return out
}

func (a *app) validateCommand() *cobra.Command {
	var opts bundle.Options
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate SOURCE",
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
			b, err := openBundle(cmd.Context(), args[0], &opts)
			defer b.Close()
			if err != nil && !errors.Is(err, bundle.ErrInvalidBundle) {
				return err
			}
			if asJSON {
				out := struct {
					Valid  bool          `json:"valid"`
					Digest string        `json:"digest"`
					Errors []jsonProblem `json:"errors"`
					Format string        `json:"format,omitempty"`
					Notes  []string      `json:"notes,omitempty"`
				}{Valid: err == nil, Errors: problemsOf(err)}
				if b != nil {
					out.Digest, out.Notes = b.Digest, b.Notes
					if b.Import != nil {
						out.Format = b.Import.Format
					}
				}
				if werr := writeJSON(a.stdout, out); werr != nil {
					return werr
				}
				if err != nil {
					return &reported{err}
				}
				return nil
			}
			if err != nil {
				return err
			}
			for _, n := range b.Notes {
				fmt.Fprintf(a.stderr, "note: %s\n", n)
			}
			name := b.Manifest.Name + " " + b.Manifest.Version
			if imp := importedAs(b); imp != "" {
				name += ", " + imp
			}
			fmt.Fprintf(a.stdout, "%s is a valid bundle: %s, %s\n", args[0], name, b.Digest)
			return nil
		},
	}
	limitFlags(cmd, &opts)
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"valid", "digest", "errors": [{"path", "rule", "message"}], "format", "notes"}`)
	return cmd
}

func (a *app) reviewCommand() *cobra.Command {
	var opts bundle.Options
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "review SOURCE",
		Short: "Show everything a bundle asks to be allowed to do",
		Long: `Review validates a bundle and discloses every authority it asks for: the
programs it runs and as whom, their arguments and working directory, the
environment variables they receive (names and sources, never values), the
packages they download at start, the remote endpoints and the credentials
sent there, tool filters, native tool executables with their hashes.

For a source of another format (an MCP Bundle, a Claude Code plugin, a
server.json) it also says which format and version it came from, what each
of the values it asks its user for becomes in berth's terms, the tools and
prompts it declares, and what was not carried over and why (hooks called
out), and shows an MCPB signature block (berth's trust does not rest on it).

Exit code 3 means the bundle is invalid (and nothing is reviewed).`,
		Args: exactArgs(1, "one SOURCE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := openBundle(cmd.Context(), args[0], &opts)
			defer b.Close()
			if err != nil {
				return err
			}
			d := review.New(b)
			if asJSON {
				_, err := a.stdout.Write(d.JSON())
				return err
			}
			return d.WriteText(a.stdout)
		},
	}
	limitFlags(cmd, &opts)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the review as JSON")
	return cmd
}

func (a *app) digestCommand() *cobra.Command {
	var opts bundle.Options
	var listing, asJSON bool
	cmd := &cobra.Command{
		Use:   "digest SOURCE",
		Short: "Print a bundle's digest, or its canonical listing",
		Long: `Digest prints sha256:<hex>, the sha256 of the bundle's canonical listing:
one line per file, sorted by path bytes, "<mode> <sha256> <size> <path>",
with mode 100644, 100755 or 120000 (symlink). A directory and an archive of
the same tree have the same digest; an exec bit changes it.

--listing prints the listing itself: it is the artifact that 'berth sign'
and 'cosign sign-blob' sign. Invalid bundles are refused (exit 3).`,
		Args: exactArgs(1, "one SOURCE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := openBundle(cmd.Context(), args[0], &opts)
			defer b.Close()
			if err != nil {
				return err
			}
			switch {
			case listing:
				_, err = a.stdout.Write(b.Listing().Bytes())
			case asJSON:
				err = writeJSON(a.stdout, map[string]any{"digest": b.Digest, "files": len(b.Listing().Entries), "totalSize": b.Listing().TotalSize()})
			default:
				_, err = fmt.Fprintln(a.stdout, b.Digest)
			}
			return err
		},
	}
	limitFlags(cmd, &opts)
	cmd.Flags().BoolVar(&listing, "listing", false, "print the canonical listing instead of the digest")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"digest", "files", "totalSize"}`)
	cmd.MarkFlagsMutuallyExclusive("listing", "json")
	return cmd
}

func (a *app) versionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print berth's version",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON {
				return writeJSON(a.stdout, map[string]string{"version": bundle.BerthVersion, "go": runtime.Version(), "platform": runtime.GOOS + "/" + runtime.GOARCH})
			}
			_, err := fmt.Fprintf(a.stdout, "berth %s (%s, %s/%s)\n", bundle.BerthVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"version", "go", "platform"}`)
	return cmd
}
