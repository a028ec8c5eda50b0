package mcpexport

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/signin"
	"github.com/berth-mcp/berth/store"
)

// A call to a tool (prompt, resource) whose server waits for a sign-in
// fails in the pool before anything is decided: its tools are not listed
// until it signed in and started, so neither their annotations nor the
// approval are known. berth looks at the operator's policy by the name
// first (policyBeforeSignIn): a name the policy denies is refused at once,
// and no human is asked to sign in for it (review21 finding 8). Any other
// name is signed in first; the call then goes through the approval like
// every call, once, with the tool's annotations known (docs/serve.md).

// SignInPolicyError refuses a call that waits for a sign-in because the
// operator's policy denies its name. It unwraps to pool.ErrDenied.
type SignInPolicyError struct {
	Name   string
	Target signin.Target
	Policy store.PolicyMatch
}

func (e *SignInPolicyError) Error() string {
	return fmt.Sprintf("the operator's policy denies %s (rule %q), so berth did not ask for a sign-in to %s; change the policy with `berth policy set` or `berth policy unset %s`", e.Name, e.Policy.Pattern, e.Target.ID(), e.Policy.Pattern)
}

// Unwrap returns pool.ErrDenied.
func (e *SignInPolicyError) Unwrap() error { return pool.ErrDenied }

// policyBeforeSignIn returns err as it is, unless err says the call waits
// for a sign-in and the operator's policy denies name (of kind; a
// resource is decided by its server's identity, as the pool does): then a
// *SignInPolicyError.
func (s *Server) policyBeforeSignIn(kind pool.RequestKind, name string, err error) error {
	var ne *signin.NeedSignInError
	if err == nil || !errors.As(err, &ne) {
		return err
	}
	if kind == pool.RequestResource {
		name = pool.ServerID(ne.Target.Plugin, ne.Target.Server)
	}
	if m := s.pool.NamePolicy(ne.Target.Plugin, name); m.Action == store.ActionDeny {
		return &SignInPolicyError{Name: name, Target: ne.Target, Policy: m}
	}
	return err
}

// policyOf is the policy a *SignInPolicyError applied, for the audit.
func policyOf(err error) string {
	var pe *SignInPolicyError
	if errors.As(err, &pe) {
		return pe.Policy.String()
	}
	return ""
}

// refusedBeforeSignIn audits a call outside the catalog that the policy
// refused before any sign-in; via is the meta-tool it came through ("" for
// a direct call).
func (s *Server) refusedBeforeSignIn(ctx context.Context, req mcp.Request, pe *SignInPolicyError, via string) {
	if cr, ok := req.(*mcp.CallToolRequest); ok {
		var stop func()
		ctx, stop = s.bindRequest(ctx, cr.Extra)
		defer stop()
	}
	o := originOf(ctx)
	e := AuditEntry{Tool: pe.Name, Plugin: pe.Target.Plugin, Server: pe.Target.Server, Transport: o.Transport, Authenticated: o.Authenticated, Policy: pe.Policy.String(),
		Decision: VerdictDeny, DecidedBy: ByPolicy, Outcome: OutcomeRefused, Reason: pe.Error(), Via: via}
	if cr, ok := req.(*mcp.CallToolRequest); ok {
		e.Client = clientName(cr)
	}
	s.appendAudit(e)
}
