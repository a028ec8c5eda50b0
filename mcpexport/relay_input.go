//lint:file-ignore SA1019 the relay carries the SEP-2577 features (roots, sampling, logging) during their deprecation window

package mcpexport

import (
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// A plugin server on a 2026-07-28 connection asks for input by returning
// input requests (SEP-2322) instead of sending requests. berth passes them
// to its client unchanged but for an elicitation's message and requested
// schema, which it escapes and marks with their origin as it does a
// request's (relayedMessage, relayedSchema), after the plugin's sampling and elicitation policy and the
// client's capabilities allowed each one, and audits each. The client's
// answers and the server's requestState go back to the server on the
// client's retry (pool.RelayRequest). On a legacy client session go-sdk
// asks the client itself and retries once.

// relayInputRequests checks the server's input requests of a tool call and
// returns the result to give the client: the input requests, or a tool
// error saying why berth refused them.
func (c *call) relayInputRequests(res *mcp.CallToolResult) *mcp.CallToolResult {
	if err := c.checkInputRequests(res.InputRequests); err != nil {
		return toolError(fmt.Sprintf("berth did not pass on what %s asked for: %v", c.tool, err))
	}
	return res
}

// checkInputRequests applies policy and capabilities to a server's input
// requests, marks elicitations with their origin and audits each.
func (c *call) checkInputRequests(m mcp.InputRequestMap) error {
	from := pool.Origin{Plugin: c.entry.Plugin, Server: c.entry.Server, ID: pool.ServerID(c.entry.Plugin, c.entry.Server)}
	caps := c.req.ClientCapabilities()
	var refused error
	for key, ir := range m {
		var kind pool.RequestKind
		declared := false
		switch p := ir.(type) {
		case *mcp.ElicitParams:
			kind, declared = pool.RequestElicitation, caps != nil && caps.Elicitation != nil
			method := fmt.Sprintf("the input request %q", key)
			msg, err := relayedMessage(from, method, p.Message)
			var schema any
			if err == nil {
				schema, err = relayedSchema(from, method, p.RequestedSchema)
			}
			if err != nil {
				c.inputRelay().audit(from, kind, c.s.pool.RelayPolicy(from.Plugin, kind), OutcomeRefused, err.Error())
				refused = err
				continue
			}
			p.Message, p.RequestedSchema = msg, schema
			p.Meta = metaWithOrigin(p.Meta, from)
		case *mcp.CreateMessageParams:
			kind, declared = pool.RequestSampling, caps != nil && caps.Sampling != nil
		case *mcp.CreateMessageWithToolsParams:
			kind, declared = pool.RequestSampling, caps != nil && caps.Sampling != nil
		case *mcp.ListRootsParams:
			if caps == nil || caps.RootsV2 == nil && caps.Roots == (mcp.RootCapabilities{}) {
				refused = fmt.Errorf("the server asked for the client's roots (%q), and the client did not declare the roots capability", key)
			}
			continue
		default:
			refused = fmt.Errorf("the server asked for %T (%q), which berth does not relay", ir, key)
			continue
		}
		pm := c.s.pool.RelayPolicy(from.Plugin, kind)
		r := c.inputRelay()
		switch {
		case pm.Action == store.ActionDeny:
			err := fmt.Errorf("the operator's policy denies %s for plugin %s (rule %q); change it with `berth policy set %s ask`", kind, from.Plugin, pm.Pattern, pool.RelayPolicyName(from.Plugin, kind))
			r.audit(from, kind, pm, OutcomeRefused, err.Error())
			refused = err
		case !declared:
			err := fmt.Errorf("the server asked for %s (%q), and the client (%s) did not declare the %s capability", kind, key, c.entry.Client, kind)
			r.audit(from, kind, pm, OutcomeRefused, err.Error())
			refused = err
		default:
			r.audit(from, kind, pm, OutcomeRan, "passed to the client as an input request")
		}
	}
	return refused
}

// inputRelay is the relay that audits the call's input requests: the
// call's own, or one for its client when the call relays nothing else.
func (c *call) inputRelay() *callRelay {
	if c.relay != nil {
		return c.relay
	}
	return &callRelay{s: c.s, entry: c.entry, client: c.entry.Client}
}

// upstreamRPCError is the plugin server's own JSON-RPC error answer to a
// call, to relay as such to a 2026-07-28 client, or nil: a missing client
// capability (-32021; the server was told the client's own capabilities,
// so it is the client's) and invalid params (-32602, such as a
// requestState that fails the server's integrity check). Other failures
// stay tool errors.
func upstreamRPCError(name string, err error) error {
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || (werr.Code != mcp.CodeMissingRequiredClientCapabilities && werr.Code != jsonrpc.CodeInvalidParams) {
		return nil
	}
	return &jsonrpc.Error{Code: werr.Code, Message: name + ": " + werr.Message, Data: werr.Data}
}
