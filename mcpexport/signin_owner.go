package mcpexport

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/signin"
)

// A 2026-07-28 sign-in running in the background (signInFlow) belongs to
// the session whose call started it: its URL carries the state and the
// PKCE challenge berth's loopback listener accepts, so whoever opens it
// first signs berth in with their account. Another session's call that
// needs the same sign-in meanwhile is never shown that URL (on berth
// serve's HTTP listener another session may be another client); it gets
// an error that says a sign-in is in progress in another session, or goes
// on once that sign-in is done.

// busyOtherSession is why a call of another session is not shown a
// running sign-in.
const busyOtherSession = "a sign-in to this server is in progress in another session (berth shows its page only there); finish or cancel it there, or call again once it is done"

// signInOwner is the identity a sign-in flow is bound to: the call's
// session, or, for a call without one, a value no other call shares.
func signInOwner(ss *mcp.ServerSession) any {
	if ss != nil {
		return ss
	}
	return new(struct{ _ byte })
}

// otherSessionsSignIn answers a call that needs the sign-in fl, which
// another session started: nil when fl is already done and signed in,
// else a *SignInNotDoneError (audited) that says so.
func (c *call) otherSessionsSignIn(fl *signInFlow) error {
	select {
	case <-fl.done:
		if fl.err == nil {
			return nil
		}
	default:
	}
	e := c.signInAudit(fl.target, signin.Prompt{Target: fl.target})
	e.Decision, e.DecidedBy, e.Outcome, e.Reason = VerdictDeny, ByBerth, OutcomeRefused, busyOtherSession
	c.s.appendAudit(e)
	return &SignInNotDoneError{Target: fl.target, Why: busyOtherSession}
}

// tooManyScopes refuses to ask a client's human for a sign-in whose
// scopes berth's message cannot list whole (more than maxScopesShown): the
// human would consent, in berth's words, to scopes berth did not show.
// `berth login` in a terminal lists them all.
func tooManyScopes(p signin.Prompt) error {
	if n := len(p.Scopes); n > maxScopesShown {
		return &SignInNotDoneError{Target: p.Target, Why: fmt.Sprintf("it asks for %d scopes, %d more than berth lists in a sign-in message (%d), so berth did not ask in the client; `%s` in a terminal lists them all before the browser opens", n, n-maxScopesShown, maxScopesShown, p.Target.LoginCommand())}
	}
	return nil
}
