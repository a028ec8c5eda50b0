package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/mcpexport"
)

func (a *app) queue() (*mcpexport.Queue, error) {
	paths, err := a.paths()
	if err != nil {
		return nil, err
	}
	return mcpexport.NewQueue(paths.Approvals()), nil
}

func (a *app) approvalsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use: "approvals",
		Example: `  berth approvals
  berth approvals --json`,
		Short: "List tool calls waiting for approval",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			q, err := a.queue()
			if err != nil {
				return err
			}
			list, err := q.List()
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []*mcpexport.Pending{}
				}
				return writeJSON(a.stdout, list)
			}
			if len(list) == 0 {
				fmt.Fprintln(a.stdout, "No tool call is waiting for approval.")
				return nil
			}
			now := time.Now()
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTOOL\tCLIENT\tAGE\tTIMES OUT")
			for _, p := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.ID, p.Tool, p.Client, p.Age(now), p.Deadline.Local().Format(time.TimeOnly))
			}
			tw.Flush()
			for _, p := range list {
				fmt.Fprintf(a.stdout, "\n%s  %s (%s)\n  annotations: %s\n  arguments:\n    %s\n", p.ID, p.Tool, p.Server, p.Annotations, strings.ReplaceAll(p.Arguments, "\n", "\n    "))
			}
			fmt.Fprintln(a.stdout, "\nApprove with: berth approve ID [--always]   Refuse with: berth deny ID")
			return nil
		},
	}
	a.jsonFlag(cmd, &asJSON, []*mcpexport.Pending{})
	return cmd
}

func (a *app) approveCommand(allow bool) *cobra.Command {
	var always, asJSON bool
	use, short := "deny ID", "Refuse a tool call waiting for approval"
	if allow {
		use, short = "approve ID", "Run a tool call waiting for approval"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + `. The waiting call resumes at once.
'berth approvals' lists the waiting calls and their IDs.` + map[bool]string{true: `
--always also sets the policy to allow this exact tool from now on.`}[allow],
		Example: map[bool]string{true: `  berth approve k7f3-9q2x
  berth approve k7f3-9q2x --always --json`, false: `  berth deny k7f3-9q2x`}[allow],
		Args: exactArgs(1, "one ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			q, err := a.queue()
			if err != nil {
				return err
			}
			by := "berth " + map[bool]string{true: "approve", false: "deny"}[allow]
			if u := a.getenv("USER"); u != "" {
				by += " (" + u + ")"
			}
			p, err := q.Decide(args[0], allow, always, by)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, decisionJSON{ID: p.ID, Tool: p.Tool, Allowed: allow, Always: allow && always, By: by})
			}
			switch {
			case allow && always:
				fmt.Fprintf(a.stdout, "Approved %s (%s); %s is now allowed always.\n", p.ID, p.Tool, p.Tool)
			case allow:
				fmt.Fprintf(a.stdout, "Approved %s (%s) once.\n", p.ID, p.Tool)
			default:
				fmt.Fprintf(a.stdout, "Denied %s (%s).\n", p.ID, p.Tool)
			}
			return nil
		},
	}
	if allow {
		cmd.Flags().BoolVar(&always, "always", false, "also allow this exact tool from now on")
	}
	a.jsonFlag(cmd, &asJSON, decisionJSON{})
	return cmd
}

// decisionJSON is what approve --json and deny --json print.
type decisionJSON struct {
	// ID is the approval's ID.
	ID   string `json:"id"`
	Tool string `json:"tool"`
	// Allowed is true for approve, false for deny.
	Allowed bool `json:"allowed"`
	// Always reports approve --always: the tool is now allowed by policy.
	Always bool `json:"always"`
	// By is who decided, as the audit log records it.
	By string `json:"by"`
}
