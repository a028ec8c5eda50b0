package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/mcpexport"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
)

func (a *app) queue() (*mcpexport.Queue, error) {
	paths, err := a.paths()
	if err != nil {
		return nil, err
	}
	return mcpexport.NewQueue(paths.Approvals()), nil
}

func newApprovalsCmd(a *app) *cobra.Command {
	opts := &approvalsOptions{}
	cmd := &cobra.Command{
		Use: "approvals [--full ID] [--json] [--watch]",
		Example: `  berth approvals
  berth approvals --full k7f3-9q2x
  berth approvals --json
  berth approvals --watch`,
		Short: "List tool calls waiting for approval",
		Long: `Approvals lists the tool calls waiting for approval: the tool, the
plugin's version and the workspace whose berth serve asks, the client
(the name it gives itself, which nothing checks), the transport it came
over and whether its session is authenticated, and the arguments, exactly
as the plugin's server would receive them. Arguments too long to list are
shown key by key with their sizes; --full ID shows one call's whole.
--json prints the calls with their arguments as JSON objects, whole (with
--full ID, that one call: one object of the list).

--watch stays on the terminal and shows each call as it arrives (what it
runs, the plugin, the client, the profile, the arguments key by key) and
takes one key: a approves once, A approves always (as berth approve
--always), d denies, i shows the whole arguments, s skips to the next
call, q or Ctrl-C quits (the calls still waiting stay waiting). It needs a
terminal (stdin and stdout); off one it refuses (exit 1). With
berth config set approval-notify on, berth serve also shows a desktop
notification of each waiting call (docs/serve.md §Approvals).`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runApprovals(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, []*mcpexport.Pending{})
	cmd.Flags().StringVar(&opts.Full, "full", "", "show one pending call with its whole arguments")
	cmd.Flags().BoolVar(&opts.Watch, "watch", false, "stay on the terminal: show each waiting call as it arrives and answer it with one key")
	return cmd
}

// approvalsOptions are the inputs of berth approvals.
type approvalsOptions struct {
	JSON  bool
	Full  string
	Watch bool
}

func runApprovals(ctx context.Context, a *app, opts *approvalsOptions) error {
	if opts.Watch && (opts.JSON || opts.Full != "") {
		return usagef("--watch is interactive: it takes neither --json nor --full")
	}
	q, err := a.queue()
	if err != nil {
		return err
	}
	if opts.Watch {
		return a.runWatch(ctx, q)
	}
	if opts.Full != "" {
		p, err := q.Get(opts.Full)
		if err != nil {
			return err
		}
		if opts.JSON {
			return writeJSON(a.stdout, p)
		}
		a.showPending(p, true)
		fmt.Fprintf(a.stdout, "\nApprove with: berth approve %s [--always]   Refuse with: berth deny %s\n", p.ID, p.ID)
		return nil
	}
	list, err := q.List()
	if err != nil {
		return err
	}
	if opts.JSON {
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
	fmt.Fprintln(tw, "ID\tTOOL\tVERSION\tCLIENT (SELF-DECLARED)\tTRANSPORT\tAUTHENTICATED\tSESSION\tPROFILE\tAGE\tTIMES OUT\tWORKSPACE")
	for _, p := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, pendingWhat(p), review.Printable(orUnknown(p.Version)), p.Client, orUnknown(p.Transport), authenticated(p), orUnknown(p.Session), review.Printable(pendingProfile(p)), p.Age(now), p.Deadline.Local().Format(time.TimeOnly), review.Printable(orUnknown(p.Workspace)))
	}
	tw.Flush()
	for _, p := range list {
		a.showPending(p, false)
	}
	fmt.Fprintln(a.stdout, "\nApprove with: berth approve ID [--always]   Refuse with: berth deny ID")
	return nil
}

// showPending prints one pending call; whole shows all of its arguments.
func (a *app) showPending(p *mcpexport.Pending, whole bool) { a.showPendingTo(a.stdout, p, whole) }

// showPendingTo is showPending to w.
func (a *app) showPendingTo(w io.Writer, p *mcpexport.Pending, whole bool) {
	args := mcpexport.PrettyArguments(p.Arguments)
	if !whole {
		args, _ = mcpexport.ShowArguments(p.Arguments, maxListedArgs, p.ID)
	}
	fmt.Fprintf(w, "\n%s  %s (%s)\n  plugin:      %s %s\n  workspace:   %s\n  profile:     %s\n  client:      %q (as it names itself), session %s\n  transport:   %s, %s\n  annotations: %s\n  arguments (%s):\n    %s\n",
		p.ID, pendingWhat(p), p.Server, review.Printable(orUnknown(p.Plugin)), review.Printable(orUnknown(p.Version)), review.Printable(orUnknown(p.Workspace)), review.Printable(pendingProfile(p)), p.Client, orUnknown(p.Session), orUnknown(p.Transport), authWords(p), p.DescribeAnnotations(), p.ArgumentsDigest, strings.ReplaceAll(args, "\n", "\n    "))
}

// pendingWhat names what a pending request asks for: a tool by its
// name, a prompt and a resource by their kind, a resource by its URI.
func pendingWhat(p *mcpexport.Pending) string {
	switch p.Kind {
	case pool.RequestPrompt:
		return "prompt " + p.Tool
	case pool.RequestResource:
		return "resource " + review.Printable(p.URI)
	}
	return p.Tool
}

// maxListedArgs is how many bytes of pretty-printed arguments `berth
// approvals` shows per call before it summarizes them.
const maxListedArgs = 4000

// pendingProfile names the profile a waiting call's session is offered:
// "workspace" for the whole workspace.
func pendingProfile(p *mcpexport.Pending) string {
	if p.Profile == "" {
		return mcpexport.WorkspaceView
	}
	return p.Profile
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func authenticated(p *mcpexport.Pending) string {
	if p.Authenticated {
		return "yes"
	}
	return "NO"
}

func authWords(p *mcpexport.Pending) string {
	switch {
	case p.Transport == mcpexport.TransportStdio:
		return "authenticated (the client started berth serve)"
	case p.Authenticated:
		return "authenticated with the bearer token"
	}
	return "NOT authenticated (no token: anyone who could reach the listener)"
}

func newApproveCmd(a *app, allow bool) *cobra.Command {
	opts := &approveOptions{Allow: allow}
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
			opts.ID = args[0]
			return runApprove(cmd.Context(), a, opts)
		},
	}
	if allow {
		cmd.Flags().BoolVar(&opts.Always, "always", false, "also allow this exact tool from now on")
	}
	a.jsonFlag(cmd, &opts.JSON, decisionJSON{})
	return cmd
}

// approveOptions are the inputs of berth approve and berth deny.
type approveOptions struct {
	// ID is the positional argument.
	ID           string
	Allow        bool
	Always, JSON bool
}

func runApprove(_ context.Context, a *app, opts *approveOptions) error {
	q, err := a.queue()
	if err != nil {
		return err
	}
	by := a.decider("berth " + map[bool]string{true: "approve", false: "deny"}[opts.Allow])
	p, err := q.Decide(opts.ID, opts.Allow, opts.Always, by)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, decisionJSON{ID: p.ID, Kind: p.Kind, Tool: p.Tool, URI: p.URI, Allowed: opts.Allow, Always: opts.Allow && opts.Always, By: by})
	}
	switch {
	case opts.Allow && opts.Always:
		fmt.Fprintf(a.stdout, "Approved %s (%s); %s is now allowed always.\n", p.ID, pendingWhat(p), p.Tool)
	case opts.Allow:
		fmt.Fprintf(a.stdout, "Approved %s (%s) once.\n", p.ID, pendingWhat(p))
	default:
		fmt.Fprintf(a.stdout, "Denied %s (%s).\n", p.ID, pendingWhat(p))
	}
	return nil
}

// decisionJSON is what approve --json and deny --json print.
type decisionJSON struct {
	// ID is the approval's ID.
	ID string `json:"id"`
	// Kind, Tool and URI are what was asked for, as in approvals --json.
	Kind pool.RequestKind `json:"kind,omitempty"`
	Tool string           `json:"tool"`
	URI  string           `json:"uri,omitempty"`
	// Allowed is true for approve, false for deny.
	Allowed bool `json:"allowed"`
	// Always reports approve --always: the tool is now allowed by policy.
	Always bool `json:"always"`
	// By is who decided, as the audit log records it.
	By string `json:"by"`
}
