// Command echoserver is the Go MCP server every benchmark in bench/ calls:
// one tool, echo, that returns its text argument. It serves stdio, or
// Streamable HTTP with -http ADDR.
package main

import (
	"context"
	"flag"
	"log"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoArgs struct {
	Text string `json:"text"`
}

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP at this address instead of stdio")
	stateless := flag.Bool("stateless", false, "stateless Streamable HTTP (the 2026-07-28 era)")
	flag.Parse()
	s := mcp.NewServer(&mcp.Implementation{Name: "echoserver", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Returns its text argument", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	if *addr == "" {
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: *stateless})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	log.SetOutput(os.Stderr)
	log.Fatal(http.ListenAndServe(*addr, mux))
}
