package store

import (
	"time"

	"github.com/berth-mcp/berth/bundle"
)

// ToolsMode is how a view of the workspace lists its tools
// (docs/profiles.md).
type ToolsMode string

// Tools modes.
const (
	// ToolsFull lists every tool the view offers.
	ToolsFull ToolsMode = "full"
	// ToolsLazy lists berth's two meta-tools (berth_find_tools and
	// berth_call_tool) and the tools named by Always, instead of every
	// tool.
	ToolsLazy ToolsMode = "lazy"
)

// Profile is a named subset of a workspace's enabled plugins, and of the
// tools within them, with its own tools mode: what one client is offered
// (berth serve --profile NAME, /profiles/NAME/mcp). It only narrows: the
// operator's policy stays per plugin and per tool, and a profile never
// widens it. A plugin a profile names that is not enabled offers
// nothing; it is not an error.
type Profile struct {
	// Plugins names the plugins offered; empty means every plugin enabled
	// in the workspace.
	Plugins []string `json:"plugins,omitempty"`
	// Tools are glob patterns (bundle.MatchGlob) on exported names
	// (<plugin>__<server>__<tool>); empty means every tool of Plugins.
	Tools []string `json:"tools,omitempty"`
	// Mode is full or lazy.
	Mode ToolsMode `json:"mode"`
	// Always are glob patterns on exported names of tools listed directly
	// beside the meta-tools in lazy mode (each must also be offered by
	// Plugins and Tools).
	Always    []string  `json:"always,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// Includes reports whether the profile offers the tool exported as name,
// of plugin. A nil profile offers every tool.
func (p *Profile) Includes(plugin, name string) bool {
	if p == nil {
		return true
	}
	if !p.IncludesPlugin(plugin) {
		return false
	}
	if len(p.Tools) == 0 {
		return true
	}
	return matchAny(p.Tools, name)
}

// IncludesPlugin reports whether the profile offers plugin (its prompts
// and resources, and the tools its Tools patterns let through). A nil
// profile offers every plugin.
func (p *Profile) IncludesPlugin(plugin string) bool {
	if p == nil || len(p.Plugins) == 0 {
		return true
	}
	for _, n := range p.Plugins {
		if n == plugin {
			return true
		}
	}
	return false
}

// ListsAlways reports whether a tool exported as name is listed directly
// in lazy mode.
func (p *Profile) ListsAlways(name string) bool {
	return p != nil && matchAny(p.Always, name)
}

func matchAny(patterns []string, name string) bool {
	for _, pat := range patterns {
		if bundle.MatchGlob(pat, name) {
			return true
		}
	}
	return false
}
