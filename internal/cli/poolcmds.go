package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
)

// workspaceFlag adds --workspace, defaulting to the current directory.
func workspaceFlag(cmd *cobra.Command, dst *string) {
	cmd.Flags().StringVar(dst, "workspace", ".", "the workspace `DIR` (made absolute and symlink-resolved)")
}

// openPool opens the workspace's pool and waits for its servers' first
// start. The caller must Close it.
func (a *app) openPool(ctx context.Context, workspace string) (*pool.Pool, error) {
	st, err := a.store()
	if err != nil {
		return nil, err
	}
	p, err := pool.Open(ctx, st, workspace, &pool.Options{LookupEnv: os.LookupEnv})
	if err != nil {
		return nil, err
	}
	if err := p.WaitStarted(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (a *app) enableCommand() *cobra.Command {
	var workspace string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "enable NAME[@VERSION]",
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
				return writeJSON(a.stdout, map[string]any{"name": res.Record.Name, "version": res.Record.Version, "digest": res.Record.Digest,
					"workspace": res.Workspace, "already": res.Already, "replaced": res.Replaced})
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
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"name", "version", "digest", "workspace", "already", "replaced"}`)
	return cmd
}

func (a *app) disableCommand() *cobra.Command {
	var workspace string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "disable NAME",
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
				return writeJSON(a.stdout, map[string]any{"name": name, "version": gone.Version, "workspace": ws})
			}
			fmt.Fprintf(a.stdout, "Disabled %s@%s in %s.\n", name, gone.Version, ws)
			return nil
		},
	}
	workspaceFlag(cmd, &workspace)
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"name", "version", "workspace"}`)
	return cmd
}

func (a *app) statusCommand() *cobra.Command {
	var workspace string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Start the workspace's servers and report their state",
		Long: `Status opens the pool of a workspace (default: the current directory),
starts every enabled server, waits for each one's first start, and reports
its state (starting, running, failed, drifted, changed, stopped),
transport, tool count, uptime, restarts and last error, with the stderr
tail of failed servers, withheld tool changes and name collisions.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := a.openPool(cmd.Context(), workspace)
			if err != nil {
				return err
			}
			defer p.Close()
			sts := p.Status()
			if asJSON {
				if sts == nil {
					sts = []pool.ServerStatus{}
				}
				return writeJSON(a.stdout, map[string]any{"workspace": p.WorkspaceDir(), "servers": sts})
			}
			if len(sts) == 0 {
				fmt.Fprintf(a.stdout, "Nothing is enabled in %s. Enable a trusted plugin with: berth enable NAME\n", p.WorkspaceDir())
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SERVER\tSTATE\tTRANSPORT\tTOOLS\tUPTIME\tRESTARTS\tLAST ERROR")
			for _, s := range sts {
				up := "-"
				if !s.StartedAt.IsZero() {
					up = time.Since(s.StartedAt).Round(time.Second).String()
				}
				last := "-"
				if s.LastError != "" {
					last = oneLine(review.PrintableLines(s.LastError), 60)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%s\n", s.ID, s.State, orDash(string(s.Transport)), s.Tools, up, s.Restarts, last)
			}
			tw.Flush()
			for _, s := range sts {
				a.statusDetail(s)
			}
			return nil
		},
	}
	workspaceFlag(cmd, &workspace)
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"workspace", "servers": [...]} with every field`)
	return cmd
}

// statusDetail prints what the table cuts: whole errors, stderr tails,
// withheld changes and collisions.
func (a *app) statusDetail(s pool.ServerStatus) {
	w := a.stdout
	if s.LastError != "" && s.State != pool.StateRunning {
		fmt.Fprintf(w, "\n%s %s: %s\n", s.ID, s.State, review.PrintableLines(s.LastError))
		switch {
		case s.State == pool.StateFailed && !s.GaveUp:
			fmt.Fprintf(w, "  berth restarts it in %s (restart %d of %d).\n", time.Until(s.NextRestart).Round(100*time.Millisecond), s.RestartsInRow, pool.MaxRestarts)
		case s.State == pool.StateFailed:
			fmt.Fprintf(w, "  berth gave up; fix the cause, then run berth again. berth logs %s shows its stderr.\n", s.ID)
		}
		if len(s.StderrTail) > 0 && s.State == pool.StateFailed {
			tail := s.StderrTail
			if len(tail) > 10 {
				tail = tail[len(tail)-10:]
			}
			fmt.Fprintln(w, "  stderr (last lines):")
			for _, l := range tail {
				fmt.Fprintf(w, "    %s\n", review.PrintableLines(l))
			}
		}
	}
	if len(s.Changes) > 0 {
		fmt.Fprintf(w, "\n%s changed: %d tool(s) differ from the pinned surface and are withheld; review them with: berth accept %s\n", s.ID, len(s.Changes), s.Plugin)
		for _, c := range s.Changes {
			fmt.Fprintf(w, "  %s (%s)\n", review.PrintableLines(c.Tool), c.Kind)
		}
	}
	for _, n := range s.Collisions {
		fmt.Fprintf(w, "\n%s: the tool name %s is also another server's, so neither is offered; disable one of the plugins\n", s.ID, n)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine shortens s to one line of at most n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func (a *app) toolsCommand() *cobra.Command {
	var workspace string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tools [PLUGIN]",
		Short: "List the workspace's tools with their policy",
		Long: `Tools starts the workspace's servers and lists the catalog: every tool
under its exported name <plugin>-<server>__<tool> (a native tool:
<plugin>__<tool>), with the operator's policy for it (allow or ask; denied
tools are not listed). Tools withheld because they changed since they were
pinned, or because their names collide, are counted; 'berth status' says
why.`,
		Args: rangeArgs(0, 1, "at most one PLUGIN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := a.openPool(cmd.Context(), workspace)
			if err != nil {
				return err
			}
			defer p.Close()
			tools, err := p.Tools(cmd.Context())
			if err != nil {
				return err
			}
			out := []*pool.Tool{}
			for _, t := range tools {
				if len(args) == 0 || t.Plugin == args[0] {
					out = append(out, t)
				}
			}
			if asJSON {
				return writeJSON(a.stdout, out)
			}
			if len(out) == 0 {
				fmt.Fprintln(a.stdout, "No tools. berth status shows the state of each server.")
			} else {
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TOOL\tPOLICY\tDESCRIPTION")
				for _, t := range out {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.Policy, oneLine(review.PrintableLines(t.Definition.Description), 70))
				}
				tw.Flush()
			}
			withheld := 0
			for _, s := range p.Status() {
				if len(args) == 0 || s.Plugin == args[0] {
					withheld += len(s.Changes) + len(s.Collisions)
				}
			}
			if withheld > 0 {
				fmt.Fprintf(a.stdout, "%d tool(s) withheld; berth status shows why.\n", withheld)
			}
			return nil
		},
	}
	workspaceFlag(cmd, &workspace)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the catalog as JSON, with definitions and policies")
	return cmd
}

// cliApprover approves calls for `berth call`: what the policy allows by
// itself, what --yes approves, or what the operator confirms on a
// terminal.
type cliApprover struct {
	a   *app
	yes bool
}

func (c cliApprover) Approve(ctx context.Context, req *pool.ApprovalRequest) (pool.Decision, error) {
	if pool.AllowedByPolicy(req) {
		return pool.Decision{Allow: true, By: "policy"}, nil
	}
	if c.yes {
		return pool.Decision{Allow: true, By: "--yes"}, nil
	}
	if !c.a.isTerminal() {
		return pool.Decision{By: "berth call", Reason: fmt.Sprintf("the policy for %s is %s and berth is not on a terminal, so it cannot ask; pass --yes to approve this call", req.Tool, req.Policy)}, nil
	}
	w := c.a.stdout
	fmt.Fprintf(w, "Call %s?\n", req.Tool)
	on := "server"
	if req.Native {
		on = "native tool provider"
	}
	fmt.Fprintf(w, "  tool:        %s on %s %s of plugin %s\n", review.PrintableLines(req.UpstreamTool), on, req.Server, req.Plugin)
	fmt.Fprintf(w, "  arguments:   %s\n", req.Arguments)
	fmt.Fprintf(w, "  annotations: %s\n", annotationText(req.Annotations))
	fmt.Fprintf(w, "  policy:      %s\n", req.Policy)
	ok, err := c.a.ask("Run it?")
	if err != nil {
		return pool.Decision{}, err
	}
	if ok {
		return pool.Decision{Allow: true, By: "terminal"}, nil
	}
	return pool.Decision{By: "terminal", Reason: "the operator said no"}, nil
}

func annotationText(an *mcp.ToolAnnotations) string {
	if an == nil {
		return "none"
	}
	var parts []string
	if an.Title != "" {
		parts = append(parts, fmt.Sprintf("title %q", an.Title))
	}
	if an.ReadOnlyHint {
		parts = append(parts, "readOnlyHint")
	}
	if an.IdempotentHint {
		parts = append(parts, "idempotentHint")
	}
	if an.DestructiveHint != nil {
		parts = append(parts, fmt.Sprintf("destructiveHint=%v", *an.DestructiveHint))
	}
	if an.OpenWorldHint != nil {
		parts = append(parts, fmt.Sprintf("openWorldHint=%v", *an.OpenWorldHint))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// callArgs builds the arguments object from --args or --arg k=v. A value
// is a string when the tool's input schema says the property is a string;
// otherwise JSON when it parses as JSON, else a string.
func callArgs(raw string, kvs []string, schema any) (json.RawMessage, error) {
	if raw != "" && len(kvs) > 0 {
		return nil, usagef("use either --args JSON or --arg k=v, not both")
	}
	if raw != "" {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &m); err != nil || m == nil {
			return nil, usagef("--args must be a JSON object, like '{\"text\": \"hi\"}'")
		}
		return json.RawMessage(raw), nil
	}
	props := map[string]any{}
	if s, ok := schema.(map[string]any); ok {
		if p, ok := s["properties"].(map[string]any); ok {
			props = p
		}
	}
	obj := map[string]json.RawMessage{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--arg %q is not k=v", kv)
		}
		isString := false
		if p, ok := props[k].(map[string]any); ok && p["type"] == "string" {
			isString = true
		}
		if !isString && json.Valid([]byte(v)) {
			obj[k] = json.RawMessage(v)
			continue
		}
		b, _ := json.Marshal(v)
		obj[k] = b
	}
	b, err := json.Marshal(obj)
	return b, err
}

func (a *app) callCommand() *cobra.Command {
	var workspace, rawArgs string
	var kvs []string
	var yes, asJSON bool
	cmd := &cobra.Command{
		Use:   "call TOOL",
		Short: "Call one tool of the workspace",
		Long: `Call starts the workspace's servers and calls one tool by its exported name
(berth tools lists them), with arguments from --args JSON or --arg k=v
(repeatable; a value is a string when the tool's schema says so, else JSON
when it parses as JSON, else a string).

The operator's policy decides: allow runs, ask asks on a terminal (showing
the tool, server, arguments and annotations) and needs --yes without one,
deny refuses. A destructive tool (destructiveHint: true) asks even when a
glob allows it; only an exact-name allow skips that.

Exit codes: 0 ok, 1 the tool failed (its error text is printed), 5 the
plugin drifted or the tool changed since it was pinned, 6 the call was
refused.`,
		Args: exactArgs(1, "one TOOL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if rawArgs != "" && len(kvs) > 0 {
				return usagef("use either --args JSON or --arg k=v, not both")
			}
			ctx := cmd.Context()
			p, err := a.openPool(ctx, workspace)
			if err != nil {
				return err
			}
			defer p.Close()
			var schema any
			if len(kvs) > 0 {
				if tools, err := p.Tools(ctx); err == nil {
					for _, t := range tools {
						if t.Name == args[0] {
							schema = t.Definition.InputSchema
						}
					}
				}
			}
			body, err := callArgs(rawArgs, kvs, schema)
			if err != nil {
				return err
			}
			res, err := p.Call(ctx, args[0], body, cliApprover{a: a, yes: yes})
			if err != nil {
				return err
			}
			if asJSON {
				if err := writeJSON(a.stdout, res); err != nil {
					return err
				}
			} else if !res.IsError {
				writeResult(a.stdout, res)
			}
			if res.IsError {
				msg := resultText(res)
				if !asJSON {
					fmt.Fprintf(a.stderr, "berth: the tool %s failed: %s\n", args[0], msg)
				}
				return &reported{fmt.Errorf("the tool %s failed: %s", args[0], msg)}
			}
			return nil
		},
	}
	workspaceFlag(cmd, &workspace)
	cmd.Flags().StringVar(&rawArgs, "args", "", "the arguments as a JSON object")
	cmd.Flags().StringArrayVar(&kvs, "arg", nil, "one argument as k=v (repeatable)")
	cmd.Flags().BoolVar(&yes, "yes", false, "approve the call without asking (needed without a terminal when the policy says ask)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the MCP CallToolResult as JSON")
	return cmd
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// writeResult prints a tool result for a person: text as is, other
// content described.
func writeResult(w io.Writer, res *mcp.CallToolResult) {
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			fmt.Fprintln(w, c.Text)
		case *mcp.ImageContent:
			fmt.Fprintf(w, "[image %s, %d bytes]\n", c.MIMEType, len(c.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(w, "[audio %s, %d bytes]\n", c.MIMEType, len(c.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(w, "[resource link %s]\n", c.URI)
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				fmt.Fprintf(w, "[resource %s]\n%s\n", c.Resource.URI, c.Resource.Text)
			}
		default:
			b, _ := json.Marshal(c)
			fmt.Fprintln(w, string(b))
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		b, _ := json.MarshalIndent(res.StructuredContent, "", "  ")
		fmt.Fprintln(w, string(b))
	}
}

var serverIDRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,127}$`)

func (a *app) logsCommand() *cobra.Command {
	var lines int
	cmd := &cobra.Command{
		Use:   "logs PLUGIN-SERVER",
		Short: "Print the stderr tail of a server",
		Long: `Logs prints the last lines of a server's log, $BERTH_HOME/logs/<plugin>-<server>.log
(a native tool provider's: <plugin>__<entry>.log, with go-plugin's lines):
its stderr and berth's own lines about it (started, exited, restarts), from
every berth process that ran it. berth status lists the server names.`,
		Args: exactArgs(1, "one PLUGIN-SERVER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			if !serverIDRe.MatchString(id) {
				return usagef("%q is not a server name like acme-notes-notes (berth status lists them)", id)
			}
			if lines <= 0 {
				return usagef("--lines must be positive")
			}
			st, err := a.store()
			if err != nil {
				return err
			}
			path := st.Paths().Log(id)
			tail, err := pool.TailLog(path, lines)
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("there is no log of %s yet (%s); berth writes it when the server starts, for example with berth status", id, path)
			}
			if err != nil {
				return err
			}
			for _, l := range tail {
				fmt.Fprintln(a.stdout, l)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&lines, "lines", pool.TailLines, "how many lines to print")
	return cmd
}

func (a *app) acceptCommand() *cobra.Command {
	var workspace string
	var yes, asJSON bool
	cmd := &cobra.Command{
		Use:   "accept NAME",
		Short: "Review and accept a plugin's changed tools",
		Long: `Accept starts the plugin's servers in a workspace, shows every tool whose
definition (description, schemas, annotations) differs from the surface
pinned when the plugin was enabled, and every tool added since, asks for
confirmation (on a terminal; otherwise --yes is required, exit 2), and
records the new surface. Until then those tools are withheld.`,
		Args: exactArgs(1, "one NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, _, err := parseRef(args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			p, err := a.openPool(ctx, workspace)
			if err != nil {
				return err
			}
			defer p.Close()
			var changes []pool.ToolChange
			enabled := false
			for _, s := range p.Status() {
				if s.Plugin == name {
					enabled = true
					changes = append(changes, s.Changes...)
				}
			}
			if !enabled {
				return fmt.Errorf("%s is not enabled in %s, so there is nothing to accept (berth enable %s)", name, p.WorkspaceDir(), name)
			}
			if len(changes) == 0 {
				if asJSON {
					return writeJSON(a.stdout, map[string]any{"accepted": []pool.ToolChange{}})
				}
				fmt.Fprintf(a.stdout, "Nothing to accept: the tools of %s match their pinned surface.\n", name)
				return nil
			}
			if !asJSON || !yes {
				a.showChanges(changes)
			}
			if err := a.confirm(fmt.Sprintf("Accept these %d tool definition(s) of %s?", len(changes), name), yes, "--yes"); err != nil {
				return err
			}
			if err := p.Accept(ctx, name, changes); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, map[string]any{"accepted": changes})
			}
			fmt.Fprintf(a.stdout, "Accepted %d tool change(s) of %s; those tools are offered again.\n", len(changes), name)
			return nil
		},
	}
	workspaceFlag(cmd, &workspace)
	cmd.Flags().BoolVar(&yes, "yes", false, "accept without asking (required without a terminal)")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"accepted": [changes]}`)
	return cmd
}

func (a *app) showChanges(changes []pool.ToolChange) {
	w := a.stdout
	for _, c := range changes {
		id := c.ID
		if id == "" {
			id = pool.ServerID(c.Plugin, c.Server)
		}
		if c.Kind == pool.ChangeAdded {
			fmt.Fprintf(w, "%s: new tool %s (not in the pinned surface)\n", id, review.PrintableLines(c.Tool))
		} else {
			fmt.Fprintf(w, "%s: %s changed since it was pinned\n  pinned: %s\n  now:    %s\n", id, review.PrintableLines(c.Tool), c.Pinned, c.Live)
		}
		d := c.Definition
		fmt.Fprintf(w, "  description:  %s\n", review.PrintableLines(d.Description))
		in, _ := json.Marshal(d.InputSchema)
		fmt.Fprintf(w, "  input schema: %s\n", review.PrintableLines(string(in)))
		if d.OutputSchema != nil {
			out, _ := json.Marshal(d.OutputSchema)
			fmt.Fprintf(w, "  output schema: %s\n", review.PrintableLines(string(out)))
		}
		fmt.Fprintf(w, "  annotations:  %s\n", annotationText(d.Annotations))
	}
}

func (a *app) policyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
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
	set := &cobra.Command{
		Use:   "set PATTERN allow|ask|deny",
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
			fmt.Fprintf(a.stdout, "Policy: %s %s.\n", r.Pattern, r.Action)
			return nil
		},
	}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
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
				return writeJSON(a.stdout, map[string]any{"rules": rules, "default": store.ActionAsk})
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
	list.Flags().BoolVar(&asJSON, "json", false, `print {"rules": [{"pattern", "action"}], "default": "ask"}`)
	unset := &cobra.Command{
		Use:   "unset PATTERN",
		Short: "Remove the rule for a tool name or glob",
		Args:  exactArgs(1, "one PATTERN"),
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
			fmt.Fprintf(a.stdout, "Removed the rule for %s.\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(set, list, unset)
	return cmd
}
