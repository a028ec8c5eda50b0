package mcpexport

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// modernProtocol is the first stateless protocol version, where servers
// ask for input by returning InputRequests instead of sending requests.
const modernProtocol = "2026-07-28"

// call is the approver of one tools/call. It tries, in order: the policy;
// elicitation on legacy sessions whose client declared it; InputRequests
// on 2026-07-28 sessions whose client can answer them; the approval queue.
type call struct {
	s   *Server
	req *mcp.CallToolRequest
	// kind is what is asked for; a prompt or a resource comes with req
	// made from its request (asToolRequest).
	kind  pool.RequestKind
	tool  string
	entry AuditEntry
	// inputRequired is the input-required result to return instead of
	// running, on the first round of an InputRequests approval.
	inputRequired *mcp.CallToolResult
	denied        string
}

var errInputRequired = errors.New("waiting for the client's answer to an input request")

// Approve implements pool.Approver.
func (c *call) Approve(ctx context.Context, r *pool.ApprovalRequest) (pool.Decision, error) {
	c.entry.Plugin, c.entry.Server = r.Plugin, r.Server
	c.entry.Policy = r.Policy.String()
	if pool.AllowedByPolicy(r) {
		return c.decide(true, ByPolicy, "", false), nil
	}
	if r.Policy.Action == store.ActionAllow {
		c.entry.Reason = "destructive tool under a glob allow"
	}
	modern := c.req.ProtocolVersion() >= modernProtocol
	canElicit := elicitsForms(c.req.ClientCapabilities())
	switch {
	case modern && c.req.Params.InputResponses != nil:
		return c.fromInputResponses(r), nil
	case modern && canElicit:
		c.inputRequired = &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{inputKey: c.form(r)},
			RequestState:  c.s.states.issue(c.stateKey(), r.Arguments, time.Now()),
		}
		return pool.Decision{}, errInputRequired
	case !modern && canElicit && c.req.Session != nil && c.req.Session.InitializeParams() != nil:
		return c.elicit(ctx, r)
	}
	return c.queue(ctx, r)
}

// elicitsForms reports whether a client can answer a form elicitation.
func elicitsForms(caps *mcp.ClientCapabilities) bool {
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil
}

func (c *call) form(r *pool.ApprovalRequest) *mcp.ElicitParams {
	return &mcp.ElicitParams{Mode: "form", Message: approvalMessage(r), RequestedSchema: approvalSchema}
}

func (c *call) elicit(ctx context.Context, r *pool.ApprovalRequest) (pool.Decision, error) {
	res, err := c.req.Session.Elicit(ctx, c.form(r))
	if err != nil {
		if ctx.Err() != nil {
			return c.decide(false, ByElicitation, "the call was cancelled while waiting for an answer", false), nil
		}
		return c.decide(false, ByElicitation, "the client could not ask: "+shortErr(err), false), nil
	}
	return c.choice(res, ByElicitation, r), nil
}

func (c *call) fromInputResponses(r *pool.ApprovalRequest) pool.Decision {
	if err := c.s.states.redeem(c.req.Params.RequestState, c.stateKey(), r.Arguments, time.Now()); err != nil {
		return c.decide(false, ByInputRequests, err.Error(), false)
	}
	res, ok := c.req.Params.InputResponses[inputKey].(*mcp.ElicitResult)
	if !ok {
		return c.decide(false, ByInputRequests, "the client did not answer berth's approval request", false)
	}
	return c.choice(res, ByInputRequests, r)
}

// choice acts on an elicitation answer; "allow always" also writes the
// policy for this exact tool.
func (c *call) choice(res *mcp.ElicitResult, by DecidedBy, r *pool.ApprovalRequest) pool.Decision {
	ch, reason := choiceOf(res)
	switch ch {
	case choiceOnce:
		return c.decide(true, by, "", false)
	case choiceAlways:
		if err := c.allowAlways(); err != nil {
			return c.decide(false, by, "allow-always could not be recorded: "+shortErr(err), false)
		}
		return c.decide(true, by, "", true)
	}
	return c.decide(false, by, reason, false)
}

func (c *call) allowAlways() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.s.store.SetPolicy(ctx, store.PolicyRule{Plugin: c.entry.Plugin, Pattern: c.tool, Action: store.ActionAllow})
}

// queue records the call as pending and waits for `berth approve` or
// `berth deny`, sending progress and a log message meanwhile; after the
// timeout it fails closed.
func (c *call) queue(ctx context.Context, r *pool.ApprovalRequest) (pool.Decision, error) {
	now := time.Now()
	deadline := now.Add(c.s.timeout)
	p, err := c.s.queue.Add(Pending{
		Tool: c.tool, Plugin: r.Plugin, Server: r.Server,
		Arguments: prettyArgs(r.Arguments, maxShownArgs), Annotations: describeAnnotations(r.Annotations),
		Client: c.entry.Client, CreatedAt: now.UTC(), Deadline: deadline.UTC(),
	})
	if err != nil {
		return c.decide(false, ByQueue, "the approval queue is unusable: "+shortErr(err), false), nil
	}
	defer c.s.queue.Remove(p.ID)
	c.entry.Approval = p.ID
	c.s.log.Info("a tool call waits for approval", "tool", c.tool, "approval", p.ID, "approve", "berth approve "+p.ID, "deny", "berth deny "+p.ID, "deadline", deadline.Format(time.TimeOnly))
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	go notifyWaiting(wctx, c.req, p.ID, deadline, now)
	d, err := c.s.queue.Wait(wctx, p)
	switch {
	case err != nil && ctx.Err() != nil:
		return c.decide(false, ByQueue, "the call was cancelled while it waited for approval "+p.ID, false), nil
	case err != nil:
		return c.decide(false, ByTimeout, fmt.Sprintf("no one approved it within %s (approval %s)", c.s.timeout, p.ID), false), nil
	case !d.Allow:
		return c.decide(false, ByQueue, fmt.Sprintf("it was denied with `berth deny %s`", p.ID), false), nil
	}
	if d.Always {
		if err := c.allowAlways(); err != nil {
			return c.decide(false, ByQueue, "allow-always could not be recorded: "+shortErr(err), false), nil
		}
	}
	return c.decide(true, ByQueue, "", d.Always), nil
}

func (c *call) decide(allow bool, by DecidedBy, reason string, always bool) pool.Decision {
	c.entry.DecidedBy, c.entry.Always = by, always
	if allow {
		c.entry.Decision = VerdictAllow
	} else {
		c.entry.Decision, c.entry.Reason, c.denied = VerdictDeny, reason, reason
	}
	return pool.Decision{Allow: allow, By: string(by), Reason: reason}
}

// reason is what a refusal says: the approver's reason, or the pool's.
func (c *call) reason(err error) string {
	if c.denied != "" {
		return c.denied
	}
	return err.Error()
}

// stateKey is what an input request's state is bound to besides the
// arguments: the name, and for a prompt or resource its kind, so that an
// approval of a prompt is never redeemed for a tool of the same name.
func (c *call) stateKey() string {
	if c.kind == pool.RequestTool {
		return c.tool
	}
	return string(c.kind) + ":" + c.tool
}

func (c *call) writeAudit() {
	if c.entry.Decision == "" && c.entry.Outcome == "" {
		return
	}
	if err := c.s.audit.Append(c.entry); err != nil {
		c.s.log.Error("cannot write the audit log", "error", err)
	}
}

func shortErr(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i > 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
