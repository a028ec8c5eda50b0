package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/pool"
)

// workspaceFlag adds --workspace, defaulting to the current directory.
func workspaceFlag(cmd *cobra.Command, dst *string) {
	cmd.Flags().StringVar(dst, "workspace", ".", "the workspace `DIR` (made absolute and symlink-resolved)")
}

// openPool opens the workspace's pool and waits for its servers' first
// start, drawing progress on a terminal when show allows (not for --json).
// The caller must Close it.
func (a *app) openPool(ctx context.Context, workspace string, show bool) (*pool.Pool, error) {
	st, err := a.store()
	if err != nil {
		return nil, err
	}
	sec, err := a.secrets()
	if err != nil {
		return nil, err
	}
	p, err := pool.Open(ctx, st, workspace, &pool.Options{LookupEnv: os.LookupEnv, Secrets: secretLookup(sec), SignIns: sec, SignInClient: signinClients(st, sec)})
	if err != nil {
		return nil, err
	}
	if err := a.waitStarted(ctx, p, show); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// requireEnabled checks, from the state alone (no server is started), that
// plugin is enabled in workspace, and returns the workspace's absolute path.
func (a *app) requireEnabled(workspace, plugin, why string) (string, error) {
	ws, err := pool.Workspace(workspace)
	if err != nil {
		return "", fmt.Errorf("workspace %s: %v; pass --workspace with an existing directory", workspace, unwrapPath(err))
	}
	st, err := a.store()
	if err != nil {
		return "", err
	}
	state, err := st.State()
	if err != nil {
		return "", err
	}
	if w := state.Workspaces[ws]; w == nil || w.Plugins[plugin] == nil {
		return "", fmt.Errorf("%s is not enabled in %s, so %s (berth list shows what is trusted; berth enable %s enables it here)", plugin, ws, why, plugin)
	}
	return ws, nil
}
