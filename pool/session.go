package pool

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// session is how a live connection's tools are listed and called: an MCP
// client session (stdio and remote servers, mcpSession) or a native tool
// provider's client (nativeSession). Everything else the supervisor does —
// restarts, pinning, drift, catalog, retry — is the same for both.
type session interface {
	listTools(ctx context.Context) ([]*mcp.Tool, error)
	callTool(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error)
	// answered reports whether err, from listTools or callTool, is the
	// peer's own answer (the connection is fine), as opposed to a broken
	// connection or a request that got no answer.
	answered(err error) bool
	// close ends the session: gracefully within about grace, or at once
	// when hard. It may block until the peer is gone.
	close(grace time.Duration, hard bool)
}

// mcpSession is the session of an MCP server.
type mcpSession struct{ cs *mcp.ClientSession }

func (m mcpSession) listTools(ctx context.Context) ([]*mcp.Tool, error) {
	if ir := m.cs.InitializeResult(); ir != nil && ir.Capabilities != nil && ir.Capabilities.Tools == nil {
		return nil, nil
	}
	var out []*mcp.Tool
	for t, err := range m.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func (m mcpSession) callTool(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	params.InputResponses, params.RequestState = stampParams(ctx, isModern(m.cs), &params.Meta, params.SetProgressToken)
	return m.cs.CallTool(ctx, params)
}

// answered: a JSON-RPC error is the server's answer; anything else (a
// closed pipe, a transport error, a timeout) is not.
func (mcpSession) answered(err error) bool {
	var werr *jsonrpc.Error
	return errors.As(err, &werr)
}

// close closes the session; the process, if any, is stopped separately.
func (m mcpSession) close(grace time.Duration, _ bool) {
	done := make(chan struct{})
	go func() { m.cs.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace + time.Second):
	}
}
