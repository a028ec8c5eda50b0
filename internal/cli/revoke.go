package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/store"
)

func newRevokeCmd(a *app) *cobra.Command {
	opts := &revokeOptions{}
	cmd := &cobra.Command{
		Use: "revoke NAME[@VERSION]",
		Example: `  berth revoke acme-notes@1.4.2
  berth revoke acme-notes --yes --json`,
		Short: "Remove trust in a plugin (every version, or one)",
		Long: `Revoke removes the trust records of a plugin, or of one version, and
disables it everywhere it was enabled with that version. Running berth
processes notice at their next boundary, remove its tools and stop its
servers. The staged snapshot stays until 'berth gc'.`,
		Args: exactArgs(1, "one NAME[@VERSION]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ref = args[0]
			return runRevoke(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, revokeJSON{})
	return cmd
}

// revokeOptions are the inputs of berth revoke.
type revokeOptions struct {
	// Ref is the positional argument.
	Ref  string
	JSON bool
}

func runRevoke(ctx context.Context, a *app, opts *revokeOptions) error {
	name, version, err := parseRef(opts.Ref)
	if err != nil {
		return err
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	gone, err := st.Revoke(ctx, name, version)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, revokeJSON{Revoked: gone})
	}
	for _, r := range gone {
		fmt.Fprintf(a.stdout, "Revoked %s (%s).\n", r.ID(), r.Digest)
	}
	fmt.Fprintln(a.stdout, "Its snapshot stays until `berth gc`.")
	return nil
}

// revokeJSON is what revoke --json prints.
type revokeJSON struct {
	Revoked []*store.Record `json:"revoked"`
}
