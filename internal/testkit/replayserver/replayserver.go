// Package replayserver is an MCP server that lists the tools recorded from
// real servers (testdata/tools-recorded, package recorded) and answers
// every call with a fixed text naming the tool and its arguments, so that
// a test plugin can serve real tool surfaces through berth without the
// real servers. Command berth-replay runs it over stdio.
package replayserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/testkit/recorded"
)

// New is a server listing every tool of recs under the server's own
// name (not the exported name: berth adds <plugin>__<server>__). Two
// recordings with a tool of the same name are an error: serve them from
// two servers.
func New(recs []*recorded.Recording) (*mcp.Server, error) {
	var names []string
	for _, r := range recs {
		names = append(names, r.Server)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "berth-replay", Title: "replay of " + strings.Join(names, ", "), Version: "1"}, nil)
	seen := map[string]string{}
	for _, r := range recs {
		for _, t := range r.Tools {
			if other, ok := seen[t.Name]; ok {
				return nil, fmt.Errorf("tool %s is in both %s and %s: serve each recording from its own replay server", t.Name, other, r.File)
			}
			seen[t.Name] = r.File
			c := *t
			s.AddTool(&c, handler(c.Name, c.OutputSchema))
		}
	}
	return s, nil
}

// Answer is the text of a call's result: the tool's name and its
// arguments as the client sent them (compacted JSON; {} for none).
func Answer(tool string, args json.RawMessage) string {
	a := "{}"
	if len(args) > 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, args); err == nil {
			a = b.String()
		}
	}
	return fmt.Sprintf("replayed %s with arguments %s", tool, a)
}

func handler(name string, outputSchema any) mcp.ToolHandler {
	var structured any
	if outputSchema != nil {
		structured = Instance(outputSchema)
	}
	return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: Answer(name, req.Params.Arguments)}},
			StructuredContent: structured,
		}, nil
	}
}

// Instance is a small value valid against a tool's output schema (a JSON
// Schema as decoded JSON): an object with its required properties, each
// the zero of its type (first enum value, "" , 0, false, [] or a nested
// object), so a client that checks structured content against the output
// schema accepts the replayed answer.
func Instance(schema any) any {
	m, _ := schema.(map[string]any)
	if m == nil {
		return map[string]any{}
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	if c, ok := m["const"]; ok {
		return c
	}
	typ := m["type"]
	if ts, ok := typ.([]any); ok && len(ts) > 0 {
		typ = ts[0]
	}
	switch typ {
	case "string":
		return ""
	case "number", "integer":
		if min, ok := m["minimum"].(float64); ok {
			return min
		}
		return 0
	case "boolean":
		return false
	case "array":
		return []any{}
	case "null":
		return nil
	}
	obj := map[string]any{}
	props, _ := m["properties"].(map[string]any)
	req, _ := m["required"].([]any)
	for _, r := range req {
		if n, ok := r.(string); ok {
			obj[n] = Instance(props[n])
		}
	}
	return obj
}

// Main runs the server over stdin and stdout with the command line args:
//
//	berth-replay [-dir DIR] RECORDING...
//
// A RECORDING is a recording's file name in DIR (default
// testdata/tools-recorded of the source tree), its npm package name, or
// its plugin name in recorded.Names (filesystem, github, …). It returns
// the exit code.
func Main(args []string) int {
	fs := flag.NewFlagSet("berth-replay", flag.ContinueOnError)
	dir := fs.String("dir", recorded.Dir(), "the directory of the recordings")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	recs, err := Select(*dir, fs.Args())
	if err == nil && len(recs) == 0 {
		err = errors.New("usage: berth-replay [-dir DIR] RECORDING... (a file name, npm package or plugin name of a recording)")
	}
	var s *mcp.Server
	if err == nil {
		s, err = New(recs)
	}
	if err == nil {
		err = s.Run(context.Background(), &mcp.StdioTransport{})
		if errors.Is(err, io.EOF) {
			err = nil
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "berth-replay:", err)
		return 1
	}
	return 0
}

// Select loads the recordings of dir that names name (file name, npm
// package or plugin name), in the order named.
func Select(dir string, names []string) ([]*recorded.Recording, error) {
	if len(names) == 0 {
		return nil, nil
	}
	all, err := recorded.Load(dir)
	if err != nil {
		return nil, err
	}
	var out []*recorded.Recording
	for _, n := range names {
		var found *recorded.Recording
		for _, r := range all {
			if n == r.File || n == r.Package || n == r.Plugin || filepath.Base(n) == r.File {
				found = r
				break
			}
		}
		if found == nil {
			return nil, fmt.Errorf("no recording %q in %s: name a file, npm package or plugin name of one", n, dir)
		}
		out = append(out, found)
	}
	return out, nil
}
