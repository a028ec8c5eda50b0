package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/marketplace"
)

// configKeys are the settings berth config sets, with what each means.
var configKeys = map[string]string{
	"min-release-age": "the cooldown of catalog installs: versions released less long ago are skipped (a Go duration like 72h, or days like 3d; 0 for none)",
}

// configJSON is what config get --json prints.
type configJSON struct {
	// MinReleaseAge is the cooldown, a Go duration; "0s" means none.
	MinReleaseAge string `json:"minReleaseAge"`
}

func newConfigCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Set the operator's settings in config.json (min-release-age)",
		Long: `Config reads and sets the operator's settings kept in $BERTH_HOME/config.json:

  min-release-age   ` + configKeys["min-release-age"] + `

Signers and the tool policy have their own commands (berth signers,
berth policy).`,
		Example: `  berth config set min-release-age 3d
  berth config get min-release-age
  berth config set min-release-age 0`,
		Args: exactArgs(0, "a subcommand: set or get"),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	var setJSON bool
	set := &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Set a setting",
		Long: `Set sets KEY to VALUE in config.json, under berth's lock; running berth
processes pick it up. Keys:

  min-release-age   ` + configKeys["min-release-age"],
		Example: `  berth config set min-release-age 72h
  berth config set min-release-age 7d`,
		Args: exactArgs(2, "KEY and VALUE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "min-release-age" {
				return usagef("%q is not a setting; berth config set knows min-release-age", args[0])
			}
			d := time.Duration(0)
			if args[1] != "0" {
				var err error
				if d, err = marketplace.ParseDuration(args[1]); err != nil {
					return usagef("min-release-age: %v (0 turns the cooldown off)", err)
				}
			}
			st, err := a.store()
			if err != nil {
				return err
			}
			if err := st.SetMinReleaseAge(cmd.Context(), d); err != nil {
				return err
			}
			if setJSON {
				return writeJSON(a.stdout, configJSON{MinReleaseAge: d.String()})
			}
			if d == 0 {
				fmt.Fprintln(a.stdout, "min-release-age is off: berth install may pick a version released a moment ago.")
			} else {
				fmt.Fprintf(a.stdout, "min-release-age is %s: berth install, sync and upgrade skip versions released less than %s ago.\n", d, d)
			}
			return nil
		},
	}
	a.jsonFlag(set, &setJSON, configJSON{})
	var getJSON bool
	get := &cobra.Command{
		Use:     "get [KEY]",
		Short:   "Print a setting, or every one",
		Example: "  berth config get\n  berth config get min-release-age --json",
		Args:    rangeArgs(0, 1, "at most one KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && args[0] != "min-release-age" {
				return usagef("%q is not a setting; berth config knows min-release-age", args[0])
			}
			st, err := a.store()
			if err != nil {
				return err
			}
			cfg, err := st.Config()
			if err != nil {
				return err
			}
			d, err := cfg.ReleaseCooldown()
			if err != nil {
				return err
			}
			if getJSON {
				return writeJSON(a.stdout, configJSON{MinReleaseAge: d.String()})
			}
			if len(args) == 1 {
				fmt.Fprintln(a.stdout, d)
				return nil
			}
			fmt.Fprintf(a.stdout, "min-release-age  %s\n", d)
			return nil
		},
	}
	a.jsonFlag(get, &getJSON, configJSON{})
	cmd.AddCommand(set, get)
	return cmd
}
