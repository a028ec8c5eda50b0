package mcpexport

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
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
	kind   pool.RequestKind
	tool   string
	origin origin
	entry  AuditEntry
	// inputRequired is the input-required result to return instead of
	// running, on the first round of an InputRequests approval.
	inputRequired *mcp.CallToolResult
	denied        string
	// withdrawn is set when the call's request ended while it waited for
	// a human.
	withdrawn bool
	// relay is where the plugin server's progress and requests go
	// (relay.go); relayReq is the pool's view of it.
	relay    *callRelay
	relayReq *pool.RelayRequest
	// approved is the approval a human gave this call, kept so that its
	// retry after a sign-in (2026-07-28 input requests) is not asked
	// again; preApproved is that approval, handed to the retry.
	approved, preApproved *signInApproval
	// viewRefused is why the view does not offer what the pool routed
	// the request to (Server.viewRefusal), set by Approve.
	viewRefused error
	// task is set when the call is task-augmented (tasks.go): the task,
	// if one is made, runs on this call's approval.
	task *pool.TaskCall
	// approver names who decided the call when the queue did: "queue: "
	// and the decider the queue recorded (QueueDecision.By, e.g.
	// "berth approve (alice)"), for telemetry's berth.approved_by.
	approver string
}

// signInApproval is a human's approval of one call, remembered across the
// sign-in that interrupted it: bound (binding) to the session, the
// request's kind and name, the plugin version, server and tool surface,
// and the canonical arguments. It covers that one retry only.
type signInApproval struct {
	binding string
	by      DecidedBy
}

// approvalBinding is what a remembered approval is bound to.
func (c *call) approvalBinding(r *pool.ApprovalRequest) string {
	h := sha256.New()
	session := c.s.sessionTag(c.req.Session)
	if c.origin.Transport == TransportStateless {
		// No sessions: each request has a session of its own, and the
		// sign-in's requestState (random, returned only to the caller)
		// is what ties the retry to the call.
		session = TransportStateless
	}
	for _, f := range []string{session, string(r.Kind), c.stateKey(), r.Tool, r.URI, r.Plugin, r.Version, r.Server, r.UpstreamTool, fmt.Sprint(r.Native), r.Surface, c.entry.Client, c.origin.Transport, fmt.Sprint(c.origin.Authenticated)} {
		fmt.Fprintf(h, "%d:%s\x00", len(f), f)
	}
	ann, _ := json.Marshal(r.Annotations)
	fmt.Fprintf(h, "%d:%s\x00", len(ann), ann)
	argSum := sha256.Sum256(r.Arguments)
	h.Write(argSum[:])
	return hex.EncodeToString(h.Sum(nil))
}

var errInputRequired = errors.New("waiting for the client's answer to an input request")

// Approve implements pool.Approver. A human's approval is remembered for
// the call (approved); the retry of a call that was approved and then
// interrupted by a sign-in runs on that approval (preApproved), once,
// when it is the same call: same session, request, tool surface and
// arguments. Anything else is asked again.
func (c *call) Approve(ctx context.Context, r *pool.ApprovalRequest) (pool.Decision, error) {
	// The view first: nothing outside it is asked about or sent,
	// whatever path the request took.
	if err := c.s.viewRefusal(c.kind, r.Plugin, r.Tool); err != nil {
		c.viewRefused = err
		return pool.Decision{}, err
	}
	if pa := c.preApproved; pa != nil {
		c.preApproved = nil
		if pa.binding == c.approvalBinding(r) && r.Policy.Action != store.ActionDeny {
			c.entry.Plugin, c.entry.Server, c.entry.Policy = r.Plugin, r.Server, r.Policy.String()
			c.approved = pa
			d := c.decide(true, pa.by, "", false)
			c.entry.Reason = "approved before the sign-in that interrupted this call"
			return d, nil
		}
	}
	d, err := c.approve(ctx, r)
	if err == nil && d.Allow {
		// The decision may have taken a while (a form, an input
		// request, the queue): the view again, before the pool
		// dispatches. A profile removed or narrowed meanwhile stops the
		// call as a policy change does.
		if verr := c.s.viewRefusal(c.kind, r.Plugin, r.Tool); verr != nil {
			c.viewRefused = &viewChangedError{by: DecidedBy(d.By), err: verr}
			return pool.Decision{}, c.viewRefused
		}
	}
	if err == nil && d.Allow && DecidedBy(d.By) != ByPolicy {
		c.approved = &signInApproval{binding: c.approvalBinding(r), by: DecidedBy(d.By)}
	}
	return d, err
}

// viewChangedError refuses a request the view stopped offering while it
// was being decided (Server.viewRefusal after the decision): it was
// allowed (by), and nothing runs. It does not wrap pool.ErrNotFound: the
// client is told why, and the refusal is audited.
type viewChangedError struct {
	by  DecidedBy
	err error
}

func (e *viewChangedError) Error() string {
	return fmt.Sprintf("it was allowed (decided by %s), but the view changed while it waited: %v", e.by, e.err)
}

func (c *call) approve(ctx context.Context, r *pool.ApprovalRequest) (pool.Decision, error) {
	c.entry.Plugin, c.entry.Server = r.Plugin, r.Server
	c.entry.Policy = r.Policy.String()
	if c.kind != pool.RequestTool {
		// A prompt's or resource's arguments, as the pool encoded them:
		// what is shown and what the server receives.
		sum := sha256.Sum256(r.Arguments)
		c.entry.ArgumentsDigest = "sha256:" + hex.EncodeToString(sum[:])
	}
	if pool.AllowedByPolicy(r) {
		return c.decide(true, ByPolicy, "", false), nil
	}
	if r.Policy.Action == store.ActionAllow {
		c.entry.Reason = "destructive tool under a glob allow"
	}
	modern := c.req.ProtocolVersion() >= modernProtocol
	canElicit := elicitsForms(c.req.ClientCapabilities())
	_, fits := ShowArguments(r.Arguments, maxFormArgs, "")
	switch {
	case modern && c.req.Params.InputResponses != nil:
		return c.fromInputResponses(r), nil
	case modern && canElicit && fits:
		c.inputRequired = &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{inputKey: c.form(r, "")},
			RequestState:  c.s.states.issue(c.stateKey(), r.Arguments, time.Now()),
		}
		return pool.Decision{}, errInputRequired
	}
	// From here a human is waited for: bounded per session and in all.
	release, err := c.s.pending.acquire(c.req.Session)
	if err != nil {
		return c.decide(false, ByBerth, err.Error(), false), nil
	}
	defer release()
	if !modern && canElicit && c.req.Session != nil && c.req.Session.InitializeParams() != nil {
		if fits {
			return c.elicit(ctx, r), nil
		}
		return c.elicitWithQueue(ctx, r), nil
	}
	return c.queue(ctx, r), nil
}

// elicitsForms reports whether a client can answer a form elicitation.
func elicitsForms(caps *mcp.ClientCapabilities) bool {
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil
}

func (c *call) form(r *pool.ApprovalRequest, id string) *mcp.ElicitParams {
	return &mcp.ElicitParams{Mode: "form", Message: approvalMessage(r, c.origin, c.entry.Client, id), RequestedSchema: approvalSchema}
}

func (c *call) elicit(ctx context.Context, r *pool.ApprovalRequest) pool.Decision {
	res, err := c.req.Session.Elicit(ctx, c.form(r, ""))
	if err != nil {
		if ctx.Err() != nil {
			return c.withdraw(ByElicitation, withdrawalReason(ctx))
		}
		return c.decide(false, ByElicitation, "the client could not ask: "+shortErr(err), false)
	}
	return c.choice(res, ByElicitation)
}

// elicitWithQueue asks in the client's form and waits in the queue at
// once, for arguments too long for a form: the form summarizes them and
// names the queue entry, whose `berth approvals --full ID` shows them
// whole. The first decision, in the form or by `berth approve`/`deny`,
// settles the call.
func (c *call) elicitWithQueue(ctx context.Context, r *pool.ApprovalRequest) pool.Decision {
	p, wctx, cancel, err := c.enqueue(ctx, r)
	if err != nil {
		return c.decide(false, ByQueue, "the approval queue is unusable: "+shortErr(err), false)
	}
	defer cancel()
	type answer struct {
		res *mcp.ElicitResult
		err error
	}
	asked := make(chan answer, 1)
	go func() {
		res, err := c.req.Session.Elicit(wctx, c.form(r, p.ID))
		asked <- answer{res, err}
	}()
	waited := make(chan *QueueDecision, 1)
	go func() {
		d, _ := c.s.queue.Wait(wctx, p)
		waited <- d
	}()
	var d *QueueDecision
	select {
	case a := <-asked:
		if a.err == nil {
			// Claim the decision, so that a `berth approve` after this
			// answer is refused; if one came first, it settles the call.
			ch, _ := choiceOf(a.res)
			mine := &QueueDecision{ID: p.ID, Hash: p.Hash, Allow: ch != choiceDeny, Always: ch == choiceAlways, By: string(ByElicitation), At: time.Now().UTC()}
			if writeJSONOnce(c.s.queue.decisionPath(p.ID), mine) == nil {
				c.s.queue.Remove(p.ID)
				return c.choice(a.res, ByElicitation)
			}
			d = &QueueDecision{}
			if readJSON(c.s.queue.decisionPath(p.ID), d) != nil || d.Hash != p.Hash {
				d = nil
			}
		}
		if d == nil {
			d = <-waited
		}
	case d = <-waited:
	}
	return c.settled(ctx, wctx, p, d)
}

func (c *call) fromInputResponses(r *pool.ApprovalRequest) pool.Decision {
	if c.relayReq != nil {
		// The answers are berth's approval, not the server's: do not pass
		// them on.
		c.relayReq.InputResponses, c.relayReq.RequestState = nil, ""
	}
	if err := c.s.states.redeem(c.req.Params.RequestState, c.stateKey(), r.Arguments, time.Now()); err != nil {
		return c.decide(false, ByInputRequests, err.Error(), false)
	}
	res, ok := c.req.Params.InputResponses[inputKey].(*mcp.ElicitResult)
	if !ok {
		return c.decide(false, ByInputRequests, "the client did not answer berth's approval request", false)
	}
	return c.choice(res, ByInputRequests)
}

// choice acts on an elicitation answer; "allow always" also writes the
// policy for this exact tool.
func (c *call) choice(res *mcp.ElicitResult, by DecidedBy) pool.Decision {
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

// enqueue records the call as pending and returns the context of its
// wait, which ends at the approval deadline.
func (c *call) enqueue(ctx context.Context, r *pool.ApprovalRequest) (*Pending, context.Context, context.CancelFunc, error) {
	now := time.Now()
	deadline := now.Add(c.s.timeout)
	p, err := c.s.queue.Add(Pending{
		Kind: c.kind, Tool: c.tool, URI: r.URI, Plugin: r.Plugin, Version: r.Version, Server: r.Server,
		Workspace: c.s.pool.WorkspaceDir(),
		Arguments: r.Arguments, Annotations: annotationsOf(r.Annotations),
		Client: c.entry.Client, Transport: c.origin.Transport, Authenticated: c.origin.Authenticated,
		Profile: c.s.view.Profile, Session: c.s.sessionTag(c.req.Session), CreatedAt: now.UTC(), Deadline: deadline.UTC(),
	})
	if err != nil {
		return nil, nil, nil, err
	}
	c.entry.Approval = p.ID
	c.s.log.Info("a tool call waits for approval", "tool", c.tool, "approval", p.ID, "approve", "berth approve "+p.ID, "deny", "berth deny "+p.ID, "deadline", deadline.Format(time.TimeOnly))
	wctx, cancel := context.WithDeadline(ctx, deadline)
	go notifyWaiting(wctx, c.req, p.ID, deadline, now)
	if f := c.s.onWaiting; f != nil {
		go f(p)
	}
	return p, wctx, cancel, nil
}

// queue records the call as pending and waits for `berth approve` or
// `berth deny`, sending progress and a log message meanwhile; after the
// timeout it fails closed. When the call's request ends first, the entry
// is withdrawn.
func (c *call) queue(ctx context.Context, r *pool.ApprovalRequest) pool.Decision {
	p, wctx, cancel, err := c.enqueue(ctx, r)
	if err != nil {
		return c.decide(false, ByQueue, "the approval queue is unusable: "+shortErr(err), false)
	}
	defer cancel()
	d, _ := c.s.queue.Wait(wctx, p)
	return c.settled(ctx, wctx, p, d)
}

// settled acts on the outcome of a wait in the queue: a decision (d), the
// end of the call's request (ctx), or the deadline (wctx).
func (c *call) settled(ctx, wctx context.Context, p *Pending, d *QueueDecision) pool.Decision {
	switch {
	case d == nil && ctx.Err() != nil:
		reason := withdrawalReason(ctx)
		c.s.queue.Withdraw(p, reason)
		c.s.log.Info("a waiting tool call was withdrawn", "tool", c.tool, "approval", p.ID, "reason", reason)
		return c.withdraw(ByQueue, reason)
	case d == nil:
		c.s.queue.Remove(p.ID)
		return c.decide(false, ByTimeout, fmt.Sprintf("no one approved it within %s (approval %s)", c.s.timeout, p.ID), false)
	}
	c.s.queue.Remove(p.ID)
	by := ByQueue
	if d.By == string(ByElicitation) {
		by = ByElicitation
	} else {
		c.approver = string(ByQueue) + ": " + d.By
	}
	if !d.Allow {
		if by == ByElicitation {
			return c.decide(false, by, "the user declined in the client's form", false)
		}
		return c.decide(false, ByQueue, fmt.Sprintf("it was denied with `berth deny %s`", p.ID), false)
	}
	if d.Always {
		if err := c.allowAlways(); err != nil {
			return c.decide(false, by, "allow-always could not be recorded: "+shortErr(err), false)
		}
	}
	return c.decide(true, by, "", d.Always)
}

func (c *call) decide(allow bool, by DecidedBy, reason string, always bool) pool.Decision {
	c.entry.DecidedBy, c.entry.Always = by, always
	if c.task != nil {
		c.task.DecidedBy = string(by)
	}
	if allow {
		c.entry.Decision = VerdictAllow
	} else {
		c.entry.Decision, c.entry.Reason, c.denied = VerdictDeny, reason, reason
	}
	return pool.Decision{Allow: allow, By: string(by), Reason: reason}
}

// withdraw ends a call whose request ended while a human was asked:
// nothing was decided and nothing runs.
func (c *call) withdraw(by DecidedBy, reason string) pool.Decision {
	c.withdrawn = true
	c.entry.DecidedBy, c.entry.Decision, c.entry.Reason, c.denied = by, VerdictNone, reason, "withdrawn: "+reason
	return pool.Decision{By: string(by), Reason: c.denied}
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
	c.entry.Profile = c.s.view.Profile
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

// Defaults of the bounds on pending approvals.
const (
	DefaultMaxPendingPerSession = 16
	DefaultMaxPending           = 256
)

// ErrTooManyPending refuses a call at once when its session, or the
// server, already has as many calls waiting for a human as allowed.
var ErrTooManyPending = errors.New("too many calls wait for approval")

// pendingLimits counts the calls that wait for a human (an elicitation
// or the queue), per session and in all.
type pendingLimits struct {
	mu         sync.Mutex
	total      int
	perSession map[*mcp.ServerSession]int
	maxTotal   int
	maxSession int
	hints      Hints
}

// PendingLimitError refuses a call because its session (PerSession), or
// the server in all, already has Max calls waiting for a human. It wraps
// ErrTooManyPending. Raise and Settle are the Hints of the Options that
// say where a user raises that limit and settles waiting calls; an empty
// one is left out of the message.
type PendingLimitError struct {
	PerSession bool
	Max        int
	Raise      string
	Settle     string
}

func (e *PendingLimitError) Error() string {
	if e.PerSession {
		return fmt.Sprintf("this session already has %d calls waiting for approval, the most it may have%s: %v; settle them%s or let them time out first", e.Max, paren(e.Raise), ErrTooManyPending, paren(e.Settle))
	}
	return fmt.Sprintf("%d calls already wait for approval on this berth serve, the most it allows%s: %v; settle them%s or let them time out first", e.Max, paren(e.Raise), ErrTooManyPending, paren(e.Settle))
}

func (e *PendingLimitError) Unwrap() error { return ErrTooManyPending }

// paren is " (hint)", or nothing for no hint.
func paren(hint string) string {
	if hint == "" {
		return ""
	}
	return " (" + hint + ")"
}

func (l *pendingLimits) acquire(ss *mcp.ServerSession) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.perSession[ss] >= l.maxSession:
		return nil, &PendingLimitError{PerSession: true, Max: l.maxSession, Raise: l.hints.MaxPendingPerSession, Settle: l.hints.Approvals}
	case l.total >= l.maxTotal:
		return nil, &PendingLimitError{Max: l.maxTotal, Raise: l.hints.MaxPending, Settle: l.hints.Approvals}
	}
	if l.perSession == nil {
		l.perSession = map[*mcp.ServerSession]int{}
	}
	l.perSession[ss]++
	l.total++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.total--
		if l.perSession[ss]--; l.perSession[ss] <= 0 {
			delete(l.perSession, ss)
		}
	}, nil
}

// sessionTag is a short tag that tells sessions apart in the queue,
// without showing a session's ID (which would let anyone who reads the
// queue post into that session).
func (s *Server) sessionTag(ss *mcp.ServerSession) string {
	if ss == nil {
		return ""
	}
	id := ss.ID()
	if id == "" {
		id = fmt.Sprintf("%p", ss)
	}
	h := hmac.New(sha256.New, s.states.secret)
	h.Write([]byte(id))
	return hex.EncodeToString(h.Sum(nil))[:8]
}
