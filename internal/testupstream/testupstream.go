// Package testupstream is the upstream MCP server of the exporter's
// tests: a test binary runs it under the name berth-export-upstream, and a
// plugin of the tests runs that program over stdio.
package testupstream

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Name is the program name under which a test binary serves Main.
const Name = "berth-export-upstream"

type textArgs struct {
	Text string `json:"text"`
}

// Main serves four tools over stdio until stdin closes: echo
// (read-only), wipe (destructive), secret, and raw, which answers with
// the bytes of the arguments it received, exactly; a prompt, note; a
// resource, demo://up/static, and a template, demo://up/item/{id}.
// echo of the text "stall tools/list" makes the server hang: it adds a
// tool "late" (so its client hears tools/list_changed) and answers no
// tools/list from then on, creating $TMPDIR/tools-list-stalled when one
// arrives (the server's own temp directory, which berth gives it). echo
// of "add a tool" adds a tool "extra" (a change of the pinned surface).
func Main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	var stall atomic.Bool
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" && stall.Load() {
				// Tell the test a list hangs: $TMPDIR/tools-list-stalled.
				os.WriteFile(filepath.Join(os.TempDir(), "tools-list-stalled"), nil, 0o600)
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return next(ctx, method, req)
		}
	})
	s.AddPrompt(&mcp.Prompt{Name: "note", Description: "a note about a topic", Arguments: []*mcp.PromptArgument{{Name: "topic"}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "a note on " + req.Params.Arguments["topic"]}}}}, nil
		})
	read := func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "contents of " + req.Params.URI}}}, nil
	}
	s.AddResource(&mcp.Resource{URI: "demo://up/static", Name: "static"}, read)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "demo://up/item/{id}", Name: "item"}, read)
	yes := true
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo the text", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
			if in.Text == "stall tools/list" && !stall.Swap(true) {
				s.AddTool(&mcp.Tool{Name: "late", InputSchema: map[string]any{"type": "object"}},
					func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
						return &mcp.CallToolResult{}, nil
					})
			}
			if in.Text == "add a tool" {
				s.AddTool(&mcp.Tool{Name: "extra", Description: "an extra tool added after the surface was pinned", InputSchema: map[string]any{"type": "object"}},
					func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
						return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "extra ran"}}}, nil
					})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "wipe", Description: "wipe everything", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
		func(ctx context.Context, req *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wiped " + in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "secret", Description: "a tool the operator denies"},
		func(ctx context.Context, req *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "secret ran"}}}, nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "raw", Description: "show the arguments as received", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	s.Run(context.Background(), &mcp.StdioTransport{})
}
