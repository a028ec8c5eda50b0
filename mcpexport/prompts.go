package mcpexport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// Prompts and resources go through the approval path of tool calls: the
// pool applies the operator's policy (deny hides and refuses), the same
// approver decides ask (elicitation, input requests, the queue), and every
// decision goes to the audit log with its kind.

// asToolRequest makes the tools/call request the approver reads from a
// prompts/get or resources/read: the same session, transport extra,
// _meta (progress token) and input responses.
func asToolRequest(ss *mcp.ServerSession, extra *mcp.RequestExtra, name string, meta mcp.Meta, responses mcp.InputResponseMap, state string) *mcp.CallToolRequest {
	return &mcp.CallToolRequest{Session: ss, Extra: extra, Params: &mcp.CallToolParamsRaw{Meta: meta, Name: name, InputResponses: responses, RequestState: state}}
}

// getPrompt runs one prompts/get: approval, then the pool's fetch with its
// boundaries. A refusal is an error that says why and what to run.
func (s *Server) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (res *mcp.GetPromptResult, err error) {
	name := req.Params.Name
	ctx, stop := s.bindRequest(ctx, req.Extra)
	defer stop()
	c := s.requestCall(ctx, pool.RequestPrompt, name,
		asToolRequest(req.Session, req.Extra, name, req.Params.Meta, req.Params.InputResponses, req.Params.RequestState))
	defer s.traceCall(ctx, c)
	args, _ := json.Marshal(req.Params.Arguments)
	c.entry.Arguments = ArgumentShape(args)
	defer c.recoverInto(&err)
	key := "prompt:" + name
	responses, state, retried, serr := c.signInRound(ctx, key, args, req.Params.InputResponses, req.Params.RequestState)
	if serr != nil {
		return nil, c.settle(serr)
	}
	c.relay, c.relayReq = s.relayFor(ctx, req.Session, req.Params.Meta, c.req.ClientCapabilities(), c.req.ProtocolVersion(), responses, state, c.entry)
	defer c.relay.flush()
	sctx := s.withSignIn(pool.WithRelay(ctx, c.relayReq), req.Session, c.req.ClientCapabilities(), c.req.ProtocolVersion(), c.entry)
	res, err = s.pool.GetPrompt(sctx, name, req.Params.Arguments, c)
	s.signInDone(sctx, req.Session, err)
	if ir, ierr, again := c.signInAsInput(ctx, err, retried, key, args); ir != nil {
		return &mcp.GetPromptResult{InputRequests: ir.InputRequests, RequestState: ir.RequestState}, nil
	} else if again {
		res, err = s.pool.GetPrompt(sctx, name, req.Params.Arguments, c)
	} else if ierr != nil {
		err = ierr
	}
	if c.inputRequired != nil {
		return &mcp.GetPromptResult{InputRequests: c.inputRequired.InputRequests, RequestState: c.inputRequired.RequestState}, nil
	}
	if err == nil && res.InputRequests != nil {
		if ierr := c.checkInputRequests(res.InputRequests); ierr != nil {
			return nil, fmt.Errorf("berth did not pass on what the prompt %s asked for: %w", name, ierr)
		}
	}
	return res, c.settle(err)
}

// readResource runs one resources/read, like getPrompt.
func (s *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (res *mcp.ReadResourceResult, err error) {
	uri := req.Params.URI
	ctx, stop := s.bindRequest(ctx, req.Extra)
	defer stop()
	c := s.requestCall(ctx, pool.RequestResource, uri,
		asToolRequest(req.Session, req.Extra, uri, req.Params.Meta, req.Params.InputResponses, req.Params.RequestState))
	defer s.traceCall(ctx, c)
	c.entry.Tool, c.entry.URI, c.entry.Arguments = "", uri, map[string]any{"uri": "string"}
	defer c.recoverInto(&err)
	key := "resource:" + uri
	responses, state, retried, serr := c.signInRound(ctx, key, nil, req.Params.InputResponses, req.Params.RequestState)
	if serr != nil {
		return nil, c.settle(serr)
	}
	c.relay, c.relayReq = s.relayFor(ctx, req.Session, req.Params.Meta, c.req.ClientCapabilities(), c.req.ProtocolVersion(), responses, state, c.entry)
	defer c.relay.flush()
	sctx := s.withSignIn(pool.WithRelay(ctx, c.relayReq), req.Session, c.req.ClientCapabilities(), c.req.ProtocolVersion(), c.entry)
	res, err = s.pool.ReadResource(sctx, uri, resourceApprover{c})
	s.signInDone(sctx, req.Session, err)
	if ir, ierr, again := c.signInAsInput(ctx, err, retried, key, nil); ir != nil {
		return &mcp.ReadResourceResult{InputRequests: ir.InputRequests, RequestState: ir.RequestState}, nil
	} else if again {
		res, err = s.pool.ReadResource(sctx, uri, resourceApprover{c})
	} else if ierr != nil {
		err = ierr
	}
	if c.inputRequired != nil {
		return &mcp.ReadResourceResult{InputRequests: c.inputRequired.InputRequests, RequestState: c.inputRequired.RequestState}, nil
	}
	if err == nil && res.InputRequests != nil {
		if ierr := c.checkInputRequests(res.InputRequests); ierr != nil {
			return nil, fmt.Errorf("berth did not pass on what %s asked for: %w", uri, ierr)
		}
	}
	return res, c.settle(err)
}

// bindRequest returns ctx, cancelled also when the HTTP request that
// carried the request, or its session, is gone (as for a tool call), and
// the function that releases it.
func (s *Server) bindRequest(ctx context.Context, extra *mcp.RequestExtra) (context.Context, func()) {
	var header http.Header
	if extra != nil {
		header = extra.Header
	}
	ctx, stop := s.requests.bind(ctx, header)
	ctx, stopLife := bindLife(ctx)
	return ctx, func() { stopLife(); stop() }
}

// requestCall is the approver of one prompts/get or resources/read, with
// its audit entry begun: who asks and how they reached berth.
func (s *Server) requestCall(ctx context.Context, kind pool.RequestKind, name string, req *mcp.CallToolRequest) *call {
	c := &call{s: s, kind: kind, tool: name, req: req, origin: originOf(ctx)}
	c.entry = AuditEntry{Kind: kind, Tool: name, Client: clientName(req), Transport: c.origin.Transport, Authenticated: c.origin.Authenticated}
	return c
}

// resourceApprover names the call by the resource's server identity (what
// the policy and an "allow always" decide by) once the pool has routed it.
type resourceApprover struct{ c *call }

func (a resourceApprover) Approve(ctx context.Context, r *pool.ApprovalRequest) (pool.Decision, error) {
	a.c.tool, a.c.entry.Tool = r.Tool, r.Tool
	return a.c.Approve(ctx, r)
}

// settle records the outcome of a prompt or resource request in the audit
// log and words a refusal.
func (c *call) settle(err error) error {
	what := fmt.Sprintf("the prompt %s", c.entry.Tool)
	if c.kind == pool.RequestResource {
		what = "reading " + c.entry.URI
	}
	switch {
	case c.withdrawn:
		c.entry.Outcome = OutcomeWithdrawn
		c.writeAudit()
		return fmt.Errorf("berth did not get %s: the request was %s. Nothing was sent to the plugin's server", what, c.denied)
	case err == nil:
		c.entry.Outcome = OutcomeRan
		c.writeAudit()
		return nil
	case errors.As(err, new(*viewChangedError)):
		// Allowed, then the view changed while it waited: refused,
		// nothing sent.
		c.entry.Decision, c.entry.DecidedBy, c.entry.Outcome, c.entry.Reason = VerdictDeny, ByBerth, OutcomeRefused, c.viewRefused.Error()
		c.writeAudit()
		return fmt.Errorf("berth refused %s: %v. Nothing was sent to the plugin's server", what, c.viewRefused)
	case errors.Is(err, pool.ErrNotFound):
		return err // not a decision: nothing is audited
	case errors.Is(err, pool.ErrDenied):
		c.entry.Outcome = OutcomeRefused
		var pd *pool.PolicyDeniedError
		if errors.As(err, &pd) {
			r := pd.Request
			c.entry.Tool, c.entry.Plugin, c.entry.Server, c.entry.Policy = r.Tool, r.Plugin, r.Server, r.Policy.String()
			c.entry.Decision, c.entry.DecidedBy, c.entry.Reason = VerdictDeny, ByPolicy, "denied by the operator's policy"
			c.denied = pd.Error()
		}
		c.writeAudit()
		return fmt.Errorf("berth refused %s: %s. Nothing was sent to the plugin's server. To allow it, approve the request when berth asks, or allow it for good with `berth policy set %s allow`", what, c.reason(err), c.entry.Tool)
	case errors.Is(err, store.ErrDrift):
		c.entry.Outcome, c.entry.Reason = OutcomeRefused, "drift"
		c.writeAudit()
		return fmt.Errorf("berth refused %s: %w", what, err)
	case c.signInFailed(err):
		c.entry.Outcome = OutcomeFailed
		c.writeAudit()
		return fmt.Errorf("berth could not get %s: %s: %w", what, c.entry.Reason, err)
	}
	c.entry.Outcome, c.entry.Reason = OutcomeFailed, "error"
	c.writeAudit()
	return fmt.Errorf("berth could not get %s: %w", what, err)
}

// recoverInto turns a panic into an error of this request only.
func (c *call) recoverInto(err *error) {
	if r := recover(); r != nil {
		c.s.log.Error("panic in a request; only it fails", "kind", string(c.kind), "name", c.tool, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		*err = fmt.Errorf("berth: internal error while handling %s (logged on berth's stderr)", c.tool)
		c.entry.Outcome, c.entry.Reason = OutcomeFailed, "panic"
		c.writeAudit()
	}
}
