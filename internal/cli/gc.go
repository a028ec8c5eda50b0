package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/store"
)

func newGCCmd(a *app) *cobra.Command {
	opts := &gcOptions{}
	cmd := &cobra.Command{
		Use: "gc",
		Example: `  berth gc
  berth gc --json`,
		Short: "Remove snapshots no trust record points to, and leftovers",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGC(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, store.GCResult{})
	return cmd
}

// gcOptions are the inputs of berth gc.
type gcOptions struct {
	JSON bool
}

func runGC(ctx context.Context, a *app, opts *gcOptions) error {
	st, err := a.store()
	if err != nil {
		return err
	}
	res, err := st.GC(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, res)
	}
	fmt.Fprintf(a.stdout, "Removed %d snapshot(s) and %d leftover(s).\n", len(res.Snapshots), len(res.Leftovers))
	for _, s := range res.Snapshots {
		fmt.Fprintf(a.stdout, "  snapshot %s\n", s)
	}
	for _, l := range res.Leftovers {
		fmt.Fprintf(a.stdout, "  leftover %s\n", l)
	}
	return nil
}
