package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/store"
)

func (a *app) policyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use: "policy",
		Example: `  berth policy set 'acme-notes-notes__search_*' allow
  berth policy list
  berth policy unset 'acme-notes-notes__search_*'`,
		Short: "Set, list and remove the operator's tool policy",
		Long: `The tool policy decides which calls run without asking. Each rule names a
tool by its exported name (<plugin>-<server>__<tool>) or a glob of names
('*' any run of characters, '?' one), with an action:

  allow  runs without asking (a destructiveHint: true tool still asks unless
         the rule names it exactly)
  ask    asks a human each time (the default for a tool no rule names)
  deny   refuses it; it is not even listed

An exact rule wins over globs; among globs the most restrictive wins.
Rules live in $BERTH_HOME/config.json; running berth processes apply a
change at their next boundary.`,
		Args: exactArgs(0, "a subcommand: set, list or unset"),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	var setJSON, unsetJSON bool
	set := &cobra.Command{
		Use: "set PATTERN allow|ask|deny",
		Example: `  berth policy set acme-notes-notes__read_note allow
  berth policy set 'acme-notes-notes__delete_*' deny`,
		Short: "Add or change the rule for a tool name or glob",
		Args:  exactArgs(2, "PATTERN and an action (allow, ask or deny)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			r := store.PolicyRule{Pattern: args[0], Action: store.Action(args[1])}
			if err := store.CheckPolicyRule(r); err != nil {
				return usagef("%v", err)
			}
			st, err := a.store()
			if err != nil {
				return err
			}
			if err := st.SetPolicy(cmd.Context(), r); err != nil {
				return err
			}
			if setJSON {
				return writeJSON(a.stdout, r)
			}
			fmt.Fprintf(a.stdout, "Policy: %s %s.\n", r.Pattern, r.Action)
			return nil
		},
	}
	a.jsonFlag(set, &setJSON, store.PolicyRule{})
	var asJSON bool
	list := &cobra.Command{
		Use: "list",
		Example: `  berth policy list
  berth policy list --json`,
		Short: "List the tool policy",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
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
			if asJSON {
				return writeJSON(a.stdout, policyJSON{Default: store.ActionAsk, Rules: rules})
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PATTERN\tACTION")
			for _, r := range rules {
				fmt.Fprintf(tw, "%s\t%s\n", r.Pattern, r.Action)
			}
			fmt.Fprintf(tw, "(any other tool)\t%s\n", store.ActionAsk)
			return tw.Flush()
		},
	}
	a.jsonFlag(list, &asJSON, policyJSON{})
	unset := &cobra.Command{
		Use:     "unset PATTERN",
		Example: `  berth policy unset acme-notes-notes__read_note`,
		Short:   "Remove the rule for a tool name or glob",
		Args:    exactArgs(1, "one PATTERN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := a.store()
			if err != nil {
				return err
			}
			found, err := st.UnsetPolicy(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("there is no rule for %s; berth policy list shows the rules", args[0])
			}
			if unsetJSON {
				return writeJSON(a.stdout, policyUnsetJSON{Pattern: args[0], Removed: true})
			}
			fmt.Fprintf(a.stdout, "Removed the rule for %s.\n", args[0])
			return nil
		},
	}
	a.jsonFlag(unset, &unsetJSON, policyUnsetJSON{})
	cmd.AddCommand(set, list, unset)
	return cmd
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
