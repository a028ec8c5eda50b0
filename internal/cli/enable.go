package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
)

func newEnableCmd(a *app) *cobra.Command {
	opts := &enableOptions{}
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

Enable lists every rule of the tool policy that applies to the plugin's
tools, prompts and resources (the rules that belong to it), so that nothing
runs under a rule you did not expect. Running berth processes pick the
change up at their next boundary.

When the plugin names a secret that berth's secret store holds for other
plugins only, enable asks on a terminal whether it may use it; off a
terminal, or with --json, it binds nothing and prints the command that
does ('berth secret bind NAME --plugin PLUGIN').

Enable is where you commit to running a plugin berth imported from
another format, so it asks, on a terminal, for each value the plugin asks
you to confirm and you have not yet (its publisher's fixed environment
values, NODE_ENV=production, and its MCP Bundle options that are not
sensitive; Enter takes the publisher's value). Off a terminal, or with
--json, --confirm NAME (the publisher's value) or --confirm NAME=VALUE
confirms one (repeatable); a value left unconfirmed is named on stderr,
and the servers that read it do not start until 'berth confirm PLUGIN'.
berth trust never asks: it runs nothing.
Exit code 4 means the plugin is not trusted (trust it with 'berth trust').`,
		Args: exactArgs(1, "one NAME[@VERSION]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ref = args[0]
			return runEnable(cmd.Context(), a, opts)
		},
	}
	workspaceFlag(cmd, &opts.Workspace)
	cmd.Flags().StringArrayVar(&opts.Confirm, "confirm", nil, confirmFlagUsage)
	a.jsonFlag(cmd, &opts.JSON, enableJSON{})
	return cmd
}

// enableOptions are the inputs of berth enable.
type enableOptions struct {
	// Ref is the positional argument.
	Ref       string
	JSON      bool
	Workspace string
	// Confirm are the NAME and NAME=VALUE of --confirm.
	Confirm []string
}

func runEnable(ctx context.Context, a *app, opts *enableOptions) error {
	name, version, err := parseRef(opts.Ref)
	if err != nil {
		return err
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	if len(opts.Confirm) > 0 {
		recs, err := st.Find(name, version)
		if err != nil {
			return err
		}
		if err := checkGiven(st, recs[len(recs)-1], opts.Confirm); err != nil {
			return err
		}
	}
	res, err := pool.Enable(ctx, st, opts.Workspace, name, version)
	if err != nil {
		return err
	}
	cfg, err := st.Config()
	if err != nil {
		return err
	}
	rules := enableRules(cfg.ToolPolicy, res.Record)
	old := 0
	for _, r := range cfg.ToolPolicy {
		if r.Plugin == "" {
			old++
		}
	}
	if opts.JSON {
		a.offerSecrets(st, res.Record, false, true)
		if err := a.confirmAfterEnable(ctx, st, res.Record, opts.Confirm, true); err != nil {
			return err
		}
		return writeJSON(a.stdout, enableJSON{Already: res.Already, Digest: res.Record.Digest, Name: res.Record.Name, Replaced: res.Replaced, Version: res.Record.Version, Workspace: res.Workspace, Rules: rules, OldRules: old})
	}
	switch {
	case res.Already:
		fmt.Fprintf(a.stdout, "%s is already enabled in %s.\n", res.Record.ID(), res.Workspace)
	case res.Replaced != "":
		fmt.Fprintf(a.stdout, "Enabled %s in %s (replacing %s).\n", res.Record.ID(), res.Workspace, res.Replaced)
	default:
		fmt.Fprintf(a.stdout, "Enabled %s in %s.\n", res.Record.ID(), res.Workspace)
	}
	for _, rv := range res.SkippedRevoked {
		fmt.Fprintf(a.stdout, "(skipped %s@%s: revoked by catalog %s, %s)\n", rv.Name, rv.Version, rv.Catalog, review.Printable(rv.Reason))
	}
	a.sayRules(name, rules, old)
	a.offerSecrets(st, res.Record, false, false)
	return a.confirmAfterEnable(ctx, st, res.Record, opts.Confirm, false)
}

func newDisableCmd(a *app) *cobra.Command {
	opts := &disableOptions{}
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
			opts.Name = args[0]
			return runDisable(cmd.Context(), a, opts)
		},
	}
	workspaceFlag(cmd, &opts.Workspace)
	a.jsonFlag(cmd, &opts.JSON, disableJSON{})
	return cmd
}

// disableOptions are the inputs of berth disable.
type disableOptions struct {
	// Name is the positional argument.
	Name      string
	JSON      bool
	Workspace string
}

func runDisable(ctx context.Context, a *app, opts *disableOptions) error {
	name, _, err := parseRef(opts.Name)
	if err != nil {
		return err
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	ws, err := pool.Workspace(opts.Workspace)
	if err != nil {
		return err
	}
	gone, err := pool.Disable(ctx, st, ws, name)
	if err != nil {
		return err
	}
	a.forgetUnusedSignins(ctx, st, name)
	if opts.JSON {
		return writeJSON(a.stdout, disableJSON{Name: name, Version: gone.Version, Workspace: ws})
	}
	fmt.Fprintf(a.stdout, "Disabled %s@%s in %s.\n", name, gone.Version, ws)
	return nil
}

// enableJSON is what enable --json prints.
type enableJSON struct {
	Already  bool   `json:"already"`
	Digest   string `json:"digest"`
	Name     string `json:"name"`
	Replaced string `json:"replaced"`
	// Rules are the rules of the tool policy that apply to the plugin.
	Rules []enableRule `json:"rules"`
	// OldRules counts rules of the old form, which stop every tool until
	// berth policy migrate.
	OldRules  int    `json:"oldRules"`
	Version   string `json:"version"`
	Workspace string `json:"workspace"`
}

// sayRulesOf is sayRules for the plugin of rec, enabled by install, sync
// or upgrade, as berth enable says them.
func (a *app) sayRulesOf(st *store.Store, rec *store.Record) error {
	cfg, err := st.Config()
	if err != nil {
		return err
	}
	old := 0
	for _, r := range cfg.ToolPolicy {
		if r.Plugin == "" {
			old++
		}
	}
	a.sayRules(rec.Name, enableRules(cfg.ToolPolicy, rec), old)
	return nil
}

// sayRules prints the rules of the tool policy that apply to a plugin just
// enabled, and how many rules of the old form stop every tool.
func (a *app) sayRules(name string, rules []enableRule, old int) {
	if len(rules) == 0 {
		fmt.Fprintf(a.stdout, "No rule of the tool policy applies to %s: every call asks (berth policy set '%s__*' ...).\n", name, name)
	} else {
		fmt.Fprintf(a.stdout, "These rules of the tool policy apply to the tools, prompts and resources of %s:\n", name)
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		for _, r := range rules {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", r.Pattern, r.Action, r.Note)
		}
		tw.Flush()
	}
	if old > 0 {
		fmt.Fprintf(a.stdout, "The tool policy has %d rule(s) of the old form: no tool runs until `berth policy migrate` rewrites them.\n", old)
	}
}

// enableRule is a rule that applies to a newly enabled plugin.
type enableRule struct {
	Pattern string       `json:"pattern"`
	Action  store.Action `json:"action"`
	// Note says when an allow does not apply as written: it was set for
	// another signer, so it asks.
	Note string `json:"note,omitempty"`
}

// enableRules lists the rules that apply to the plugin of rec.
func enableRules(rules []store.PolicyRule, rec *store.Record) []enableRule {
	out := []enableRule{}
	for _, r := range store.RulesOf(rules, rec.Name) {
		e := enableRule{Pattern: r.Pattern, Action: r.Action}
		if r.Action == store.ActionAllow && r.Signer != rec.SignerIdentity() {
			e.Note = "(set for another signer: it asks)"
		}
		out = append(out, e)
	}
	return out
}

// disableJSON is what disable --json prints.
type disableJSON struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Workspace string `json:"workspace"`
}
