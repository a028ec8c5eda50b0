package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

const profileLong = `A profile is a named subset of a workspace's enabled plugins, and of the
tools within them, with its own tools mode: what one client is offered.
'berth serve --profile NAME' serves it (HTTP listeners also serve each
profile at /profiles/NAME/mcp), and 'berth connect CLIENT --profile NAME'
gives a client an entry for it.

A profile only narrows. The operator's tool policy stays per plugin and
per tool, and a profile never widens it: a tool the policy denies is not
offered through any profile, and a call the policy asks about still asks.
A profile enables nothing: the plugins it names must be enabled in the
workspace when it is created (berth enable). A plugin disabled later stays
named in the profile and offers nothing until it is enabled again;
'berth profile show' says "not enabled".

Names: 1 to 32 lower-case letters, digits and inner hyphens (work,
claude-code). Profiles live in $BERTH_HOME/state.json, per workspace; a
running berth serve applies a change at its next boundary (a removed
profile then offers nothing). docs/profiles.md has the details.`

func newProfileCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use: "profile",
		Example: `  berth profile create docs --plugin acme-notes --tools lazy
  berth profile list
  berth profile show docs
  berth profile rm docs`,
		Short: "Create, list, show and remove named subsets of a workspace's tools",
		Long:  profileLong,
		Args:  exactArgs(0, "a subcommand: create, list, show or rm"),
		RunE:  func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newProfileCreateCmd(a), newProfileListCmd(a), newProfileShowCmd(a), newProfileRmCmd(a))
	return cmd
}

// profileCreateOptions are the inputs of berth profile create.
type profileCreateOptions struct {
	Name, Workspace, Mode string
	Plugins, Tools        []string
	Always                []string
	Replace, JSON         bool
}

const profileCreateLong = `Create names a subset of the workspace's enabled plugins (default: the
current directory):

  --plugin P      offer plugin P (repeatable); without it, every plugin
                  enabled in the workspace, now and later
  --tool PATTERN  offer only the tools whose exported name
                  (<plugin>__<server>__<tool>) matches PATTERN (repeatable;
                  '*' any run of characters, '?' one); without it, every
                  tool of the plugins offered. A pattern starts with a
                  plugin's name and '__', and that plugin must be offered
  --tools MODE    full lists every tool offered (the default); lazy lists
                  berth_find_tools and berth_call_tool instead, which search
                  and call the tools offered
  --always PATTERN  in lazy mode, also list the tools matching PATTERN
                  directly (repeatable)

Prompts and resources follow the plugins offered. Every plugin named, by
--plugin or by a pattern, must be enabled in the workspace now. A profile
only narrows what berth serves: the tool policy applies to every tool
offered, unchanged, and nothing in a profile allows a call.

An existing profile of that name is refused unless --replace, which
replaces it whole (the flags given are the new definition).`

func newProfileCreateCmd(a *app) *cobra.Command {
	opts := &profileCreateOptions{}
	cmd := &cobra.Command{
		Use: "create NAME [--plugin P]... [--tool PATTERN]... [--tools full|lazy] [--always PATTERN]...",
		Example: `  berth profile create docs --plugin acme-notes --plugin acme-wiki
  berth profile create desktop --tools lazy --always 'acme-notes__notes__search'
  berth profile create readers --plugin acme-notes --tool 'acme-notes__notes__read_*' --tool 'acme-notes__notes__search'
  berth profile create docs --plugin acme-notes --tools lazy --replace --json`,
		Short: "Create a profile: plugins, tool patterns and a tools mode",
		Long:  profileCreateLong,
		Args:  exactArgs(1, "one NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runProfileCreate(cmd.Context(), a, opts)
		},
	}
	workspaceFlag(cmd, &opts.Workspace)
	f := cmd.Flags()
	f.StringArrayVar(&opts.Plugins, "plugin", nil, "offer the enabled plugin `P` (repeatable; default: every enabled plugin)")
	f.StringArrayVar(&opts.Tools, "tool", nil, "offer only tools whose exported name matches `PATTERN` (repeatable; default: every tool of the plugins)")
	f.StringVar(&opts.Mode, "tools", string(store.ToolsFull), "the tools `MODE`: full lists every tool offered, lazy lists berth's two meta-tools instead")
	f.StringArrayVar(&opts.Always, "always", nil, "in lazy mode, also list tools matching `PATTERN` directly (repeatable)")
	f.BoolVar(&opts.Replace, "replace", false, "replace an existing profile of that name")
	a.jsonFlag(cmd, &opts.JSON, profileJSON{})
	return cmd
}

func runProfileCreate(ctx context.Context, a *app, opts *profileCreateOptions) error {
	p := &store.Profile{Plugins: opts.Plugins, Tools: opts.Tools, Mode: store.ToolsMode(opts.Mode), Always: opts.Always}
	if ps := store.CheckProfile(opts.Name, p); len(ps) > 0 {
		return usagef("profile %s: %s", opts.Name, strings.Join(profileFlagWords(ps), "; "))
	}
	ws, err := pool.Workspace(opts.Workspace)
	if err != nil {
		return err
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	old, err := st.SetProfile(ctx, ws, opts.Name, p, opts.Replace)
	if err != nil {
		return err
	}
	state, err := st.State()
	if err != nil {
		return err
	}
	stored := state.ProfileOf(ws, opts.Name)
	if stored == nil {
		return fmt.Errorf("profile %s of %s was removed while it was being created; create it again", opts.Name, ws)
	}
	out := newProfileJSON(ws, opts.Name, stored, state)
	out.Replaced = old != nil
	out.Warnings = unmatchedPatterns(state.Workspaces[ws], stored)
	if opts.JSON {
		return writeJSON(a.stdout, out)
	}
	verb := "Created"
	if old != nil {
		verb = "Replaced"
	}
	fmt.Fprintf(a.stdout, "%s profile %s of %s: %s.\n", verb, opts.Name, ws, profileSummary(stored))
	fmt.Fprintf(a.stdout, "Serve it with: berth serve --profile %s --workspace %s\n", opts.Name, ws)
	fmt.Fprintf(a.stdout, "Give a client an entry for it with: berth connect CLIENT --profile %s --workspace %s\n", opts.Name, ws)
	fmt.Fprintln(a.stdout, "The tool policy applies to it unchanged (berth policy list).")
	a.printWarnings(out.Warnings)
	return nil
}

// unmatchedPatterns warns about each tool or always pattern of p that
// matches none of the tools pinned for its plugin in w (the surfaces
// recorded when its servers first ran): most likely a typo; and about an
// always pattern whose tools the profile's tool patterns leave out. A plugin
// whose servers have not run yet has no pinned tools and is not checked.
func unmatchedPatterns(w *store.Workspace, p *store.Profile) []string {
	if w == nil {
		return nil
	}
	var out []string
	for _, f := range []struct {
		flag     string
		patterns []string
	}{{"--tool", p.Tools}, {"--always", p.Always}} {
		for _, pat := range f.patterns {
			plugin, err := store.PatternPlugin(pat)
			e := w.Plugins[plugin]
			if err != nil || e == nil || len(e.Surfaces) == 0 {
				continue
			}
			names := pinnedNames(plugin, e)
			match := func(n string) bool { return bundle.MatchGlob(pat, n) }
			switch {
			case !slices.ContainsFunc(names, match):
				out = append(out, fmt.Sprintf("%s %s matches none of the %d tools pinned for %s (berth tools lists them); it offers nothing until a tool of that name appears", f.flag, pat, len(names), plugin))
			case f.flag == "--always" && !slices.ContainsFunc(names, func(n string) bool { return match(n) && p.Includes(plugin, n) }):
				out = append(out, fmt.Sprintf("--always %s matches only tools of %s that the profile's --tool patterns leave out, so it lists none", pat, plugin))
			}
		}
	}
	return out
}

// pinnedNames are the exported names of the tools pinned for a plugin's
// servers and native tool providers.
func pinnedNames(plugin string, e *store.Enablement) []string {
	var names []string
	for key, sf := range e.Surfaces {
		if sf == nil {
			continue
		}
		provider := strings.TrimPrefix(key, pool.NativeSurfaceKey(""))
		for tool := range sf.Tools {
			names = append(names, pool.ExportName(plugin, provider, tool))
		}
	}
	return names
}

// profileFlagWords rewords the field names of store.CheckProfile's
// problems as the flags of berth profile create.
func profileFlagWords(ps []string) []string {
	r := strings.NewReplacer("plugins: ", "--plugin: ", "tools: ", "--tool: ", "mode: ", "--tools: ", "always: ", "--always: ")
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = r.Replace(p)
	}
	return out
}

// profileSummary says in a few words what a profile offers.
func profileSummary(p *store.Profile) string {
	plugins := "every enabled plugin"
	if len(p.Plugins) > 0 {
		plugins = strings.Join(p.Plugins, ", ")
	}
	tools := "all their tools"
	if len(p.Tools) > 0 {
		tools = fmt.Sprintf("the tools matching %s", strings.Join(p.Tools, ", "))
	}
	s := fmt.Sprintf("%s; %s; %s mode", plugins, tools, p.Mode)
	if len(p.Always) > 0 {
		s += fmt.Sprintf(", listing %s directly", strings.Join(p.Always, ", "))
	}
	return s
}

// profileJSON is a profile as berth profile create, list and show print
// it.
type profileJSON struct {
	Name      string `json:"name"`
	Workspace string `json:"workspace"`
	// Plugins are the plugins the profile names; empty means every plugin
	// enabled in the workspace.
	Plugins []string `json:"plugins"`
	// Tools are the patterns of exported tool names offered; empty means
	// every tool of the plugins.
	Tools []string        `json:"tools"`
	Mode  store.ToolsMode `json:"mode"`
	// Always are the patterns of tools listed directly in lazy mode.
	Always    []string  `json:"always"`
	CreatedAt time.Time `json:"createdAt"`
	// Offered are the plugins the profile offers now: each it names,
	// or every enabled one when it names none, with whether (and which
	// version) is enabled in the workspace.
	Offered []profilePluginJSON `json:"offered"`
	// Replaced is true when create --replace replaced a profile.
	Replaced bool `json:"replaced,omitempty"`
	// Warnings (create) name each pattern that matches none of the tools
	// pinned for its plugin.
	Warnings []string `json:"warnings,omitempty"`
}

// profilePluginJSON is one plugin of a profile and its state in the
// workspace.
type profilePluginJSON struct {
	Plugin  string `json:"plugin"`
	Enabled bool   `json:"enabled"`
	// Version is the enabled version; "" when not enabled.
	Version string `json:"version,omitempty"`
}

func newProfileJSON(ws, name string, p *store.Profile, state *store.State) profileJSON {
	out := profileJSON{Name: name, Workspace: ws, Plugins: nonNil(p.Plugins), Tools: nonNil(p.Tools), Mode: p.Mode, Always: nonNil(p.Always), CreatedAt: p.CreatedAt, Offered: []profilePluginJSON{}}
	var enabled map[string]*store.Enablement
	if w := state.Workspaces[ws]; w != nil {
		enabled = w.Plugins
	}
	names := p.Plugins
	if len(names) == 0 {
		names = slices.Sorted(maps.Keys(enabled))
	}
	for _, n := range names {
		pp := profilePluginJSON{Plugin: n}
		if e := enabled[n]; e != nil {
			pp.Enabled, pp.Version = true, e.Version
		}
		out.Offered = append(out.Offered, pp)
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// profileListOptions are the inputs of berth profile list.
type profileListOptions struct {
	Workspace string
	JSON      bool
}

func newProfileListCmd(a *app) *cobra.Command {
	opts := &profileListOptions{}
	cmd := &cobra.Command{
		Use: "list",
		Example: `  berth profile list
  berth profile list --workspace ~/src/project --json`,
		Short: "List the workspace's profiles",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProfileList(cmd.Context(), a, opts)
		},
	}
	workspaceFlag(cmd, &opts.Workspace)
	a.jsonFlag(cmd, &opts.JSON, []profileJSON{})
	return cmd
}

func runProfileList(_ context.Context, a *app, opts *profileListOptions) error {
	ws, state, err := a.profileState(opts.Workspace)
	if err != nil {
		return err
	}
	var profiles map[string]*store.Profile
	if w := state.Workspaces[ws]; w != nil {
		profiles = w.Profiles
	}
	out := []profileJSON{}
	for _, n := range slices.Sorted(maps.Keys(profiles)) {
		out = append(out, newProfileJSON(ws, n, profiles[n], state))
	}
	if opts.JSON {
		return writeJSON(a.stdout, out)
	}
	if len(out) == 0 {
		fmt.Fprintf(a.stdout, "%s has no profile; create one with: berth profile create NAME --plugin PLUGIN\n", ws)
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tMODE\tPLUGINS\tTOOL PATTERNS\tALWAYS")
	for _, p := range out {
		plugins := "(every enabled plugin)"
		if len(p.Plugins) > 0 {
			var ns []string
			for _, o := range p.Offered {
				n := o.Plugin
				if !o.Enabled {
					n += " (not enabled)"
				}
				ns = append(ns, n)
			}
			plugins = strings.Join(ns, ", ")
		}
		tools := "all"
		if len(p.Tools) > 0 {
			tools = fmt.Sprint(len(p.Tools))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", p.Name, p.Mode, plugins, tools, len(p.Always))
	}
	return tw.Flush()
}

// profileState resolves the workspace and reads the state.
func (a *app) profileState(workspace string) (string, *store.State, error) {
	ws, err := pool.Workspace(workspace)
	if err != nil {
		return "", nil, err
	}
	st, err := a.store()
	if err != nil {
		return "", nil, err
	}
	state, err := st.State()
	if err != nil {
		return "", nil, err
	}
	return ws, state, nil
}

// profileNameOptions are the inputs of berth profile show and rm.
type profileNameOptions struct {
	Name, Workspace string
	JSON            bool
}

func newProfileShowCmd(a *app) *cobra.Command {
	opts := &profileNameOptions{}
	cmd := &cobra.Command{
		Use: "show NAME",
		Example: `  berth profile show docs
  berth profile show docs --json`,
		Short: "Show a profile and whether each of its plugins is enabled",
		Args:  exactArgs(1, "one NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runProfileShow(cmd.Context(), a, opts)
		},
	}
	workspaceFlag(cmd, &opts.Workspace)
	a.jsonFlag(cmd, &opts.JSON, profileJSON{})
	return cmd
}

func runProfileShow(_ context.Context, a *app, opts *profileNameOptions) error {
	if err := store.CheckProfileName(opts.Name); err != nil {
		return usagef("%v", err)
	}
	ws, state, err := a.profileState(opts.Workspace)
	if err != nil {
		return err
	}
	p, err := profileIn(state, ws, opts.Name)
	if err != nil {
		return err
	}
	out := newProfileJSON(ws, opts.Name, p, state)
	if opts.JSON {
		return writeJSON(a.stdout, out)
	}
	fmt.Fprintf(a.stdout, "Profile:   %s\nWorkspace: %s\nCreated:   %s\nMode:      %s\n", out.Name, out.Workspace, out.CreatedAt.Format(time.RFC3339), out.Mode)
	if len(p.Plugins) == 0 {
		fmt.Fprintln(a.stdout, "Plugins:   every plugin enabled in the workspace; now:")
	} else {
		fmt.Fprintln(a.stdout, "Plugins:")
	}
	if len(out.Offered) == 0 {
		fmt.Fprintln(a.stdout, "  (none enabled)")
	}
	for _, o := range out.Offered {
		if o.Enabled {
			fmt.Fprintf(a.stdout, "  %s  enabled (%s)\n", o.Plugin, o.Version)
		} else {
			fmt.Fprintf(a.stdout, "  %s  not enabled: offers nothing (berth enable %s --workspace %s)\n", o.Plugin, o.Plugin, ws)
		}
	}
	if len(p.Tools) == 0 {
		fmt.Fprintln(a.stdout, "Tools:     every tool of those plugins")
	} else {
		fmt.Fprintf(a.stdout, "Tools:     %s\n", strings.Join(p.Tools, ", "))
	}
	if len(p.Always) > 0 {
		fmt.Fprintf(a.stdout, "Always:    %s\n", strings.Join(p.Always, ", "))
	}
	fmt.Fprintln(a.stdout, "The tool policy applies unchanged: a profile never widens it (berth policy list).")
	return nil
}

// noProfile is the error for a profile name the workspace ws does not
// have: the commands it suggests name the workspace, quoted for a shell.
func noProfile(ws, name string) error {
	q := fsx.ShellQuote(ws)
	return fmt.Errorf("%s has no profile %s: berth profile list --workspace %s shows its profiles, berth profile create %s --workspace %s --plugin P makes it", ws, name, q, name, q)
}

// profile returns the profile name of the workspace (as --workspace
// gives it) as the state has it now, or noProfile. Every command that
// needs an existing profile looks it up here.
func (a *app) profile(workspace, name string) (*store.Profile, error) {
	ws, state, err := a.profileState(workspace)
	if err != nil {
		return nil, err
	}
	return profileIn(state, ws, name)
}

// profileIn is the profile name of the workspace ws (absolute) in state,
// or noProfile.
func profileIn(state *store.State, ws, name string) (*store.Profile, error) {
	if p := state.ProfileOf(ws, name); p != nil {
		return p, nil
	}
	return nil, noProfile(ws, name)
}

// profileRmJSON is what profile rm --json prints.
type profileRmJSON struct {
	Name      string `json:"name"`
	Workspace string `json:"workspace"`
	// Removed is true: a name without a profile is an error (exit 1).
	Removed bool `json:"removed"`
}

func newProfileRmCmd(a *app) *cobra.Command {
	opts := &profileNameOptions{}
	cmd := &cobra.Command{
		Use: "rm NAME",
		Example: `  berth profile rm docs
  berth profile rm docs --workspace ~/src/project --json`,
		Short: "Remove a profile (its plugins stay enabled)",
		Long: `Rm removes a profile from the workspace. Its plugins stay enabled, and
the entries 'berth connect --profile' wrote stay in the clients' files
('berth disconnect CLIENT --profile NAME' removes one). A berth serve of
that profile offers nothing from its next boundary.`,
		Args: exactArgs(1, "one NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runProfileRm(cmd.Context(), a, opts)
		},
	}
	workspaceFlag(cmd, &opts.Workspace)
	a.jsonFlag(cmd, &opts.JSON, profileRmJSON{})
	return cmd
}

func runProfileRm(ctx context.Context, a *app, opts *profileNameOptions) error {
	if err := store.CheckProfileName(opts.Name); err != nil {
		return usagef("%v", err)
	}
	ws, err := pool.Workspace(opts.Workspace)
	if err != nil {
		return err
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	if _, err := st.RemoveProfile(ctx, ws, opts.Name); err != nil {
		if errors.Is(err, store.ErrNoProfile) {
			return noProfile(ws, opts.Name)
		}
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, profileRmJSON{Name: opts.Name, Workspace: ws, Removed: true})
	}
	fmt.Fprintf(a.stdout, "Removed profile %s of %s; its plugins stay enabled.\n", opts.Name, ws)
	return nil
}
