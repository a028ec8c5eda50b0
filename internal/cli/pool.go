package cli

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/pool"
)

// workspaceFlag adds --workspace, defaulting to the current directory.
func workspaceFlag(cmd *cobra.Command, dst *string) {
	cmd.Flags().StringVar(dst, "workspace", ".", "the workspace `DIR` (made absolute and symlink-resolved)")
}

// openPool opens the workspace's pool and waits for its servers' first
// start. The caller must Close it.
func (a *app) openPool(ctx context.Context, workspace string) (*pool.Pool, error) {
	st, err := a.store()
	if err != nil {
		return nil, err
	}
	p, err := pool.Open(ctx, st, workspace, &pool.Options{LookupEnv: os.LookupEnv})
	if err != nil {
		return nil, err
	}
	if err := p.WaitStarted(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}
