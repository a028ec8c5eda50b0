// Package recorded loads the tools/list answers recorded from real MCP
// servers on npm (testdata/tools-recorded, made by scripts/record-tools):
// the fixtures of the search-quality test, the context benchmark and the
// replay test server. Only tests and test programs import it.
package recorded

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Recording is one server's recorded tools/list answer.
type Recording struct {
	// File is the recording's file name in the directory.
	File string
	// Package and Version are the npm package and its exact version.
	Package, Version string
	// Plugin and Server name the recording in exported names
	// (<Plugin>__<Server>__<tool>): a berth plugin name and server name
	// fixed per package in Names.
	Plugin, Server string
	// Tools are the tools as the server listed them, decoded as go-sdk
	// decodes them (fields go-sdk does not model, such as execution, are
	// dropped). Their names are the server's own.
	Tools []*mcp.Tool
	// Raw are the same tools as the exact JSON the server sent.
	Raw []json.RawMessage
}

// Names gives each recorded package its plugin and server name.
var Names = map[string][2]string{
	"@modelcontextprotocol/server-everything":          {"everything", "everything"},
	"@modelcontextprotocol/server-filesystem":          {"filesystem", "filesystem"},
	"@modelcontextprotocol/server-memory":              {"memory", "memory"},
	"@modelcontextprotocol/server-sequential-thinking": {"sequential-thinking", "thinking"},
	"@modelcontextprotocol/server-github":              {"github", "github"},
	"@modelcontextprotocol/server-puppeteer":           {"puppeteer", "puppeteer"},
	"@playwright/mcp":                                  {"playwright", "playwright"},
	"@wonderwhy-er/desktop-commander":                  {"desktop-commander", "commander"},
	"chrome-devtools-mcp":                              {"chrome-devtools", "devtools"},
	"@notionhq/notion-mcp-server":                      {"notion", "notion"},
}

// Dir is testdata/tools-recorded of this module's source tree.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "tools-recorded")
}

// Load reads every recording (*@*.json) in dir, sorted by file name.
func Load(dir string) ([]*Recording, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*@*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no recordings (*@*.json) in %s: run scripts/record-tools", dir)
	}
	sort.Strings(files)
	var recs []*Recording
	for _, f := range files {
		r, err := LoadFile(f)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// LoadFile reads one recording.
func LoadFile(path string) (*Recording, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Package string            `json:"package"`
		Version string            `json:"version"`
		Tools   []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("recording %s: %w", path, err)
	}
	n, ok := Names[f.Package]
	if !ok {
		return nil, fmt.Errorf("recording %s: package %q has no plugin and server name in recorded.Names", path, f.Package)
	}
	r := &Recording{File: filepath.Base(path), Package: f.Package, Version: f.Version, Plugin: n[0], Server: n[1], Raw: f.Tools}
	for _, raw := range f.Tools {
		t := new(mcp.Tool)
		if err := json.Unmarshal(raw, t); err != nil {
			return nil, fmt.Errorf("recording %s: a tool: %w", path, err)
		}
		r.Tools = append(r.Tools, t)
	}
	return r, nil
}

// Exported is the exported name of a tool of r.
func (r *Recording) Exported(tool string) string {
	return r.Plugin + "__" + r.Server + "__" + tool
}

// Tools returns copies of every tool of recs, named by their exported
// names, in order.
func Tools(recs []*Recording) []*mcp.Tool {
	var out []*mcp.Tool
	for _, r := range recs {
		for _, t := range r.Tools {
			c := *t
			c.Name = r.Exported(t.Name)
			out = append(out, &c)
		}
	}
	return out
}

// All loads every recording of Dir and returns its tools under their
// exported names.
func All() ([]*mcp.Tool, error) {
	recs, err := Load(Dir())
	if err != nil {
		return nil, err
	}
	return Tools(recs), nil
}

// Split parses an exported name into plugin, server and tool.
func Split(exported string) (plugin, server, tool string, ok bool) {
	plugin, rest, ok1 := strings.Cut(exported, "__")
	server, tool, ok2 := strings.Cut(rest, "__")
	return plugin, server, tool, ok1 && ok2
}
