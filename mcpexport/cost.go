package mcpexport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// Cost is the context cost of tool definitions a client is listed: how
// many, the bytes of their entries in the tools/list result, and the
// tokens those bytes are estimated to take (EstimateTokens). The bytes
// are measured; the tokens are an estimate (docs/profiles.md §Context
// cost).
type Cost struct {
	// Tools counts the entries.
	Tools int `json:"tools"`
	// Bytes is the sum of the entries' sizes, each as go-sdk writes it in
	// the tools/list result (compact JSON, no HTML escaping); the
	// separators and the envelope around the array are not counted.
	Bytes int `json:"bytes"`
	// Tokens is EstimateTokens(Bytes).
	Tokens int `json:"tokens"`
}

// Plus is the cost of c's entries and d's together.
func (c Cost) Plus(d Cost) Cost {
	return costOf(c.Tools+d.Tools, c.Bytes+d.Bytes)
}

func costOf(tools, bytes int) Cost {
	return Cost{Tools: tools, Bytes: bytes, Tokens: EstimateTokens(bytes)}
}

// BytesPerToken is the ratio EstimateTokens assumes.
const BytesPerToken = 4

// EstimateTokens estimates the tokens a model's tokenizer makes of n bytes
// of tool definitions: n/BytesPerToken, rounded up. It is an estimate,
// not a count: each model has its own tokenizer, which berth does not
// ship, and how a client presents the definitions to its model (JSON as
// listed, or a rendering of its own) is the client's. Four bytes a token
// is the usual rule of thumb for English text and JSON under the BPE
// tokenizers in use; docs/profiles.md gives how it compared with real
// tokenizers on the recorded tools.
func EstimateTokens(n int) int {
	if n <= 0 {
		return 0
	}
	return (n + BytesPerToken - 1) / BytesPerToken
}

// EntryBytes is the size of def's entry in a tools/list result, as go-sdk
// writes the result: encoding/json, compact, without HTML escaping.
func EntryBytes(def *mcp.Tool) (int, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(def); err != nil {
		return 0, fmt.Errorf("measuring the tools/list entry of %s: %w", def.Name, err)
	}
	return len(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

// ToolCost is the cost of t's entry as berth lists it (exportedDef, the
// definition addTool registers). ok is false when berth does not list t
// (its input schema is not an object schema, or go-sdk refuses the
// definition), which then costs nothing.
func ToolCost(t *pool.Tool) (c Cost, ok bool) {
	return toolCost(mcp.NewServer(&mcp.Implementation{Name: "scratch"}, nil), t)
}

// toolCost is ToolCost, trying the definition on scratch.
func toolCost(scratch *mcp.Server, t *pool.Tool) (Cost, bool) {
	def, err := listable(scratch, t, nopTool)
	if err != nil {
		return Cost{}, false
	}
	n, err := EntryBytes(def)
	if err != nil {
		return Cost{}, false
	}
	return costOf(1, n), true
}

// MetaCost is the cost of the entries of the meta-tools (MetaTools), which
// lazy mode lists.
func MetaCost() Cost {
	var c Cost
	for _, def := range MetaTools() {
		n, err := EntryBytes(def)
		if err != nil {
			panic(err) // berth's own definitions always marshal
		}
		c = c.Plus(costOf(1, n))
	}
	return c
}

// ViewCost is the context cost of what a view lists, given the tools of
// the pool (Pool.Tools): the whole workspace (profile nil) or a profile's
// tools, in full mode every one of them, in lazy mode the meta-tools and
// the tools the profile lists always (Profile.ListsAlways; always adds
// patterns, as berth serve --always does).
type ViewCost struct {
	// Mode is the tools mode the cost is for.
	Mode store.ToolsMode `json:"mode"`
	// Offered is the cost of every tool the view offers: what full mode
	// lists.
	Offered Cost `json:"offered"`
	// Listed is what the mode lists: Offered in full mode; the meta-tools
	// and the always-listed tools in lazy mode.
	Listed Cost `json:"listed"`
	// Plugins is the cost of each plugin's offered tools, by plugin name.
	Plugins map[string]Cost `json:"plugins"`
}

// MeasureView measures a view of the tools: the profile's (nil: every
// tool) in mode ("": the profile's mode, full without one), always adding
// patterns of tools listed directly in lazy mode.
func MeasureView(tools []*pool.Tool, profile *store.Profile, mode store.ToolsMode, always []string) ViewCost {
	mode = store.EffectiveMode(mode, profile)
	v := ViewCost{Mode: mode, Plugins: map[string]Cost{}}
	// The selection of applyTools: what the view offers, and in lazy mode
	// what it lists directly.
	view := &viewNow{profile: profile, lazy: mode == store.ToolsLazy}
	if profile != nil {
		view.always = append(view.always, profile.Always...)
	}
	view.always = append(view.always, always...)
	scratch := mcp.NewServer(&mcp.Implementation{Name: "scratch"}, nil)
	var direct Cost
	for _, t := range tools {
		if !view.offersTool(t.Plugin, t.Name) {
			continue
		}
		c, ok := toolCost(scratch, t)
		if !ok {
			continue
		}
		v.Offered = v.Offered.Plus(c)
		v.Plugins[t.Plugin] = v.Plugins[t.Plugin].Plus(c)
		if view.listsAlways(t.Name) {
			direct = direct.Plus(c)
		}
	}
	v.Listed = v.Offered
	if view.lazy {
		v.Listed = MetaCost().Plus(direct)
	}
	return v
}

// PluginNames are the names of v.Plugins, sorted.
func (v ViewCost) PluginNames() []string {
	return slices.Sorted(maps.Keys(v.Plugins))
}
