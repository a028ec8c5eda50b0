package cli

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/mcpexport"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// tokenEstimate says, in output, how the tokens are estimated.
const tokenEstimate = "estimated as the bytes / 4, rounded up (docs/profiles.md §Context cost)"

// tokenEstimateJSON is contextJSON.Estimate.
const tokenEstimateJSON = "tokens = bytes / 4, rounded up: an estimate (docs/profiles.md §Context cost)"

// contextJSON is the "context" object of status --json: what the tools a
// client is listed cost in its model's context. Bytes are measured (each
// tool's tools/list entry as berth lists it); tokens are estimated from
// them (docs/profiles.md §Context cost).
type contextJSON struct {
	// Estimate says how tokens are estimated from bytes.
	Estimate string `json:"estimate"`
	// Plugins is each enabled plugin's listed tools, sorted by name.
	Plugins []contextPluginJSON `json:"plugins"`
	// Full is what the whole workspace lists in full mode (every tool).
	Full mcpexport.Cost `json:"full"`
	// Lazy is what the whole workspace lists in lazy mode (berth serve
	// --tools lazy without --always): the two meta-tools.
	Lazy mcpexport.Cost `json:"lazy"`
	// Profiles is each profile of the workspace, sorted by name.
	Profiles []contextProfileJSON `json:"profiles"`
}

// contextPluginJSON is one plugin's context cost.
type contextPluginJSON struct {
	Name string `json:"name"`
	mcpexport.Cost
	// Catalog is the estimate of the catalog the plugin was installed
	// from; nil for a plugin not installed from a catalog, or whose trust
	// record keeps no tool list (installed by an older berth).
	Catalog *catalogEstimateJSON `json:"catalog,omitempty"`
}

// catalogEstimateJSON is a catalog's own estimate of a plugin's context
// cost: its contextTokens, computed from the tools its curator lists
// (marketplace/catalog.EstimateTokens: names, titles and descriptions, no
// schemas), as recorded when the plugin was installed.
type catalogEstimateJSON struct {
	// Name is the catalog's name in the marketplace.
	Name string `json:"name"`
	// Tools counts the tools the curator lists.
	Tools int `json:"tools"`
	// ContextTokens is the catalog's estimate.
	ContextTokens int `json:"contextTokens"`
}

// contextProfileJSON is one profile's context cost in its mode.
type contextProfileJSON struct {
	Name string          `json:"name"`
	Mode store.ToolsMode `json:"mode"`
	// Listed is what a client of the profile is listed in its mode.
	Listed mcpexport.Cost `json:"listed"`
	// Offered is every tool the profile offers (what full mode lists).
	Offered mcpexport.Cost `json:"offered"`
}

// workspaceContext measures the context cost of the tools of a workspace
// (Pool.Tools), per plugin, for the whole workspace in full and lazy mode
// and for each profile of the workspace ws in its mode.
func workspaceContext(st *store.Store, ws string, tools []*pool.Tool) (contextJSON, error) {
	state, err := st.State()
	if err != nil {
		return contextJSON{}, err
	}
	var w *store.Workspace
	if state.Workspaces != nil {
		w = state.Workspaces[ws]
	}
	full := mcpexport.MeasureView(tools, nil, store.ToolsFull, nil)
	out := contextJSON{Estimate: tokenEstimateJSON, Plugins: []contextPluginJSON{}, Profiles: []contextProfileJSON{},
		Full: full.Listed, Lazy: mcpexport.MeasureView(tools, nil, store.ToolsLazy, nil).Listed}
	names := full.PluginNames()
	if w != nil {
		for n := range w.Plugins {
			if _, ok := full.Plugins[n]; !ok {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	for _, n := range names {
		p := contextPluginJSON{Name: n, Cost: full.Plugins[n]}
		if w != nil && w.Plugins[n] != nil {
			if p.Catalog, err = catalogEstimate(st, n, w.Plugins[n]); err != nil {
				return contextJSON{}, err
			}
		}
		out.Plugins = append(out.Plugins, p)
	}
	if w != nil {
		for _, n := range sortedKeys(w.Profiles) {
			v := mcpexport.MeasureView(tools, w.Profiles[n], "", nil)
			out.Profiles = append(out.Profiles, contextProfileJSON{Name: n, Mode: v.Mode, Listed: v.Listed, Offered: v.Offered})
		}
	}
	return out, nil
}

// catalogEstimate is the contextTokens of the catalog the enabled version
// of plugin came from, from the tool list its trust record keeps; nil
// when it came from no catalog or the record keeps no list.
func catalogEstimate(st *store.Store, plugin string, en *store.Enablement) (*catalogEstimateJSON, error) {
	recs, err := st.Find(plugin, en.Version)
	if err != nil {
		return nil, nil // gone since it was enabled: status says so elsewhere
	}
	for _, r := range recs {
		if r.Digest != en.Digest || r.Catalog == nil {
			continue
		}
		tools, ok, err := marketplace.InstalledTools(r)
		if err != nil || !ok {
			return nil, err
		}
		return &catalogEstimateJSON{Name: r.Catalog.Name, Tools: len(tools), ContextTokens: catalog.EstimateTokens(tools)}, nil
	}
	return nil, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// writePluginCosts prints the table of each plugin's cost and the total.
func writePluginCosts(w io.Writer, plugins []contextPluginJSON, total mcpexport.Cost, totalLabel string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  PLUGIN\tTOOLS\tBYTES\t~TOKENS\tCATALOG'S ESTIMATE")
	for _, p := range plugins {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%s\n", p.Name, p.Tools, p.Bytes, p.Tokens, catalogWords(p.Catalog))
	}
	fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t\n", totalLabel, total.Tools, total.Bytes, total.Tokens)
	tw.Flush()
}

// catalogWords is a catalog's estimate for a person, labelled as the
// catalog's.
func catalogWords(c *catalogEstimateJSON) string {
	switch {
	case c == nil:
		return "-"
	case c.Tools == 0:
		return "none (catalog " + c.Name + " lists no tools)"
	}
	return fmt.Sprintf("~%d tokens (catalog %s's contextTokens, %d tools, without schemas)", c.ContextTokens, c.Name, c.Tools)
}

// costWords is a cost for a person.
func costWords(c mcpexport.Cost) string {
	return fmt.Sprintf("%d tool(s), %d bytes, ~%d tokens", c.Tools, c.Bytes, c.Tokens)
}

// writeContext prints the Context section of berth status.
func writeContext(w io.Writer, c contextJSON) {
	fmt.Fprintf(w, "\nContext: the tools/list entries a client is listed, in bytes as berth lists them; tokens %s.\n", tokenEstimate)
	writePluginCosts(w, c.Plugins, c.Full, "workspace, full")
	fmt.Fprintf(w, "  workspace, lazy (berth serve --tools lazy): %s\n", costWords(c.Lazy))
	writeProfileCosts(w, c.Profiles)
}

// writeProfileCosts prints what each profile lists in its mode.
func writeProfileCosts(w io.Writer, profiles []contextProfileJSON) {
	for _, p := range profiles {
		line := fmt.Sprintf("  profile %s (%s): %s", p.Name, p.Mode, costWords(p.Listed))
		if p.Mode == store.ToolsLazy {
			line += fmt.Sprintf("; its %d tool(s) in full: %d bytes, ~%d tokens", p.Offered.Tools, p.Offered.Bytes, p.Offered.Tokens)
		}
		fmt.Fprintln(w, line)
	}
}
