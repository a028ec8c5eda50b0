package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/store"
)

func (a *app) revokeCommand() *cobra.Command {
	var asJSON bool
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
			name, version, err := parseRef(args[0])
			if err != nil {
				return err
			}
			st, err := a.store()
			if err != nil {
				return err
			}
			gone, err := st.Revoke(cmd.Context(), name, version)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, revokeJSON{Revoked: gone})
			}
			for _, r := range gone {
				fmt.Fprintf(a.stdout, "Revoked %s (%s).\n", r.ID(), r.Digest)
			}
			fmt.Fprintln(a.stdout, "Its snapshot stays until `berth gc`.")
			return nil
		},
	}
	a.jsonFlag(cmd, &asJSON, revokeJSON{})
	return cmd
}

// revokeJSON is what revoke --json prints.
type revokeJSON struct {
	Revoked []*store.Record `json:"revoked"`
}
