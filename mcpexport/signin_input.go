package mcpexport

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/signin"
)

// On a 2026-07-28 session berth cannot send its client a request during a
// call, so a tools/call, prompts/get or resources/read that needs a sign-in is answered with an input
// request instead (SEP-2322): a URL-mode elicitation of the sign-in page,
// and a requestState of berth's. The sign-in runs meanwhile in the
// background (pool.SignIn, which waits for the loopback redirect up to
// SignInWait); the client's retry, carrying the human's answer and that
// state, waits for it to complete and then runs the call afresh (policy,
// approval and audit as any call, except that an approval a human gave
// the call before the sign-in interrupted it covers its retry:
// call.Approve). Two calls of one session that need the same sign-in
// share one flow: one sign-in page, whatever the number of calls; another
// session's call is never shown it (signin_owner.go).

// signInInputKey names berth's sign-in input request.
const signInInputKey = "berth-signin"

// signInStatePrefix starts the requestState of a sign-in input request.
const signInStatePrefix = "berth-signin-"

// signInFlow is one sign-in running in the background for input
// requests.
type signInFlow struct {
	target signin.Target
	owner  any                // the session that started it (signInOwner)
	prompt chan signin.Prompt // gets the prompt once shown
	done   chan struct{}      // closed when the sign-in is over
	err    error              // its outcome, set before done closes
}

// signInFlows are the background sign-ins, by target, and the input
// requests' states that wait for them.
type signInFlows struct {
	mu       sync.Mutex
	byTarget map[string]*signInFlow
	states   map[string]signInState
}

type signInState struct {
	flow    *signInFlow
	binding string // the call's tool and arguments
	expires time.Time
	// approved is the approval a human gave the call before the sign-in
	// interrupted it: its retry runs on it (call.Approve checks it is
	// the same call), nil when none was given.
	approved *signInApproval
}

func stateBinding(tool string, args []byte) string {
	sum := sha256.Sum256(append([]byte(tool+"\x00"), args...))
	return hex.EncodeToString(sum[:])
}

// flowFor returns the running flow of a target, or starts one with start;
// nil when a sign-in to the target is asked through a legacy session
// meanwhile (asks: one sign-in page per server, whatever the protocol).
func (f *signInFlows) flowFor(t signin.Target, asks *signInAsks, owner any, start func(*signInFlow)) *signInFlow {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl := f.byTarget[t.ID()]; fl != nil {
		return fl
	}
	if !asks.take(t.ID()) {
		return nil
	}
	if f.byTarget == nil {
		f.byTarget, f.states = map[string]*signInFlow{}, map[string]signInState{}
	}
	fl := &signInFlow{target: t, owner: owner, prompt: make(chan signin.Prompt, 1), done: make(chan struct{})}
	f.byTarget[t.ID()] = fl
	go func() {
		start(fl)
		f.mu.Lock()
		if f.byTarget[t.ID()] == fl {
			delete(f.byTarget, t.ID())
		}
		f.mu.Unlock()
		asks.release(t.ID())
	}()
	return fl
}

// issue records a state for a call that waits for fl.
func (f *signInFlows) issue(fl *signInFlow, binding string, approved *signInApproval) string {
	var b [16]byte
	rand.Read(b[:])
	st := signInStatePrefix + hex.EncodeToString(b[:])
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	for k, v := range f.states {
		if now.After(v.expires) {
			delete(f.states, k)
		}
	}
	f.states[st] = signInState{flow: fl, binding: binding, expires: now.Add(2 * SignInWait), approved: approved}
	return st
}

// redeem takes the state of a retry, once.
func (f *signInFlows) redeem(state, binding string) (*signInFlow, *signInApproval, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.states[state]
	delete(f.states, state)
	switch {
	case !ok || time.Now().After(st.expires):
		return nil, nil, errors.New("its requestState is not one berth issued for a sign-in, or was used or expired; call again")
	case st.binding != binding:
		return nil, nil, errors.New("its requestState was issued for another call (tool or arguments differ); call again")
	}
	return st.flow, st.approved, nil
}

// canAskSignInInput reports whether a 2026-07-28 session's client can be
// sent a sign-in as an input request: it declared URL-mode elicitation.
func canAskSignInInput(caps *mcp.ClientCapabilities, protocol string) bool {
	return protocol >= modernProtocol && caps != nil && caps.Elicitation != nil && caps.Elicitation.URL != nil
}

// signInInputRequest answers a call that needs a sign-in (ne) on a
// 2026-07-28 session (key names the request: its kind and name; args its
// arguments, which the state is bound to) with the sign-in as an input request, starting the
// sign-in in the background (or joining one running for the server). It
// returns nil when it cannot (the client declared no URL elicitation, or
// the sign-in failed before it could be shown: err then says why).
func (c *call) signInInputRequest(ctx context.Context, ne *signin.NeedSignInError, key string, args []byte) (*mcp.CallToolResult, error) {
	s := c.s
	t := ne.Target
	owner := signInOwner(c.req.Session)
	fl := s.signInFlows.flowFor(t, s.signIns, owner, func(fl *signInFlow) {
		fctx, cancel := context.WithTimeout(context.Background(), SignInWait+time.Minute)
		defer cancel()
		ask := func(_ context.Context, p signin.Prompt) error {
			if err := tooManyScopes(p); err != nil {
				return err
			}
			fl.prompt <- p
			return nil
		}
		var extra []string
		if ne.StepUp {
			extra = ne.Scopes
		}
		fl.err = s.pool.SignIn(signin.WithAsk(fctx, ask), t.Plugin, t.Server, extra...)
		close(fl.done)
	})
	if fl == nil {
		e := c.signInAudit(t, signin.Prompt{})
		e.Decision, e.DecidedBy, e.Outcome, e.Reason = VerdictDeny, ByBerth, OutcomeRefused, busySignIn
		s.appendAudit(e)
		return nil, &SignInNotDoneError{Target: t, Why: busySignIn}
	}
	if fl.owner != owner {
		// Another session's sign-in: its page (the state, the PKCE
		// challenge) is that session's alone (signin_owner.go).
		if err := c.otherSessionsSignIn(fl); err != nil {
			return nil, err
		}
		return nil, nil // signed in meanwhile: go on
	}
	var p signin.Prompt
	select {
	case p = <-fl.prompt:
		fl.prompt <- p // for the next call that joins this flow
	case <-fl.done:
		if fl.err != nil {
			return nil, fl.err
		}
		// Signed in meanwhile (another call's): go on.
		return nil, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	e := c.signInAudit(t, p)
	e.Decision, e.Outcome, e.Reason = VerdictAllow, OutcomeRan, "passed to the client as an input request; "+signInSummary(p)
	s.appendAudit(e)
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{signInInputKey: &mcp.ElicitParams{
			Mode: "url", Message: signInMessage(p), URL: p.URL, ElicitationID: newElicitationID(),
			Meta: mcp.Meta{metaOrigin: map[string]string{"plugin": t.Plugin, "server": t.Server}},
		}},
		RequestState: s.signInFlows.issue(fl, stateBinding(key, args), c.approved),
	}, nil
}

// signInRetry acts on a retry that answers berth's sign-in input
// request (key names the request as signInInputRequest's did): it waits for the sign-in to complete (or fails with why not),
// and then clears the answer from the request so that the call runs
// afresh.
func (c *call) signInRetry(ctx context.Context, key string, args []byte) error {
	p := c.req.Params
	fl, approved, err := c.s.signInFlows.redeem(p.RequestState, stateBinding(key, args))
	if err != nil {
		return fmt.Errorf("berth did not run %s: %w", c.tool, err)
	}
	res, _ := p.InputResponses[signInInputKey].(*mcp.ElicitResult)
	p.InputResponses, p.RequestState = nil, ""
	if res == nil || res.Action != "accept" {
		action := "no answer"
		if res != nil {
			action = res.Action
		}
		e := c.signInAudit(fl.target, signin.Prompt{Target: fl.target})
		why := fmt.Sprintf("the user answered %q in the client", strings.ToValidUTF8(action, "?"))
		e.Decision, e.Outcome, e.Reason = VerdictDeny, OutcomeRefused, why
		c.s.appendAudit(e)
		return &SignInNotDoneError{Target: fl.target, Why: why}
	}
	select {
	case <-fl.done:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	if fl.err != nil {
		var nd *SignInNotDoneError
		if errors.As(fl.err, &nd) {
			return fl.err
		}
		return &SignInNotDoneError{Target: fl.target, Why: "the sign-in failed (" + shortErr(fl.err) + ")", Err: fl.err}
	}
	// The call runs afresh: on the approval given before the sign-in, if
	// it is the same call (Approve checks).
	c.preApproved = approved
	return nil
}

// signInAudit is the audit entry of a sign-in asked for a call.
func (c *call) signInAudit(t signin.Target, _ signin.Prompt) AuditEntry {
	e := c.entry
	e.Kind, e.Tool, e.Plugin, e.Server = KindSignIn, t.ID(), t.Plugin, t.Server
	e.URI, e.ArgumentsDigest, e.Arguments, e.Approval, e.Always, e.Policy = "", "", nil, "", false, ""
	e.DecidedBy = ByInputRequests
	return e
}

// markInputRequired returns res as a result whose resultType is
// "input_required", for a result berth returns from its middleware (go-sdk
// sets the type only on what a registered handler returns): through its
// own JSON decoding, the one way to set it.
func markInputRequired(res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	data, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	m["resultType"] = json.RawMessage(`"input_required"`)
	if data, err = json.Marshal(m); err != nil {
		return nil, err
	}
	out := &mcp.CallToolResult{}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, err
	}
	return out, nil
}

// needsInputSignIn reports whether a call failed for want of a sign-in
// that berth can ask its 2026-07-28 client for as an input request (not
// one a human already declined).
func needsInputSignIn(err error, req *mcp.CallToolRequest) (*signin.NeedSignInError, bool) {
	var ne *signin.NeedSignInError
	var nd *SignInNotDoneError
	if err == nil || !errors.As(err, &ne) || errors.As(err, &nd) || !canAskSignInInput(req.ClientCapabilities(), req.ProtocolVersion()) {
		return nil, false
	}
	if ne.StepUp && len(ne.Scopes) == 0 {
		return nil, false // a step-up signin refused (the server's scope list is malformed): nothing to ask for
	}
	return ne, true
}

// signInRound is the start of a prompts/get or resources/read on the
// sign-in's side: a retry that answers berth's sign-in input request
// waits for the sign-in (retried), and the answer is not passed on; the
// request's own input responses and state are returned as they are.
func (c *call) signInRound(ctx context.Context, key string, args []byte, responses mcp.InputResponseMap, state string) (mcp.InputResponseMap, string, bool, error) {
	if !strings.HasPrefix(state, signInStatePrefix) {
		return responses, state, false, nil
	}
	if err := c.signInRetry(ctx, key, args); err != nil {
		return nil, "", true, err
	}
	return nil, "", true, nil
}

// signInAsInput turns a request's need of a sign-in (err) on a 2026-07-28
// session into berth's input request (ir), or says that the sign-in was
// done meanwhile and the request should be sent again (again), or
// returns the sign-in's failure (ierr). Nothing when the request did not
// need one or was already a retry after a sign-in.
func (c *call) signInAsInput(ctx context.Context, err error, retried bool, key string, args []byte) (ir *mcp.CallToolResult, ierr error, again bool) {
	if perr := c.s.policyBeforeSignIn(c.kind, c.tool, err); policyOf(perr) != "" {
		// The policy denies it: no sign-in is asked (signin_policy.go).
		c.entry.Policy = policyOf(perr)
		return nil, perr, false
	}
	ne, ok := needsInputSignIn(err, c.req)
	if !ok || retried {
		return nil, nil, false
	}
	ir, ierr = c.signInInputRequest(ctx, ne, key, args)
	again = ir == nil && ierr == nil
	if again {
		// Signed in meanwhile: sent again on the approval just given.
		c.preApproved = c.approved
	}
	return ir, ierr, again
}
