package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/store"
)

// configKeys are the settings berth config sets, with what each means.
var configKeys = map[string]string{
	"min-release-age":                 "the cooldown of catalog installs: versions released less long ago are skipped (a Go duration like 72h, or days like 3d; 0 for none)",
	"fetch-allow-scripts":             "the npm packages (NAME[,NAME...]; none for none) whose install scripts run, confined, when a fetched server's tree is resolved at trust",
	"approval-notify":                 "on or off (default off): berth serve shows a desktop notification (notify-send; osascript on macOS) when a call starts waiting for approval, naming the tool, plugin and client, never the arguments",
	store.SandboxKeyUndeclaredNetwork: "open or none (default open): the network of a local server that declares none in its sandbox",
	store.SandboxKeyRequire:           "on or off (default off): on refuses to start a local server that declares no sandbox or that this host cannot confine in full",
	store.SandboxKeyUnconfined:        "the servers (PLUGIN__SERVER, comma-separated) the operator runs unconfined, with the operator's rights; \"\" clears it",
	store.SandboxKeyUpstreamProxy:     "http://HOST:PORT: the proxy berth's egress proxy connects through for servers with a host list; \"\" for none",
}

// configKeyOrder is the order berth config lists its keys in.
var configKeyOrder = append([]string{"min-release-age", "fetch-allow-scripts", "approval-notify"}, store.SandboxKeys...)

// configHelp lists every key with its meaning, for the commands' help.
func configHelp() string {
	var b strings.Builder
	for _, k := range configKeyOrder {
		fmt.Fprintf(&b, "  %-27s %s\n", k, configKeys[k])
	}
	return b.String()
}

// configJSON is what config get --json and config set --json print
// (docs/sandbox.md §Configuration for the sandbox fields).
type configJSON struct {
	// MinReleaseAge is the cooldown, a Go duration; "0s" means none.
	MinReleaseAge string `json:"minReleaseAge"`
	// FetchAllowScripts are the npm packages whose install scripts may run
	// (confined) at trust; [] for none.
	FetchAllowScripts []string `json:"fetchAllowScripts"`
	// SandboxUndeclaredNetwork is "open" or "none".
	SandboxUndeclaredNetwork string `json:"sandboxUndeclaredNetwork"`
	// SandboxRequire is whether every local server must declare a sandbox
	// and be confined in full.
	SandboxRequire bool `json:"sandboxRequire"`
	// SandboxUnconfined are the servers the operator runs unconfined.
	SandboxUnconfined []string `json:"sandboxUnconfined"`
	// SandboxUpstreamProxy is the egress proxy's upstream, "" for none.
	SandboxUpstreamProxy string `json:"sandboxUpstreamProxy"`
	// ApprovalNotify is whether berth serve shows a desktop notification
	// of each call that starts waiting for approval.
	ApprovalNotify bool `json:"approvalNotify"`
}

func newConfigJSON(d time.Duration, cfg *store.Config) configJSON {
	sb := cfg.SandboxOf()
	return configJSON{MinReleaseAge: d.String(), FetchAllowScripts: nonNilStrings(cfg.FetchAllowScripts),
		SandboxUndeclaredNetwork: sb.Value(store.SandboxKeyUndeclaredNetwork),
		SandboxRequire:           sb.Require, SandboxUnconfined: nonNilStrings(sb.Unconfined), SandboxUpstreamProxy: sb.UpstreamProxy,
		ApprovalNotify: cfg.ApprovalNotify}
}

func newConfigCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Set the operator's settings in config.json (min-release-age, fetch-allow-scripts, sandbox-*)",
		Long: `Config reads and sets the operator's settings kept in $BERTH_HOME/config.json:

` + configHelp() + `
The sandbox keys are explained in docs/sandbox.md (Configuration).
Signers and the tool policy have their own commands (berth signers,
berth policy).`,
		Example: `  berth config set min-release-age 3d
  berth config get min-release-age
  berth config set min-release-age 0
  berth config set fetch-allow-scripts esbuild
  berth config set approval-notify on
  berth config set sandbox-undeclared-network none
  berth config set sandbox-require on
  berth config set sandbox-unconfined notes__legacy
  berth config set sandbox-upstream-proxy http://proxy.internal:3128`,
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

` + configHelp(),
		Example: `  berth config set min-release-age 72h
  berth config set min-release-age 7d
  berth config set sandbox-require on
  berth config set sandbox-unconfined ""`,
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
	if _, ok := configKeys[opts.Key]; !ok {
		return usagef("%q is not a setting; berth config set knows %s", opts.Key, strings.Join(configKeyOrder, ", "))
	}
	switch opts.Key {
	case "fetch-allow-scripts":
		return runConfigSetAllowScripts(ctx, a, opts)
	case "approval-notify":
		return runConfigSetApprovalNotify(ctx, a, opts)
	case "min-release-age":
	default:
		return runConfigSetSandbox(ctx, a, opts)
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
		return writeJSON(a.stdout, newConfigJSON(d, cfg))
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
	if len(opts.Keys) == 1 {
		if _, ok := configKeys[opts.Keys[0]]; !ok {
			return usagef("%q is not a setting; berth config knows %s", opts.Keys[0], strings.Join(configKeyOrder, ", "))
		}
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
	sb := cfg.SandboxOf()
	if opts.JSON {
		return writeJSON(a.stdout, newConfigJSON(d, cfg))
	}
	value := func(k string) string {
		switch k {
		case "min-release-age":
			return d.String()
		case "approval-notify":
			return onOff(cfg.ApprovalNotify)
		case "fetch-allow-scripts":
			if len(cfg.FetchAllowScripts) == 0 {
				return "none"
			}
			return strings.Join(cfg.FetchAllowScripts, ",")
		}
		return sb.Value(k)
	}
	if len(opts.Keys) == 1 {
		fmt.Fprintln(a.stdout, value(opts.Keys[0]))
		return nil
	}
	for _, k := range configKeyOrder {
		v := value(k)
		if v == "" {
			v = `""`
		}
		fmt.Fprintf(a.stdout, "%-27s %s\n", k, v)
	}
	return nil
}

// runConfigSetSandbox sets one sandbox-* key.
func runConfigSetSandbox(ctx context.Context, a *app, opts *configSetOptions) error {
	probe := store.SandboxSettings{}
	if err := store.ParseSandboxSetting(&probe, opts.Key, opts.Value); err != nil {
		return usagef("%v", err)
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	sb, err := st.SetSandbox(ctx, opts.Key, opts.Value)
	if err != nil {
		return err
	}
	if opts.JSON {
		cfg, err := st.Config()
		if err != nil {
			return err
		}
		d, err := cfg.ReleaseCooldown()
		if err != nil {
			return err
		}
		return writeJSON(a.stdout, newConfigJSON(d, cfg))
	}
	switch opts.Key {
	case store.SandboxKeyUndeclaredNetwork:
		if sb.UndeclaredNetwork == "none" {
			fmt.Fprintln(a.stdout, "sandbox-undeclared-network is none: a local server that declares no network gets none (a namespace with only loopback) from its next start.")
		} else {
			fmt.Fprintln(a.stdout, "sandbox-undeclared-network is open: a local server that declares no network keeps the host's network (shown as undeclared by berth status).")
		}
	case store.SandboxKeyRequire:
		if sb.Require {
			fmt.Fprintln(a.stdout, "sandbox-require is on: a local server that declares no sandbox, or that this host cannot confine in full, is refused from its next start (berth status says which).")
		} else {
			fmt.Fprintln(a.stdout, "sandbox-require is off: servers without a declaration run under the default profile.")
		}
	case store.SandboxKeyUnconfined:
		if len(sb.Unconfined) == 0 {
			fmt.Fprintln(a.stdout, "sandbox-unconfined is empty: every local server runs confined where this host can (berth status says what is in effect).")
		} else {
			fmt.Fprintf(a.stdout, "sandbox-unconfined is %s: these servers run with your rights, unconfined, from their next start.\n", strings.Join(sb.Unconfined, ","))
		}
	case store.SandboxKeyUpstreamProxy:
		if sb.UpstreamProxy == "" {
			fmt.Fprintln(a.stdout, "sandbox-upstream-proxy is unset: berth's egress proxy connects directly.")
		} else {
			fmt.Fprintf(a.stdout, "sandbox-upstream-proxy is %s: berth's egress proxy connects through it.\n", sb.UpstreamProxy)
		}
	}
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
		return writeJSON(a.stdout, newConfigJSON(d, cfg))
	}
	if len(cfg.FetchAllowScripts) == 0 {
		fmt.Fprintln(a.stdout, "fetch-allow-scripts is none: a fetched package with an install script is refused at trust.")
	} else {
		fmt.Fprintf(a.stdout, "fetch-allow-scripts is %s: their install scripts run at trust, confined to their tree with no network; any other package with one is refused.\n", strings.Join(cfg.FetchAllowScripts, ","))
	}
	return nil
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// runConfigSetApprovalNotify sets approval-notify.
func runConfigSetApprovalNotify(ctx context.Context, a *app, opts *configSetOptions) error {
	var on bool
	switch opts.Value {
	case "on":
		on = true
	case "off":
	default:
		return usagef("approval-notify is on or off, not %q", opts.Value)
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	cfg, err := st.SetApprovalNotify(ctx, on)
	if err != nil {
		return err
	}
	if opts.JSON {
		d, err := cfg.ReleaseCooldown()
		if err != nil {
			return err
		}
		return writeJSON(a.stdout, newConfigJSON(d, cfg))
	}
	if on {
		fmt.Fprintln(a.stdout, "approval-notify is on: berth serve shows a desktop notification when a call starts waiting for approval (restart berth serve to apply it).")
	} else {
		fmt.Fprintln(a.stdout, "approval-notify is off: berth serve shows no desktop notification.")
	}
	return nil
}
