package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/berth-mcp/berth/mcpexport"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
)

// toolJSON is one tool of tools --json: the catalog entry and whether a
// call of it asks first.
type toolJSON struct {
	*pool.Tool
	// Asks reports that a call asks for approval: the policy is ask, or
	// it is a glob allow and the tool is destructive.
	Asks bool `json:"asks"`
	// AsksWhy says why a call asks although a glob allows the tool.
	AsksWhy string `json:"asksWhy,omitempty"`
	// ContextBytes is the size of the tool's tools/list entry as berth
	// lists it, and EstimatedTokens the tokens estimated from it (bytes /
	// 4, rounded up; docs/profiles.md §Context cost). Not a catalog's
	// contextTokens, which is the curator's estimate.
	ContextBytes    int `json:"contextBytes"`
	EstimatedTokens int `json:"estimatedTokens"`
}

func newToolsCmd(a *app) *cobra.Command {
	opts := &toolsOptions{}
	cmd := &cobra.Command{
		Use:   "tools [PLUGIN]",
		Short: "List the workspace's tools with their policy",
		Long: `Tools starts the workspace's servers and lists the catalog: every tool
under its exported name <plugin>__<server>__<tool> (a native tool:
<plugin>__<entry>__<tool>), with the operator's policy for it (allow or ask;
denied tools are not listed). On a terminal the table cuts descriptions
so that each line fits its width (80 when unknown); elsewhere at 70
characters; --wide prints them whole. A tool that says destructiveHint still asks
under a glob allow; tools says so, and only an exact allow (berth policy set
NAME allow) skips the question. Tools withheld because they changed since
they were pinned, or because their names collide, are counted; 'berth
status' says why.

With PLUGIN, only that plugin's tools; a PLUGIN that is not enabled in the
workspace is an error (exit 1), found before any server starts.

Below the tools, their context cost: per plugin, the bytes of its tools'
tools/list entries exactly as berth serve lists them, the tokens estimated
from those bytes (bytes / 4, rounded up: an estimate, since each model has
its own tokenizer), and, for a plugin installed from a catalog, that
catalog's own contextTokens estimate beside it; then the total, and what
lazy mode (berth serve --tools lazy) lists instead; without PLUGIN, what
each profile of the workspace lists in its mode. With --profile NAME,
only the tools the workspace's profile NAME offers, and what that profile
lists in its mode (docs/profiles.md §Context cost).`,
		Example: `  berth tools
  berth tools acme-notes --json
  berth tools --profile desktop`,
		Args: rangeArgs(0, 1, "at most one PLUGIN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Args = args
			return runTools(cmd.Context(), a, opts)
		},
	}
	workspaceFlag(cmd, &opts.Workspace)
	cmd.Flags().BoolVar(&opts.Wide, "wide", false, "print whole descriptions (the table cuts them to the terminal's width, or at 70 characters off a terminal)")
	cmd.Flags().StringVar(&opts.Profile, "profile", "", "only the tools of the workspace's profile `NAME`, and its context cost in its mode")
	a.jsonFlag(cmd, &opts.JSON, []toolJSON{})
	return cmd
}

// toolsOptions are the inputs of berth tools.
type toolsOptions struct {
	// Args are the positional arguments: none, or one PLUGIN.
	Args       []string
	JSON, Wide bool
	Workspace  string
	// Profile names the workspace's profile whose tools are listed.
	Profile string
}

func runTools(ctx context.Context, a *app, opts *toolsOptions) error {
	profile, err := a.toolsProfile(opts)
	if err != nil {
		return err
	}
	p, err := a.openPool(ctx, opts.Workspace, !opts.JSON)
	if err != nil {
		return err
	}
	defer p.Close()
	all, err := p.Tools(ctx)
	if err != nil {
		return err
	}
	var tools []*pool.Tool
	for _, t := range all {
		if (len(opts.Args) == 0 || t.Plugin == opts.Args[0]) && profile.Includes(t.Plugin, t.Name) {
			tools = append(tools, t)
		}
	}
	out := toolRows(tools)
	if opts.JSON {
		return writeJSON(a.stdout, out)
	}
	if err := a.printTools(p, out, tools, profile, opts); err != nil {
		return err
	}
	withheld := 0
	for _, s := range p.Status() {
		if (len(opts.Args) == 0 || s.Plugin == opts.Args[0]) && profile.IncludesPlugin(s.Plugin) {
			withheld += len(s.Changes) + len(s.Collisions)
		}
	}
	if withheld > 0 {
		fmt.Fprintf(a.stdout, "%d tool(s) withheld; berth status shows why.\n", withheld)
	}
	return nil
}

// toolsProfile checks PLUGIN and --profile against the state before any
// server starts, and returns the profile (nil without --profile).
func (a *app) toolsProfile(opts *toolsOptions) (*store.Profile, error) {
	if len(opts.Args) == 1 {
		if _, err := a.requireEnabled(opts.Workspace, opts.Args[0], "it has no tools here"); err != nil {
			return nil, err
		}
	}
	if opts.Profile == "" {
		return nil, nil
	}
	return a.profile(opts.Workspace, opts.Profile)
}

// toolRows are the tools as tools --json prints them.
func toolRows(tools []*pool.Tool) []toolJSON {
	out := []toolJSON{}
	for _, t := range tools {
		c, _ := mcpexport.ToolCost(t)
		j := toolJSON{Tool: t, Asks: !t.Policy.Allows(false), ContextBytes: c.Bytes, EstimatedTokens: c.Tokens}
		if globAsks(t.Policy, t.Definition.Annotations) {
			j.Asks = true
			j.AsksWhy = fmt.Sprintf("destructive (destructiveHint): the glob allow %s still asks; berth policy set %s allow skips that", t.Policy.Pattern, t.Name)
		}
		out = append(out, j)
	}
	return out
}

// printTools prints the table of tools, their context cost and the note
// on destructive tools.
func (a *app) printTools(p *pool.Pool, out []toolJSON, tools []*pool.Tool, profile *store.Profile, opts *toolsOptions) error {
	if len(out) == 0 {
		fmt.Fprintln(a.stdout, "No tools. berth status shows the state of each server.")
		return nil
	}
	destructive := 0
	var rows []toolTableRow
	for _, t := range out {
		policy := t.Policy.String()
		if t.AsksWhy != "" {
			policy += ", asks: destructive"
			destructive++
		}
		rows = append(rows, toolTableRow{t.Name, policy, t.Definition.Description})
	}
	cols := a.stdoutColumns()
	if opts.Wide {
		cols = math.MaxInt
	}
	writeToolTable(a.stdout, rows, cols)
	if err := a.toolsContext(p, tools, profile, opts); err != nil {
		return err
	}
	if destructive > 0 {
		fmt.Fprintf(a.stdout, "%d tool(s) say destructiveHint, so their glob allow still asks; allow one without asking by its exact name: berth policy set TOOL allow\n", destructive)
	}
	return nil
}

// toolTableRow is one line of the table of berth tools.
type toolTableRow struct{ name, policy, desc string }

// Description widths of the tools table: cut at offTerminal characters
// when stdout is not a terminal, and never below minDesc on a narrow one.
const (
	offTerminalDesc = 70
	minDesc         = 12
)

// writeToolTable prints rows as the table of berth tools. cols is the
// width of the terminal stdout is: each description is cut so that its
// line fits (keeping at least minDesc characters); 0, for stdout that is
// not a terminal, cuts descriptions at offTerminalDesc characters;
// math.MaxInt (--wide) keeps them whole. Names and policies are never cut.
func writeToolTable(w io.Writer, rows []toolTableRow, cols int) {
	width := offTerminalDesc
	switch {
	case cols == math.MaxInt:
		width = math.MaxInt
	case cols > 0:
		nameW, policyW := len("TOOL"), len("POLICY")
		for _, r := range rows {
			nameW = max(nameW, utf8.RuneCountInString(r.name))
			policyW = max(policyW, utf8.RuneCountInString(r.policy))
		}
		width = max(cols-nameW-policyW-2*toolTablePad, minDesc)
	}
	tw := tabwriter.NewWriter(w, 0, 4, toolTablePad, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tPOLICY\tDESCRIPTION")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.name, r.policy, oneLine(review.PrintableLines(r.desc), width))
	}
	tw.Flush()
}

// toolTablePad is the space between the columns of the tools table.
const toolTablePad = 2

// stdoutColumns is the width of the terminal stdout is: its size, else
// $COLUMNS, else 80; 0 when stdout is not a terminal.
func (a *app) stdoutColumns() int {
	f, ok := a.stdoutFile()
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
		return w
	}
	if n, err := strconv.Atoi(a.getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 80
}

// toolsContext prints the context cost of the tools berth tools listed:
// per plugin and in all, then what lazy mode lists instead and what each
// profile lists in its mode (for the whole workspace: without PLUGIN),
// or, with --profile, what that profile lists in its mode.
func (a *app) toolsContext(p *pool.Pool, tools []*pool.Tool, profile *store.Profile, opts *toolsOptions) error {
	name := opts.Profile
	c, err := workspaceContext(p.Store(), p.WorkspaceDir(), tools)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "\nContext cost of these tools: the bytes of their tools/list entries as berth lists them; tokens %s.\n", tokenEstimate)
	var plugins []contextPluginJSON
	for _, pl := range c.Plugins {
		if pl.Tools > 0 {
			plugins = append(plugins, pl)
		}
	}
	if profile == nil {
		writePluginCosts(a.stdout, plugins, c.Full, "total")
		fmt.Fprintf(a.stdout, "In lazy mode (berth serve --tools lazy) a client is listed instead: %s.\n", costWords(c.Lazy))
		if len(opts.Args) == 0 {
			writeProfileCosts(a.stdout, c.Profiles)
		}
		return nil
	}
	v := mcpexport.MeasureView(tools, profile, "", nil)
	writePluginCosts(a.stdout, plugins, v.Offered, "profile "+name)
	fmt.Fprintf(a.stdout, "Profile %s is in %s mode: a client of it is listed %s.\n", name, v.Mode, costWords(v.Listed))
	if v.Mode == store.ToolsLazy {
		direct := []string{mcpexport.MetaFindTools, mcpexport.MetaCallTool}
		for _, t := range tools {
			if profile.ListsAlways(t.Name) {
				direct = append(direct, t.Name)
			}
		}
		fmt.Fprintf(a.stdout, "Listed: %s; the other tools through %s.\n", strings.Join(direct, ", "), mcpexport.MetaFindTools)
	}
	return nil
}
