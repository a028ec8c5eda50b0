package toolsearch

import (
	"encoding/json"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolDoc is the Doc of tool t exported as name (<plugin>__<server>__<tool>)
// by plugin's server: its title (or its annotations' title), description,
// and the top-level properties of its input schema with their
// descriptions, in name order.
func ToolDoc(name, plugin, server string, t *mcp.Tool) Doc {
	d := Doc{Name: name, Title: t.Title, Description: t.Description, Plugin: plugin, Server: server}
	if d.Title == "" && t.Annotations != nil {
		d.Title = t.Annotations.Title
	}
	var schema struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	var raw []byte
	switch s := t.InputSchema.(type) {
	case json.RawMessage:
		raw = s
	case []byte:
		raw = s
	default:
		raw, _ = json.Marshal(s)
	}
	if json.Unmarshal(raw, &schema) == nil {
		for n, p := range schema.Properties {
			d.Params = append(d.Params, Param{Name: n, Description: p.Description})
		}
		sort.Slice(d.Params, func(i, j int) bool { return d.Params[i].Name < d.Params[j].Name })
	}
	return d
}
