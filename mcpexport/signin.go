package mcpexport

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/signin"
)

// A remote plugin server that signs in with OAuth may need a human during
// a request: no token yet, a refresh that failed, or a step-up for more
// scopes (docs/serve.md, "Signing in through the client"). The pool's
// remote client asks through go-sdk's OAuth handler (signin.Handler),
// which runs during the very HTTP request that got the 401 or 403 and,
// once the sign-in completed, sends it again: so the asker rides on the
// request's context (signin.WithAsk) and the call goes on as if nothing
// happened, approved once, audited once.
//
// berth asks only a client that can open a link for its human: a legacy
// session (2025-11-25 or older: a 2026-07-28 session cannot be sent a
// request during a call) whose client declared URL-mode elicitation
// (elicitation.url). Everyone else gets the sign-in error, which names
// `berth login plugin__server` and why.

// KindSignIn is the AuditEntry.Kind of a sign-in berth asked a client's
// human for: Tool is the server's identity (plugin__server), Reason the
// authorization server and the scopes. The authorization URL (its state
// and PKCE challenge) is never written.
const KindSignIn pool.RequestKind = "signin"

// signInAsks keeps one sign-in asked through clients per target at a time.
type signInAsks struct {
	mu   sync.Mutex
	busy map[string]bool
}

// take marks target's sign-in as asked for; false when one already is.
func (a *signInAsks) take(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.busy[id] {
		return false
	}
	if a.busy == nil {
		a.busy = map[string]bool{}
	}
	a.busy[id] = true
	return true
}

func (a *signInAsks) release(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.busy, id)
}

// canAskSignIn says whether berth can ask this request's client to sign in,
// and if not, why (for the error the request then ends with).
func canAskSignIn(ss *mcp.ServerSession, caps *mcp.ClientCapabilities, protocol, client string) (bool, string) {
	switch {
	case caps == nil || caps.Elicitation == nil || caps.Elicitation.URL == nil:
		return false, fmt.Sprintf("the client (%s) did not declare URL-mode elicitation (elicitation.url), so berth cannot ask it to open the sign-in page", client)
	case protocol >= modernProtocol:
		// Asked with an input request instead (signin_input.go).
		return false, fmt.Sprintf("the client's session is on protocol %s, where berth cannot send it a request during a call", protocol)
	case ss == nil || ss.InitializeParams() == nil:
		return false, "the request has no legacy client session berth could ask"
	}
	return true, ""
}

// withSignIn returns ctx with an asker of sign-ins that elicits through the
// request's client, when it can (canAskSignIn); otherwise ctx as it is, so
// that a request that needs a sign-in fails with *signin.NeedSignInError.
func (s *Server) withSignIn(ctx context.Context, ss *mcp.ServerSession, caps *mcp.ClientCapabilities, protocol string, entry AuditEntry) context.Context {
	if ok, _ := canAskSignIn(ss, caps, protocol, entry.Client); !ok {
		return ctx
	}
	ctx = context.WithValue(ctx, signInNotesKey{}, &signInNotes{})
	return signin.WithAsk(ctx, func(actx context.Context, p signin.Prompt) error {
		return s.askSignIn(actx, ss, entry, p)
	})
}

// signInNotes are the URL-mode elicitations of sign-ins a request's
// client accepted, to tell the client when they are done.
type signInNotes struct {
	mu  sync.Mutex
	ids []string
}

type signInNotesKey struct{}

func noteSignIn(ctx context.Context, id string) {
	if n, ok := ctx.Value(signInNotesKey{}).(*signInNotes); ok {
		n.mu.Lock()
		n.ids = append(n.ids, id)
		n.mu.Unlock()
	}
}

// signInDone tells the client that the sign-ins it opened during the
// request of ctx (withSignIn) are over (notifications/elicitation/complete),
// once the request went on past them: err, the request's outcome, is not a
// sign-in's failure nor its end.
func (s *Server) signInDone(ctx context.Context, ss *mcp.ServerSession, err error) {
	n, ok := ctx.Value(signInNotesKey{}).(*signInNotes)
	if !ok || ss == nil || ctx.Err() != nil {
		return
	}
	var ne *signin.NeedSignInError
	if errors.As(err, &ne) {
		return
	}
	n.mu.Lock()
	ids := n.ids
	n.ids = nil
	n.mu.Unlock()
	for _, id := range ids {
		nctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := ss.NotifyElicitationComplete(nctx, &mcp.ElicitationCompleteParams{ElicitationID: id}); err != nil {
			s.log.Debug("telling the client a sign-in is done", "error", err)
		}
		cancel()
	}
}

// SignInNotDoneError ends a request whose sign-in was asked for in the
// client and not done: the human declined or cancelled, the client could
// not show it, or another request's sign-in to the same server was
// already waiting for a human. It unwraps to a *signin.NeedSignInError
// (so that the pool treats it as an answer, not as a broken connection)
// and to the client's failure, if any.
type SignInNotDoneError struct {
	Target signin.Target
	Why    string
	Err    error // the client's failure, or nil
}

func (e *SignInNotDoneError) Error() string {
	return fmt.Sprintf("the sign-in for %s was not done: %s; sign in when ready (call again in a client that can open the sign-in page, or run `%s`)", e.Target.ID(), e.Why, e.Target.LoginCommand())
}

func (e *SignInNotDoneError) Unwrap() []error {
	out := []error{&signin.NeedSignInError{Target: e.Target, Reason: e.Why}}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// busySignIn is why a second sign-in to a target is refused while a
// client's human is already asked for one.
const busySignIn = "a sign-in to this server is already waiting for a human in another request (berth opens one at a time); finish or cancel it first"

// askSignIn sends one URL-mode elicitation for a sign-in and returns once
// the human accepted to open the link (the handler then waits for the
// loopback redirect), or an error when they declined or cancelled. The
// ask holds the target for as long as ctx, the request's, lives: a second
// request that needs the same sign-in meanwhile fails at once rather than
// open a second sign-in page.
func (s *Server) askSignIn(ctx context.Context, ss *mcp.ServerSession, entry AuditEntry, p signin.Prompt) error {
	id := p.Target.ID()
	e := entry
	e.Kind, e.Tool, e.Plugin, e.Server = KindSignIn, id, p.Target.Plugin, p.Target.Server
	e.URI, e.ArgumentsDigest, e.Arguments, e.Approval, e.Always, e.Policy = "", "", nil, "", false, ""
	e.DecidedBy = ByElicitation
	what := signInSummary(p)
	if err := tooManyScopes(p); err != nil {
		e.Decision, e.DecidedBy, e.Outcome, e.Reason = VerdictDeny, ByBerth, OutcomeRefused, err.Error()
		s.appendAudit(e)
		return err
	}
	if !s.signIns.take(id) {
		e.Decision, e.DecidedBy, e.Outcome, e.Reason = VerdictDeny, ByBerth, OutcomeRefused, busySignIn+"; "+what
		s.appendAudit(e)
		return &SignInNotDoneError{Target: p.Target, Why: busySignIn}
	}
	// Released when the request ends: its sign-in ends with it (the
	// handler waits for the redirect within the request).
	context.AfterFunc(ctx, func() { s.signIns.release(id) })
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// A sign-in waits for a human, as an approval does: bounded per
	// session and in all.
	release, err := s.pending.acquire(ss)
	if err != nil {
		e.Decision, e.DecidedBy, e.Outcome, e.Reason = VerdictDeny, ByBerth, OutcomeRefused, err.Error()+"; "+what
		s.appendAudit(e)
		return &SignInNotDoneError{Target: p.Target, Why: err.Error(), Err: err}
	}
	context.AfterFunc(ctx, release)
	// The human's time is not the server's: the request's call timeout
	// makes room for the answer here and for the sign-in that follows
	// (which signin bounds by its Wait).
	pool.ExtendCallTimeout(ctx, SignInWait)
	eid := newElicitationID()
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{
		Mode:          "url",
		Message:       signInMessage(p),
		URL:           p.URL,
		ElicitationID: eid,
		Meta:          mcp.Meta{metaOrigin: map[string]string{"plugin": p.Target.Plugin, "server": p.Target.Server}},
	})
	switch {
	case err != nil && ctx.Err() != nil:
		e.Decision, e.Outcome, e.Reason = VerdictNone, OutcomeWithdrawn, withdrawalReason(ctx)+"; "+what
		s.appendAudit(e)
		return fmt.Errorf("asking the client to sign in to %s: %w", id, context.Cause(ctx))
	case err != nil:
		e.Decision, e.Outcome, e.Reason = VerdictNone, OutcomeFailed, "the client could not ask: "+shortErr(err)+"; "+what
		s.appendAudit(e)
		return &SignInNotDoneError{Target: p.Target, Why: "the client could not show it (" + shortErr(err) + ")", Err: err}
	case res.Action != "accept":
		e.Decision, e.Outcome, e.Reason = VerdictDeny, OutcomeRefused, "the user answered "+review.Printable(res.Action)+"; "+what
		s.appendAudit(e)
		return &SignInNotDoneError{Target: p.Target, Why: fmt.Sprintf("the user answered %q in the client", review.Printable(res.Action))}
	}
	e.Decision, e.Outcome, e.Reason = VerdictAllow, OutcomeRan, "the client opened the sign-in; "+what
	s.appendAudit(e)
	noteSignIn(ctx, eid)
	pool.ExtendCallTimeout(ctx, SignInWait)
	return nil
}

// SignInWait is how long a request waits for its client's human to answer
// a sign-in, and then for the sign-in itself, beyond its server's call
// timeout: signin's default wait for the redirect.
const SignInWait = 5 * time.Minute

func (s *Server) appendAudit(e AuditEntry) {
	e.Profile = s.view.Profile
	if err := s.audit.Append(e); err != nil {
		s.log.Error("cannot write the audit log", "error", err)
	}
}

func newElicitationID() string {
	var b [16]byte
	rand.Read(b[:])
	return "berth-signin-" + hex.EncodeToString(b[:])
}

// maxScopesShown bounds the scopes a sign-in message lists.
const maxScopesShown = 20

// scopesText lists scopes as a human reads them: each escaped, cut, at
// most maxScopesShown of them.
func scopesText(scopes []string) string {
	if len(scopes) == 0 {
		return "none named (the server's defaults)"
	}
	var out []string
	for i, sc := range scopes {
		if i == maxScopesShown {
			out = append(out, fmt.Sprintf("and %d more", len(scopes)-i))
			break
		}
		out = append(out, review.Cut(review.Printable(sc), 100))
	}
	return strings.Join(out, ", ")
}

// signInSummary is the sign-in as the audit log records it: never the
// authorization URL.
func signInSummary(p signin.Prompt) string {
	kind := "sign-in"
	if p.StepUp {
		kind = "step-up"
	}
	at := review.Cut(review.Printable(p.Issuer), 200)
	if h := p.Elsewhere(); h != "" {
		at += " (another host than " + review.Cut(review.Printable(h), 200) + ")"
	}
	return fmt.Sprintf("%s at %s for scopes %s", kind, at, scopesText(p.Scopes))
}

// signInMessage is what the client's human reads before opening the link:
// berth's own words (the origin cannot be forged by the plugin: the
// issuer and scopes come from the servers' metadata and are escaped).
func signInMessage(p signin.Prompt) string {
	var b strings.Builder
	if p.StepUp {
		fmt.Fprintf(&b, "berth: plugin %s, server %s asks for more access: sign in again to grant the scopes below.\n", review.Printable(p.Target.Plugin), review.Printable(p.Target.Server))
	} else {
		fmt.Fprintf(&b, "berth: plugin %s, server %s needs you to sign in.\n", review.Printable(p.Target.Plugin), review.Printable(p.Target.Server))
	}
	fmt.Fprintf(&b, "Resource: %s\n", review.Cut(review.Printable(p.Target.Resource), 200))
	if h := p.Elsewhere(); h != "" {
		fmt.Fprintf(&b, "Authorization server: %s (another host than %s)\n", review.Cut(review.Printable(p.Issuer), 200), review.Cut(review.Printable(h), 200))
	} else {
		fmt.Fprintf(&b, "Authorization server: %s\n", review.Cut(review.Printable(p.Issuer), 200))
	}
	if p.StepUp {
		fmt.Fprintf(&b, "Scopes (more than the current sign-in has): %s\n", scopesText(p.Scopes))
	} else {
		fmt.Fprintf(&b, "Scopes: %s\n", scopesText(p.Scopes))
	}
	if p.PreviousIssuer != "" {
		fmt.Fprintf(&b, "Note: the server now names this authorization server; you signed in at %s before. Sign in only if you expect it to have moved.\n", review.Cut(review.Printable(p.PreviousIssuer), 200))
	}
	b.WriteString("Open the link to sign in; the request goes on once the sign-in completes. The token is kept in berth's secret store.")
	return b.String()
}

// needSignIn is the request's sign-in failure, if err is one, with why
// the client was not asked (when it was not).
func needSignIn(err error, ss *mcp.ServerSession, caps *mcp.ClientCapabilities, protocol, client string) (string, bool) {
	var ne *signin.NeedSignInError
	var de *SignInNotDoneError
	switch {
	case errors.As(err, &de):
		return de.Error(), true
	case errors.As(err, &ne):
		msg := ne.Error()
		if ok, why := canAskSignIn(ss, caps, protocol, client); !ok {
			msg += " (berth could not ask in the client: " + why + ")"
		}
		return msg, true
	}
	return "", false
}

// signInFailed reports whether the request failed for want of a sign-in,
// and if so records why in its audit entry (the reason names `berth
// login`; never a token or the authorization URL).
func (c *call) signInFailed(err error) bool {
	msg, ok := needSignIn(err, c.req.Session, c.req.ClientCapabilities(), c.req.ProtocolVersion(), c.entry.Client)
	if ok {
		c.entry.Reason = "needs sign-in: " + msg
	}
	return ok
}

// signInToStart handles a call to a tool of a remote server that never
// started for want of a sign-in (err, the pool's answer, says so): when
// the client can be asked (canAskSignIn), berth signs in through it
// (pool.SignIn, the same URL-mode elicitation as during a request), starts
// the server and re-assembles the catalog, and returns nil once the tool
// is there; the call then runs as any other, approval and audit included.
// Otherwise it returns err, or the sign-in's or start's error.
func (s *Server) signInToStart(ctx context.Context, cr *mcp.CallToolRequest, err error) error {
	var ne *signin.NeedSignInError
	if !errors.As(err, &ne) || ne.StepUp {
		return err
	}
	caps, proto := cr.ClientCapabilities(), cr.ProtocolVersion()
	if ok, _ := canAskSignIn(cr.Session, caps, proto, clientName(cr)); !ok {
		return err
	}
	ctx, stop := s.bindRequest(ctx, cr.Extra)
	defer stop()
	o := originOf(ctx)
	entry := AuditEntry{Client: clientName(cr), Transport: o.Transport, Authenticated: o.Authenticated}
	sctx := s.withSignIn(ctx, cr.Session, caps, proto, entry)
	serr := s.pool.SignIn(sctx, ne.Target.Plugin, ne.Target.Server)
	s.signInDone(sctx, cr.Session, serr)
	if serr != nil {
		return serr
	}
	s.refresh(ctx, "tools/call")
	// Listed, or offered through berth_call_tool in lazy mode (lazy.go).
	if !s.hasTool(cr.Params.Name) && s.offeredTool(cr.Params.Name) == nil {
		return fmt.Errorf("%s signed in and started, and has no tool %s; berth tools lists the catalog", ne.Target.ID(), cr.Params.Name)
	}
	return nil
}
