package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/review"
)

func newReviewCmd(a *app) *cobra.Command {
	opts := &reviewOptions{}
	cmd := &cobra.Command{
		Use: "review SOURCE",
		Example: `  berth review ./acme-notes
  berth review acme-notes-1.4.2.tar.gz --json`,
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

For each variable the servers read, review also says whether it is set
here and where from: the environment berth runs in, or berth's secret
store (berth secret set). It never reads a value: it asks the environment
whether the variable exists and the store's index whether it holds the name.

Exit code 3 means the bundle is invalid (and nothing is reviewed).`,
		Args: exactArgs(1, "one SOURCE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Source = args[0]
			return runReview(cmd.Context(), a, opts)
		},
	}
	limitFlags(cmd, &opts.Bundle)
	a.jsonFlag(cmd, &opts.JSON, reviewJSON{})
	return cmd
}

// reviewOptions are the inputs of berth review.
type reviewOptions struct {
	// Source is the positional argument.
	Source string
	JSON   bool
	Bundle bundle.Options
}

func runReview(ctx context.Context, a *app, opts *reviewOptions) error {
	hctx, stopProgress := a.hashing(ctx, !opts.JSON, "hashing")
	b, err := openBundle(hctx, opts.Source, &opts.Bundle)
	stopProgress()
	if err != nil {
		return err
	}
	defer b.Close()
	d := review.New(b)
	d.LocateRuntimes()
	ss, err := a.sourceStates(d)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, reviewJSON{Disclosure: d, Sources: ss})
	}
	if err := d.WriteText(a.stdout); err != nil {
		return err
	}
	writeSourceStates(a.stdout, ss)
	if ecos := fetchesAtTrust(d); len(ecos) > 0 {
		fmt.Fprintln(a.stdout, "\nFetch settings (berth resolves the fetched packages at trust with these; never the workspace's files):")
		a.writeSettingsLines(a.stdout, "  ", ecos)
	}
	return nil
}

// fetchesAtTrust is the ecosystems (npm, pypi) of the packages d's
// servers fetch, which berth resolves at trust with the operator's
// settings.
func fetchesAtTrust(d *review.Disclosure) map[string]bool {
	ecos := map[string]bool{}
	for _, s := range d.Servers {
		if s.Stdio == nil {
			continue
		}
		for _, f := range s.Stdio.RuntimeFetch {
			if f.Ecosystem == "npm" || f.Ecosystem == "pypi" {
				ecos[f.Ecosystem] = true
			}
		}
	}
	return ecos
}

// reviewJSON is what review --json prints: the disclosure (review.Disclosure,
// whose hash trust records keep) and, beside it, the state of each variable
// it reads here.
type reviewJSON struct {
	*review.Disclosure
	// Sources are the variables the servers read, each with whether it is
	// set here and where from; never a value.
	Sources []sourceJSON `json:"sources"`
}
