package cli

import (
	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/review"
)

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
			if err != nil {
				return err
			}
			defer b.Close()
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
