package mcpexport

import (
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/store"
)

// The names of berth's meta-tools, listed in lazy mode instead of the
// workspace's tools (docs/profiles.md). An exported tool name always holds
// "__" (<plugin>__<server>__<tool>), so neither can collide with one.
const (
	MetaFindTools = "berth_find_tools"
	MetaCallTool  = "berth_call_tool"
)

// View is what a Server offers its sessions: the whole workspace or one
// profile of it, in full or lazy mode. A nil *View is the whole workspace
// in full mode.
type View struct {
	// Profile names the workspace's profile (store.Profile) the view
	// offers; "" offers the whole workspace. The profile is read from the
	// state at every catalog boundary: a change to it applies as a policy
	// change does, and a removed profile offers nothing.
	Profile string
	// Mode overrides the profile's tools mode when set (berth serve
	// --tools); "" keeps the profile's, and full without a profile.
	Mode store.ToolsMode
	// Always adds glob patterns of tools listed directly in lazy mode
	// (berth serve --always) to the profile's.
	Always []string
}

// MetaTools are the definitions of the two meta-tools, as lazy mode
// lists them: stable, small and documented in docs/profiles.md. The call
// meta-tool carries no annotations, so a client that approves on
// readOnlyHint or idempotentHint cannot approve every tool through it.
func MetaTools() []*mcp.Tool {
	return []*mcp.Tool{
		{
			Name:  MetaFindTools,
			Title: "Find tools",
			Description: "Search this berth workspace's tools by words (what the tool does, its name, its parameters, its plugin). " +
				"Returns the best matches, each with its name, description, annotations and input schema. " +
				"Call a match with " + MetaCallTool + ".",
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"query": map[string]any{"type": "string", "description": "Words describing the task, e.g. \"read a file in the project\"."},
					"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": MaxFindLimit, "description": "How many matches to return (default 5)."},
				},
				"required":             []any{"query"},
				"additionalProperties": false,
			},
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
		},
		{
			Name:  MetaCallTool,
			Title: "Call a tool",
			Description: "Call one of this berth workspace's tools by the name " + MetaFindTools + " returned, with its arguments. " +
				"The call is the tool's own: the same policy and approval apply.",
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":      map[string]any{"type": "string", "description": "The tool's name, as " + MetaFindTools + " returned it."},
					"arguments": map[string]any{"type": "object", "description": "The tool's arguments, as its input schema describes them."},
				},
				"required":             []any{"name"},
				"additionalProperties": false,
			},
		},
	}
}

// MaxFindLimit caps the matches berth_find_tools returns.
const MaxFindLimit = 20

// DefaultFindLimit is the matches berth_find_tools returns without a
// limit.
const DefaultFindLimit = 5

// viewNow is a Server's view as the state has it at one boundary: the
// profile read afresh, the effective tools mode and Always patterns.
type viewNow struct {
	// profile is the profile offered; nil offers the whole workspace.
	profile *store.Profile
	// removed is set when the view names a profile the workspace no
	// longer has: the view then offers nothing.
	removed bool
	lazy    bool
	always  []string
}

// resolveView is the view v as the state st has it, for the workspace ws.
func resolveView(v View, st *store.State, ws string) *viewNow {
	out := &viewNow{}
	if v.Profile != "" {
		out.profile = st.ProfileOf(ws, v.Profile)
		if out.profile == nil {
			out.removed = true
			return out
		}
		out.always = append(out.always, out.profile.Always...)
	}
	out.lazy = store.EffectiveMode(v.Mode, out.profile) == store.ToolsLazy
	out.always = append(out.always, v.Always...)
	return out
}

// viewCache is a Server's view as resolved from the state of one
// generation: it is resolved again only when the generation moved (every
// change to the state bumps it, as the pool's boundaries rely on).
type viewCache struct {
	mu  sync.Mutex
	gen uint64
	v   *viewNow
}

// current reads the view's profile from the state: at every catalog
// boundary and before every call, so that a change to the profile applies
// as a change of policy does. The state comes from the family's
// generation watch (store.GenerationWatch: no read while the generation
// stands, a write of this process seen at once, another's at its
// file-system event or within a second), and the view resolved from it is
// kept until the generation moves. A view of the whole workspace reads
// nothing. The viewNow returned is shared: callers must not change it.
func (s *Server) current() (*viewNow, error) {
	if s.view.Profile == "" {
		return resolveView(s.view, nil, ""), nil
	}
	st, err := s.fam.state(s.store)
	if err != nil {
		return nil, fmt.Errorf("reading the profile %s: %w", s.view.Profile, err)
	}
	c := &s.viewCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.v == nil || c.gen != st.Generation {
		c.gen, c.v = st.Generation, resolveView(s.view, st, s.pool.WorkspaceDir())
	}
	return c.v, nil
}

// offersPluginNow reports whether the view, as the state has it now,
// offers plugin (its prompts, resources, log messages and resource
// updates); an unreadable state offers nothing.
func (s *Server) offersPluginNow(plugin string) bool {
	if s.view.Profile == "" {
		return true
	}
	v, err := s.current()
	return err == nil && v.offersPlugin(plugin)
}

// offersTool reports whether the view offers the tool exported as name,
// of plugin (the policy still decides whether it is listed and runs).
func (v *viewNow) offersTool(plugin, name string) bool {
	return !v.removed && v.profile.Includes(plugin, name)
}

// offersPlugin reports whether the view offers plugin's prompts and
// resources.
func (v *viewNow) offersPlugin(plugin string) bool {
	return !v.removed && v.profile.IncludesPlugin(plugin)
}

// listsAlways reports whether a tool is listed directly in lazy mode:
// the view's Always patterns, matched as a profile's are.
func (v *viewNow) listsAlways(name string) bool {
	return (&store.Profile{Always: v.always}).ListsAlways(name)
}

// RemovedProfileError refuses a request of a view whose profile the
// workspace no longer has.
type RemovedProfileError struct {
	Profile, Workspace string
}

func (e *RemovedProfileError) Error() string {
	ws := fsx.ShellQuote(e.Workspace)
	return fmt.Sprintf("the profile %s this berth serve offers was removed from the workspace %s, so it offers nothing; create it again with `berth profile create %s --workspace %s --plugin PLUGIN`, or serve another profile (`berth profile list --workspace %s`)", e.Profile, ws, e.Profile, ws, ws)
}

// removedErr is the refusal of a request when the view's profile is gone,
// nil when it is not.
func (s *Server) removedErr(v *viewNow) error {
	if v == nil || !v.removed {
		return nil
	}
	return &RemovedProfileError{Profile: s.view.Profile, Workspace: s.pool.WorkspaceDir()}
}
