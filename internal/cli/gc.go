package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/store"
)

func newGCCmd(a *app) *cobra.Command {
	opts := &gcOptions{}
	cmd := &cobra.Command{
		Use: "gc",
		Example: `  berth gc
  berth gc --json`,
		Short: "Remove snapshots no trust record points to, and leftovers",
		Long: `Gc removes the staged snapshots that no trust record points to, and the
leftovers of berth commands that were cut short: temporary files of
interrupted writes under BERTH_HOME, and the temporary directories
(berth-download-*, berth-extract-*, berth-import-*, berth-registry-*,
berth-serverjson-*, berth-builtin-*, berth-npm-*, berth-npm-scripts-*,
berth-pypi-*, berth-push-*, berth-pull-*, berth-mirror-*, berth-export-*;
an npm one holds your npm settings, tokens included) that a command killed outright left in the system's
temp directory (TMPDIR). There it removes only directories owned by you,
never through a symbolic link, and only those over an hour old: a
younger one may belong to a command still running.`,
		Args: exactArgs(0, "no arguments"),
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
	// The temporary directories of berth commands that were killed
	// outright: only this user's, only real directories, only those older
	// than an hour (a younger one may be a running command's).
	swept, err := fsx.SweepTemp(os.TempDir(), fsx.TempPrefixes, time.Now().Add(-fsx.TempLeftoverAge))
	res.Leftovers = append(res.Leftovers, swept...)
	if err != nil {
		return fmt.Errorf("removing leftovers in the temp directory %s: %w", os.TempDir(), err)
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
