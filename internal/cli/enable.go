package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/pool"
)

func (a *app) enableCommand() *cobra.Command {
	var workspace string
	var asJSON bool
	cmd := &cobra.Command{
		Use: "enable NAME[@VERSION]",
		Example: `  berth enable acme-notes
  berth enable acme-notes@1.4.2 --workspace ~/src/project`,
		Short: "Enable a trusted plugin in a workspace",
		Long: `Enable attaches a trusted plugin's staged snapshot to a workspace (default:
the current directory). Without @VERSION it takes the highest trusted
version. Enabling another version replaces the enabled one. The first time
its servers start there, berth pins their tool surface; a later change is
withheld until 'berth accept'.

Running berth processes pick the change up at their next boundary.
Exit code 4 means the plugin is not trusted (trust it with 'berth trust').`,
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
			res, err := pool.Enable(cmd.Context(), st, workspace, name, version)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, enableJSON{Already: res.Already, Digest: res.Record.Digest, Name: res.Record.Name, Replaced: res.Replaced, Version: res.Record.Version, Workspace: res.Workspace})
			}
			switch {
			case res.Already:
				fmt.Fprintf(a.stdout, "%s is already enabled in %s.\n", res.Record.ID(), res.Workspace)
			case res.Replaced != "":
				fmt.Fprintf(a.stdout, "Enabled %s in %s (replacing %s).\n", res.Record.ID(), res.Workspace, res.Replaced)
			default:
				fmt.Fprintf(a.stdout, "Enabled %s in %s.\n", res.Record.ID(), res.Workspace)
			}
			return nil
		},
	}
	workspaceFlag(cmd, &workspace)
	a.jsonFlag(cmd, &asJSON, enableJSON{})
	return cmd
}

func (a *app) disableCommand() *cobra.Command {
	var workspace string
	var asJSON bool
	cmd := &cobra.Command{
		Use: "disable NAME",
		Example: `  berth disable acme-notes
  berth disable acme-notes --workspace ~/src/project --json`,
		Short: "Disable a plugin in a workspace",
		Long: `Disable detaches a plugin from a workspace (default: the current directory).
Running berth processes notice at their next boundary (within a fraction
of a second): its tools vanish, its calls in flight are cancelled and its
servers are terminated with their whole process group.`,
		Args: exactArgs(1, "one NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, _, err := parseRef(args[0])
			if err != nil {
				return err
			}
			st, err := a.store()
			if err != nil {
				return err
			}
			ws, err := pool.Workspace(workspace)
			if err != nil {
				return err
			}
			gone, err := pool.Disable(cmd.Context(), st, ws, name)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, disableJSON{Name: name, Version: gone.Version, Workspace: ws})
			}
			fmt.Fprintf(a.stdout, "Disabled %s@%s in %s.\n", name, gone.Version, ws)
			return nil
		},
	}
	workspaceFlag(cmd, &workspace)
	a.jsonFlag(cmd, &asJSON, disableJSON{})
	return cmd
}

// enableJSON is what enable --json prints.
type enableJSON struct {
	Already   bool   `json:"already"`
	Digest    string `json:"digest"`
	Name      string `json:"name"`
	Replaced  string `json:"replaced"`
	Version   string `json:"version"`
	Workspace string `json:"workspace"`
}

// disableJSON is what disable --json prints.
type disableJSON struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Workspace string `json:"workspace"`
}
