package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
)

func (a *app) toolsCommand() *cobra.Command {
	var workspace string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tools [PLUGIN]",
		Short: "List the workspace's tools with their policy",
		Long: `Tools starts the workspace's servers and lists the catalog: every tool
under its exported name <plugin>__<server>__<tool> (a native tool:
<plugin>__<entry>__<tool>), with the operator's policy for it (allow or ask; denied
tools are not listed). Tools withheld because they changed since they were
pinned, or because their names collide, are counted; 'berth status' says
why.`,
		Args: rangeArgs(0, 1, "at most one PLUGIN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := a.openPool(cmd.Context(), workspace)
			if err != nil {
				return err
			}
			defer p.Close()
			tools, err := p.Tools(cmd.Context())
			if err != nil {
				return err
			}
			out := []*pool.Tool{}
			for _, t := range tools {
				if len(args) == 0 || t.Plugin == args[0] {
					out = append(out, t)
				}
			}
			if asJSON {
				return writeJSON(a.stdout, out)
			}
			if len(out) == 0 {
				fmt.Fprintln(a.stdout, "No tools. berth status shows the state of each server.")
			} else {
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TOOL\tPOLICY\tDESCRIPTION")
				for _, t := range out {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.Policy, oneLine(review.PrintableLines(t.Definition.Description), 70))
				}
				tw.Flush()
			}
			withheld := 0
			for _, s := range p.Status() {
				if len(args) == 0 || s.Plugin == args[0] {
					withheld += len(s.Changes) + len(s.Collisions)
				}
			}
			if withheld > 0 {
				fmt.Fprintf(a.stdout, "%d tool(s) withheld; berth status shows why.\n", withheld)
			}
			return nil
		},
	}
	workspaceFlag(cmd, &workspace)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the catalog as JSON, with definitions and policies")
	return cmd
}
