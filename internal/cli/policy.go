package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/store"
)

const policyLong = `The tool policy decides which calls run without asking. Each rule belongs
to one plugin and names that plugin's tools and prompts by their exported
name (<plugin>__<server>__<tool>), or by a glob of names ('*' any run of
characters, '?' one) that starts with the plugin's name and '__'. The
resources of a server are decided by the rule for <plugin>__<server>.

  allow  runs without asking (a destructiveHint: true tool still asks unless
         the rule names it exactly); it needs the plugin trusted, and holds
         only for versions from the signer of its latest trusted version
  ask    asks a human each time (the default for a tool no rule names)
  deny   refuses it; it is not even listed

A rule never matches another plugin's names: 'acme-notes__*' does not reach
a plugin acme-notes-x, and a pattern that does not name one plugin (like
'acme-*' or '*') is refused. An exact rule wins over globs; among globs the
most restrictive wins. Rules live in $BERTH_HOME/config.json; running berth
processes apply a change at their next boundary.`

func newPolicyCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use: "policy",
		Example: `  berth policy set 'acme-notes__notes__search_*' allow
  berth policy list
  berth policy unset 'acme-notes__notes__search_*'
  berth policy migrate`,
		Short: "Set, list and remove the operator's tool policy",
		Long:  policyLong,
		Args:  exactArgs(0, "a subcommand: set, list, unset or migrate"),
		RunE:  func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newPolicySetCmd(a), newPolicyListCmd(a), newPolicyUnsetCmd(a), newPolicyMigrateCmd(a))
	return cmd
}

// policySetOptions are the inputs of berth policy set.
type policySetOptions struct {
	Rule store.PolicyRule
	JSON bool
}

func newPolicySetCmd(a *app) *cobra.Command {
	opts := &policySetOptions{}
	cmd := &cobra.Command{
		Use: "set PATTERN allow|ask|deny",
		Example: `  berth policy set acme-notes__notes__read_note allow
  berth policy set 'acme-notes__notes__delete_*' deny
  berth policy set 'acme-notes__*' ask --json`,
		Short: "Add or change the rule for a name or glob of one plugin",
		Args:  exactArgs(2, "PATTERN and an action (allow, ask or deny)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Rule = store.PolicyRule{Pattern: args[0], Action: store.Action(args[1])}
			return runPolicySet(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, store.PolicyRule{})
	return cmd
}

func runPolicySet(ctx context.Context, a *app, opts *policySetOptions) error {
	r := opts.Rule
	if err := store.CheckPolicySyntax(r.Pattern, r.Action); err != nil {
		return usagef("%v", err)
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	if err := st.SetPolicy(ctx, r); err != nil {
		var se *store.PolicyScopeError
		if errors.As(err, &se) {
			return usagef("%s", scopeHint(se, r.Action))
		}
		return err
	}
	if opts.JSON {
		// The rule as stored: with the plugin it belongs to and,
		// for an allow, the signer it holds for.
		cfg, err := st.Config()
		if err != nil {
			return err
		}
		if i := slices.IndexFunc(cfg.ToolPolicy, func(x store.PolicyRule) bool { return x.Pattern == r.Pattern }); i >= 0 {
			r = cfg.ToolPolicy[i]
		}
		return writeJSON(a.stdout, r)
	}
	fmt.Fprintf(a.stdout, "Policy: %s %s.\n", r.Pattern, r.Action)
	return nil
}

// policyListOptions are the inputs of berth policy list.
type policyListOptions struct {
	JSON bool
}

func newPolicyListCmd(a *app) *cobra.Command {
	opts := &policyListOptions{}
	cmd := &cobra.Command{
		Use: "list",
		Example: `  berth policy list
  berth policy list --json`,
		Short: "List the tool policy",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPolicyList(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, policyJSON{})
	return cmd
}

func runPolicyList(_ context.Context, a *app, opts *policyListOptions) error {
	st, err := a.store()
	if err != nil {
		return err
	}
	cfg, err := st.Config()
	if err != nil {
		return err
	}
	rules := cfg.ToolPolicy
	if rules == nil {
		rules = []store.PolicyRule{}
	}
	if opts.JSON {
		return writeJSON(a.stdout, policyJSON{Default: store.ActionAsk, Rules: rules})
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATTERN\tACTION\tPLUGIN")
	old := 0
	for _, r := range rules {
		plugin := r.Plugin
		if plugin == "" {
			plugin, old = "(old form: berth policy migrate)", old+1
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Pattern, r.Action, plugin)
	}
	fmt.Fprintf(tw, "(any other name)\t%s\t\n", store.ActionAsk)
	if err := tw.Flush(); err != nil {
		return err
	}
	if old > 0 {
		fmt.Fprintf(a.stdout, "\n%d rule(s) of the old form name no plugin: berth runs no tool until `berth policy migrate` rewrites them or `berth policy unset` removes them.\n", old)
	}
	return nil
}

// policyUnsetOptions are the inputs of berth policy unset.
type policyUnsetOptions struct {
	Pattern string
	JSON    bool
}

func newPolicyUnsetCmd(a *app) *cobra.Command {
	opts := &policyUnsetOptions{}
	cmd := &cobra.Command{
		Use:     "unset PATTERN",
		Example: `  berth policy unset acme-notes__notes__read_note`,
		Short:   "Remove the rule for a name or glob",
		Args:    exactArgs(1, "one PATTERN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Pattern = args[0]
			return runPolicyUnset(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, policyUnsetJSON{})
	return cmd
}

func runPolicyUnset(ctx context.Context, a *app, opts *policyUnsetOptions) error {
	st, err := a.store()
	if err != nil {
		return err
	}
	found, err := st.UnsetPolicy(ctx, opts.Pattern)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("there is no rule for %s; berth policy list shows the rules", opts.Pattern)
	}
	if opts.JSON {
		return writeJSON(a.stdout, policyUnsetJSON{Pattern: opts.Pattern, Removed: true})
	}
	fmt.Fprintf(a.stdout, "Removed the rule for %s.\n", opts.Pattern)
	return nil
}

const policyMigrateLong = `Migrate rewrites the tool policy rules that a berth before rules belonged
to one plugin wrote (no plugin; names <plugin>-<server>__<tool> and
<plugin>__<tool>), using the plugins trusted now. It never widens what a rule
allows: a rule that names one server's tools up to the tool part keeps
what it matched ('acme-notes-notes__search_*' becomes
'acme-notes__notes__search_*'); a deny or ask with wider wildcards covers
all of its plugin ('acme-notes-*' deny becomes 'acme-notes__*' deny); every
other rule is kept and reported, and berth runs no tool until it is
removed or set again in the new form. docs/pool.md, "Migrating rules",
has the details.`

// policyMigrateOptions are the inputs of berth policy migrate.
type policyMigrateOptions struct {
	JSON bool
}

func newPolicyMigrateCmd(a *app) *cobra.Command {
	opts := &policyMigrateOptions{}
	cmd := &cobra.Command{
		Use: "migrate",
		Example: `  berth policy migrate
  berth policy migrate --json`,
		Short: "Rewrite rules of the old form into rules of one plugin",
		Long:  policyMigrateLong,
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPolicyMigrate(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, []store.PolicyMigration{})
	return cmd
}

func runPolicyMigrate(ctx context.Context, a *app, opts *policyMigrateOptions) error {
	st, err := a.store()
	if err != nil {
		return err
	}
	ms, err := st.MigratePolicy(ctx)
	if err != nil {
		return err
	}
	if ms == nil {
		ms = []store.PolicyMigration{}
	}
	kept := 0
	for _, m := range ms {
		if m.Kept != "" {
			kept++
		}
	}
	if opts.JSON {
		if err := writeJSON(a.stdout, ms); err != nil {
			return err
		}
	} else {
		a.printMigrations(ms)
	}
	if kept > 0 {
		return fmt.Errorf("%d rule(s) could not be rewritten without widening what they allow or guessing their plugin; berth runs no tool until you remove them with `berth policy unset PATTERN` (and set what you mean in the new form)", kept)
	}
	return nil
}

// printMigrations says what policy migrate rewrote and kept.
func (a *app) printMigrations(ms []store.PolicyMigration) {
	if len(ms) == 0 {
		fmt.Fprintln(a.stdout, "The tool policy has no rule of the old form.")
	}
	for _, m := range ms {
		if m.Kept != "" {
			fmt.Fprintf(a.stdout, "kept      %s %s: %s\n", m.Old.Pattern, m.Old.Action, m.Kept)
			continue
		}
		var to []string
		for _, n := range m.New {
			to = append(to, n.Pattern)
		}
		if len(to) == 0 {
			to = []string{"(a rule of the new form for it is there already)"}
		}
		fmt.Fprintf(a.stdout, "rewrote   %s %s -> %s\n", m.Old.Pattern, m.Old.Action, strings.Join(to, ", "))
	}
}

// scopeHint words a refused pattern with the commands to type instead.
func scopeHint(se *store.PolicyScopeError, action store.Action) string {
	var b strings.Builder
	fmt.Fprintf(&b, "the pattern %q does not name one plugin: ", se.Pattern)
	switch len(se.Plugins) {
	case 0:
		b.WriteString("it could match the names of any plugin trusted later whose name fits it.")
	case 1:
		fmt.Fprintf(&b, "it could match the names of %s, and of any plugin trusted later whose name fits it.", se.Plugins[0])
	default:
		fmt.Fprintf(&b, "it could match the names of %s (and of plugins trusted later).", strings.Join(se.Plugins, " and "))
	}
	b.WriteString("\nA rule belongs to one plugin and matches only its names, <plugin>__<server>__<tool>; start the pattern with the plugin's name and '__':")
	if len(se.Scoped) == 0 {
		fmt.Fprintf(&b, "\n  berth policy set 'acme-notes__*' %s", action)
	}
	for i, s := range se.Scoped {
		fmt.Fprintf(&b, "\n  berth policy set '%s' %s    # %s", s, action, se.Plugins[i])
	}
	return b.String()
}

// policyJSON is what policy list --json prints.
type policyJSON struct {
	Default store.Action       `json:"default"`
	Rules   []store.PolicyRule `json:"rules"`
}

// policyUnsetJSON is what policy unset --json prints.
type policyUnsetJSON struct {
	Pattern string `json:"pattern"`
	// Removed is true: a pattern without a rule is an error (exit 1).
	Removed bool `json:"removed"`
}
