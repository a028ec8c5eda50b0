package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/marketplace/repo"
)

// configKeys are the settings berth config sets, with what each means.
var configKeys = map[string]string{
	"min-release-age":     "the cooldown of catalog installs: versions released less long ago are skipped (a Go duration like 72h, or days like 3d; 0 for none)",
	"fetch-allow-scripts": "the npm packages (NAME[,NAME...]; none for none) whose install scripts run, confined, when a fetched server's tree is resolved at trust",
}

// configJSON is what config get --json prints.
type configJSON struct {
	// MinReleaseAge is the cooldown, a Go duration; "0s" means none.
	MinReleaseAge string `json:"minReleaseAge"`
	// FetchAllowScripts are the packages whose install scripts may run.
	FetchAllowScripts []string `json:"fetchAllowScripts"`
}

func newConfigCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Set the operator's settings in config.json (min-release-age)",
		Long: `Config reads and sets the operator's settings kept in $BERTH_HOME/config.json:

  min-release-age       ` + configKeys["min-release-age"] + `
  fetch-allow-scripts   ` + configKeys["fetch-allow-scripts"] + `

Signers and the tool policy have their own commands (berth signers,
berth policy).`,
		Example: `  berth config set min-release-age 3d
  berth config get min-release-age
  berth config set min-release-age 0`,
		Args: exactArgs(0, "a subcommand: set or get"),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newConfigSetCmd(a), newConfigGetCmd(a))
	return cmd
}

// configSetOptions are the inputs of berth config set.
type configSetOptions struct {
	Key, Value string
	JSON       bool
}

func newConfigSetCmd(a *app) *cobra.Command {
	opts := &configSetOptions{}
	cmd := &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Set a setting",
		Long: `Set sets KEY to VALUE in config.json, under berth's lock; running berth
processes pick it up. Keys:

  min-release-age       ` + configKeys["min-release-age"] + `
  fetch-allow-scripts   ` + configKeys["fetch-allow-scripts"],
		Example: `  berth config set min-release-age 72h
  berth config set min-release-age 7d`,
		Args: exactArgs(2, "KEY and VALUE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Key, opts.Value = args[0], args[1]
			return runConfigSet(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, configJSON{})
	return cmd
}

func runConfigSet(ctx context.Context, a *app, opts *configSetOptions) error {
	if opts.Key == "fetch-allow-scripts" {
		return runConfigSetAllowScripts(ctx, a, opts)
	}
	if opts.Key != "min-release-age" {
		return usagef("%q is not a setting; berth config set knows min-release-age and fetch-allow-scripts", opts.Key)
	}
	d := time.Duration(0)
	if opts.Value != "0" {
		var err error
		if d, err = repo.ParseDuration(opts.Value); err != nil {
			return usagef("min-release-age: %v (0 turns the cooldown off)", err)
		}
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	if err := st.SetMinReleaseAge(ctx, d); err != nil {
		return err
	}
	if opts.JSON {
		cfg, err := st.Config()
		if err != nil {
			return err
		}
		return writeJSON(a.stdout, configJSON{MinReleaseAge: d.String(), FetchAllowScripts: nonNilStrings(cfg.FetchAllowScripts)})
	}
	if d == 0 {
		fmt.Fprintln(a.stdout, "min-release-age is off: berth install may pick a version released a moment ago.")
	} else {
		fmt.Fprintf(a.stdout, "min-release-age is %s: berth install, sync and upgrade skip versions released less than %s ago.\n", d, d)
	}
	return nil
}

// configGetOptions are the inputs of berth config get.
type configGetOptions struct {
	// Keys are the settings to print: none (every one) or one.
	Keys []string
	JSON bool
}

func newConfigGetCmd(a *app) *cobra.Command {
	opts := &configGetOptions{}
	cmd := &cobra.Command{
		Use:     "get [KEY]",
		Short:   "Print a setting, or every one",
		Example: "  berth config get\n  berth config get min-release-age --json",
		Args:    rangeArgs(0, 1, "at most one KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Keys = args
			return runConfigGet(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, configJSON{})
	return cmd
}

func runConfigGet(_ context.Context, a *app, opts *configGetOptions) error {
	if len(opts.Keys) == 1 && configKeys[opts.Keys[0]] == "" {
		return usagef("%q is not a setting; berth config knows min-release-age and fetch-allow-scripts", opts.Keys[0])
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
	allow := "none"
	if len(cfg.FetchAllowScripts) > 0 {
		allow = strings.Join(cfg.FetchAllowScripts, ",")
	}
	if opts.JSON {
		return writeJSON(a.stdout, configJSON{MinReleaseAge: d.String(), FetchAllowScripts: nonNilStrings(cfg.FetchAllowScripts)})
	}
	if len(opts.Keys) == 1 {
		if opts.Keys[0] == "fetch-allow-scripts" {
			fmt.Fprintln(a.stdout, allow)
		} else {
			fmt.Fprintln(a.stdout, d)
		}
		return nil
	}
	fmt.Fprintf(a.stdout, "min-release-age      %s\nfetch-allow-scripts  %s\n", d, allow)
	return nil
}

// runConfigSetAllowScripts sets fetch-allow-scripts: NAME[,NAME...], or
// none.
func runConfigSetAllowScripts(ctx context.Context, a *app, opts *configSetOptions) error {
	var names []string
	if v := strings.TrimSpace(opts.Value); v != "none" && v != "" {
		for n := range strings.SplitSeq(v, ",") {
			names = append(names, strings.TrimSpace(n))
		}
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	cfg, err := st.SetFetchAllowScripts(ctx, names)
	if err != nil {
		return usagef("fetch-allow-scripts: %v (NAME[,NAME...] of npm packages, or none)", err)
	}
	d, err := cfg.ReleaseCooldown()
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, configJSON{MinReleaseAge: d.String(), FetchAllowScripts: nonNilStrings(cfg.FetchAllowScripts)})
	}
	if len(cfg.FetchAllowScripts) == 0 {
		fmt.Fprintln(a.stdout, "fetch-allow-scripts is none: a fetched package with an install script is refused at trust.")
	} else {
		fmt.Fprintf(a.stdout, "fetch-allow-scripts is %s: their install scripts run at trust, confined to their tree with no network; any other package with one is refused.\n", strings.Join(cfg.FetchAllowScripts, ","))
	}
	return nil
}
