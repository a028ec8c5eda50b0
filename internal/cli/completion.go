package cli

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/clientconfig"
	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/builtin"
	"github.com/berth-mcp/berth/mcpexport"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/secrets"
	"github.com/berth-mcp/berth/store"
)

func newCompletionCmd(a *app) *cobra.Command {
	opts := &completionOptions{}
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: `Completion prints the script that makes your shell complete berth's
commands, flags and arguments (cobra's generator). Load it in the current
shell, or install it where your shell reads completions at start.

Arguments and flags that take names complete from berth's state: client
names (connect), trusted plugins and, after NAME@, their versions (enable,
revoke, verify, --plugin), the workspace's enabled plugins (disable,
upgrade, tools), catalog entries (install, show), tool names as clients see them
(call, policy set, --tool, --always: plugin__server__tool, from the
surfaces pinned when the servers last ran), servers (logs, login), catalogs
(marketplace update, --catalog), approval IDs (approve, deny), profiles
(--profile) and secrets (secret set, rm, bind). The workspace is --workspace
or the current directory. Completing only reads: it starts no server,
reaches no network, takes no lock and writes nothing.`,
		Example: `  source <(berth completion bash)
  berth completion bash > /etc/bash_completion.d/berth
  berth completion zsh > "${fpath[1]}/_berth"
  berth completion fish > ~/.config/fish/completions/berth.fish
  berth completion powershell | Out-String | Invoke-Expression`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      exactArgs(1, "one shell: bash, zsh, fish or powershell"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Shell, opts.Root = args[0], cmd.Root()
			return runCompletion(cmd.Context(), a, opts)
		},
	}
}

// completionOptions are the inputs of berth completion.
type completionOptions struct {
	// Shell is the positional argument.
	Shell string
	// Root is the command tree to complete.
	Root *cobra.Command
}

func runCompletion(_ context.Context, a *app, opts *completionOptions) error {
	root := opts.Root
	switch opts.Shell {
	case "bash":
		return root.GenBashCompletionV2(a.stdout, true)
	case "zsh":
		return root.GenZshCompletion(a.stdout)
	case "fish":
		return root.GenFishCompletion(a.stdout, true)
	case "powershell":
		return root.GenPowerShellCompletionWithDesc(a.stdout)
	}
	return usagef("berth completion knows bash, zsh, fish and powershell, not %q", opts.Shell)
}

// Argument completion. Every kind of name berth takes completes from
// berth's state as it is on disk, read only: completion starts no
// server, reaches no network, takes no lock, writes and migrates nothing,
// and prints nothing but the names. A state it cannot read completes
// nothing. The shells call `berth __complete ARGS... PREFIX` (cobra's
// hidden command) at every Tab.

// nameKind is a kind of name an argument or a flag takes.
type nameKind int

const (
	clientNames     nameKind = iota // connect, disconnect
	trustedPlugins                  // plugins with a trust record; NAME@ completes their versions
	enabledPlugins                  // plugins enabled in the workspace
	catalogPlugins                  // entries of the catalogs added
	serverIDs                       // PLUGIN and PLUGIN__SERVER of the enabled plugins
	serverOnly                      // PLUGIN__SERVER of the enabled plugins
	toolNames                       // the exported tool names of the enabled plugins' pinned surfaces
	catalogNames                    // catalogs added
	approvalIDs                     // calls waiting for approval
	profileNames                    // the workspace's profiles
	secretNames                     // secrets stored, and the variables enabled plugins read
	policyDecisions                 // allow, ask, deny
)

// argNames are the kinds of the positional arguments of each command,
// by its path below berth; the last kind repeats for further arguments
// only where the command takes several of them.
var argNames = map[string][]nameKind{
	"connect":            {clientNames},
	"disconnect":         {clientNames},
	"enable":             {trustedPlugins},
	"disable":            {enabledPlugins},
	"revoke":             {trustedPlugins},
	"verify":             {trustedPlugins},
	"show":               {catalogPlugins},
	"install":            {catalogPlugins},
	"upgrade":            {enabledPlugins},
	"accept":             {enabledPlugins},
	"confirm":            {enabledPlugins},
	"tools":              {enabledPlugins},
	"login":              {serverIDs},
	"logout":             {serverIDs},
	"logs":               {serverOnly},
	"call":               {toolNames},
	"policy set":         {toolNames, policyDecisions},
	"policy unset":       {toolNames},
	"approve":            {approvalIDs},
	"deny":               {approvalIDs},
	"profile show":       {profileNames},
	"profile rm":         {profileNames},
	"secret set":         {secretNames},
	"secret rm":          {secretNames},
	"secret bind":        {secretNames},
	"secret unbind":      {secretNames},
	"marketplace remove": {catalogNames},
	"marketplace update": {catalogNames},
}

// flagNames are the kinds of the flags that take names, wherever a
// command has them.
var flagNames = map[string]nameKind{
	"profile": profileNames,
	"catalog": catalogNames,
	"plugin":  trustedPlugins,
	"tool":    toolNames,
	"always":  toolNames,
	"full":    approvalIDs,
}

// registerCompletions sets the argument and flag completion of every
// command under root from argNames and flagNames.
func registerCompletions(a *app, root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), root.Name()), " ")
		if kinds, ok := argNames[path]; ok && c.ValidArgsFunction == nil {
			c.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
				if len(args) >= len(kinds) {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return a.completeNames(cmd, kinds[len(args)], toComplete)
			}
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			kind, ok := flagNames[f.Name]
			if !ok || f.Value.Type() == "bool" {
				return
			}
			_ = c.RegisterFlagCompletionFunc(f.Name, func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return a.completeNames(cmd, kind, toComplete)
			})
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completeNames lists the names of kind that start with prefix, each
// with a short description where one helps.
func (a *app) completeNames(cmd *cobra.Command, kind nameKind, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var names []cobra.Completion
	switch kind {
	case clientNames:
		for _, c := range clientconfig.Clients {
			names = append(names, cobra.CompletionWithDesc(string(c), c.Title()))
		}
	case policyDecisions:
		names = []cobra.Completion{"allow", "ask", "deny"}
	default:
		names = a.stateNames(cmd, kind, prefix)
	}
	var out []cobra.Completion
	seen := map[string]bool{}
	for _, n := range names {
		name, _, _ := strings.Cut(n, "\t")
		if strings.HasPrefix(name, prefix) && !seen[name] {
			seen[name] = true
			out = append(out, n)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// stateNames reads the names of kind from berth's state, read only;
// nothing when it cannot be read.
func (a *app) stateNames(cmd *cobra.Command, kind nameKind, prefix string) []cobra.Completion {
	paths, err := a.paths()
	if err != nil {
		return nil
	}
	switch kind {
	case trustedPlugins:
		return trustedNames(store.Open(paths, nil), prefix)
	case catalogNames:
		c := marketplace.OpenCache(paths.Catalogs(), nil)
		names, _ := c.Names()
		if builtinShown(c) && !slices.Contains(names, builtin.Name) {
			names = append(names, builtin.Name)
		}
		return names
	case catalogPlugins:
		return catalogEntryNames(marketplace.OpenCache(paths.Catalogs(), nil))
	case approvalIDs:
		list, _ := mcpexport.NewQueue(paths.Approvals()).Waiting()
		var out []cobra.Completion
		for _, p := range list {
			out = append(out, cobra.CompletionWithDesc(p.ID, review.Printable(pendingWhat(p))))
		}
		return out
	}
	st := store.Open(paths, nil)
	state, err := st.State()
	if err != nil {
		return nil
	}
	w := state.Workspaces[completionWorkspace(cmd)]
	var out []cobra.Completion
	if kind == secretNames {
		if list, err := secrets.Open(paths.Secrets(), nil).List(); err == nil {
			for _, e := range list {
				out = append(out, cobra.CompletionWithDesc(e.Name, "stored"))
			}
		}
	}
	if w == nil {
		return out
	}
	switch kind {
	case enabledPlugins:
		for _, name := range slices.Sorted(maps.Keys(w.Plugins)) {
			out = append(out, cobra.CompletionWithDesc(name, w.Plugins[name].Version))
		}
	case profileNames:
		out = slices.Sorted(maps.Keys(w.Profiles))
	case toolNames:
		out = enabledToolNames(w)
	case serverIDs, serverOnly, secretNames:
		out = append(out, manifestNames(st, w, kind)...)
	}
	return out
}

// completionWorkspace is the workspace of the command being completed:
// its --workspace, or the current directory.
func completionWorkspace(cmd *cobra.Command) string {
	dir := "."
	if f := cmd.Flags().Lookup("workspace"); f != nil && f.Value.String() != "" {
		dir = f.Value.String()
	}
	ws, err := pool.Workspace(dir)
	if err != nil {
		return ""
	}
	return ws
}

// trustedNames are the names of the trusted plugins or, once prefix has
// NAME@, that plugin's trusted versions.
func trustedNames(st *store.Store, prefix string) []cobra.Completion {
	recs, err := st.Records()
	if err != nil {
		return nil
	}
	name, _, versions := strings.Cut(prefix, "@")
	var out []cobra.Completion
	for _, r := range recs {
		switch {
		case versions && r.Name == name:
			out = append(out, r.Name+"@"+r.Version)
		case !versions && (len(out) == 0 || out[len(out)-1] != r.Name):
			out = append(out, r.Name)
		}
	}
	return out
}

// catalogEntryNames are the plugins the cached catalogs list, from the
// cached copies (nothing is fetched or verified).
func catalogEntryNames(c *marketplace.Cache) []cobra.Completion {
	names, _ := c.Names()
	seen := map[string]bool{}
	for _, n := range names {
		l, err := c.Load(n)
		if err != nil {
			continue // an unsigned source, or a damaged copy
		}
		for _, p := range l.Catalog.Plugins {
			if bundle.IsValidName(p.Name) {
				seen[p.Name] = true
			}
		}
	}
	if builtinShown(c) {
		if bc, err := builtin.Load(); err == nil {
			for _, e := range bc.Plugins {
				seen[e.Name] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// builtinShown reports whether completion offers the built-in catalog
// and its entries: read from the binary, since completion writes nothing
// and so never puts the catalog into the cache (a fresh BERTH_HOME has
// none yet), unless the operator removed it or a catalog they added holds
// its name.
func builtinShown(c *marketplace.Cache) bool {
	if c.BuiltinRemoved() {
		return false
	}
	infos, _ := c.List()
	for _, ci := range infos {
		if ci.Name == builtin.Name {
			return ci.Kind == marketplace.KindBuiltin
		}
	}
	return true
}

// enabledToolNames are the exported names of the tools pinned for the
// plugins enabled in w: what the servers offered when they were last
// reviewed, without starting one.
func enabledToolNames(w *store.Workspace) []cobra.Completion {
	var out []cobra.Completion
	for _, name := range slices.Sorted(maps.Keys(w.Plugins)) {
		surfaces := w.Plugins[name].Surfaces
		for _, key := range slices.Sorted(maps.Keys(surfaces)) {
			provider := strings.TrimPrefix(key, "native:")
			for _, tool := range slices.Sorted(maps.Keys(surfaces[key].Tools)) {
				out = append(out, pool.ExportName(name, provider, tool))
			}
		}
	}
	return out
}

// manifestNames are, from the staged manifests of the plugins enabled in
// w, their PLUGIN and PLUGIN__SERVER names (serverIDs) or the variables
// they read (secretNames).
func manifestNames(st *store.Store, w *store.Workspace, kind nameKind) []cobra.Completion {
	var out []cobra.Completion
	for _, name := range slices.Sorted(maps.Keys(w.Plugins)) {
		m, err := stagedManifest(st, w.Plugins[name])
		if err != nil {
			continue
		}
		if kind == secretNames {
			for _, v := range manifestSources(m) {
				if v != "" {
					out = append(out, cobra.CompletionWithDesc(v, "read by "+name))
				}
			}
			continue
		}
		if kind == serverIDs {
			out = append(out, name)
		}
		for _, server := range slices.Sorted(maps.Keys(m.MCPServers)) {
			out = append(out, pool.ServerID(name, server))
		}
	}
	return out
}
