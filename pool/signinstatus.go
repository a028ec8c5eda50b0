package pool

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/berth-mcp/berth/signin"
)

// SignInStatus is what berth keeps for a remote server that signs in with
// OAuth (auth.oauth), as berth status shows it: who is signed in, until
// when and for which scopes, or the command that signs in. Never a token.
type SignInStatus struct {
	// SignedIn reports a stored token for the server.
	SignedIn bool `json:"signedIn"`
	// Subject is who is signed in, when the token says; "" otherwise.
	Subject string `json:"subject,omitempty"`
	// Issuer is the authorization server signed in to.
	Issuer string   `json:"issuer,omitempty"`
	Scopes []string `json:"scopes,omitempty"`
	// ExpiresAt is when the access token expires; absent when unknown.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// Refreshable reports a refresh token: berth renews the access token
	// without asking.
	Refreshable bool `json:"refreshable"`
	// NeedsSignIn reports that the server is waiting for a sign-in: berth
	// connected, the server asked for a token (no token, a refused one, or
	// more scopes) and no human could be asked, so the server does not run
	// until someone runs Login (or a client session signs in). False for a
	// server that works without a token even though it may ask for one
	// (a registry remote imported as "oauth": {}): berth only knows a
	// server needs a sign-in once it asked.
	NeedsSignIn bool `json:"needsSignIn"`
	// Reason is why the server waits for a sign-in ("not signed in", a
	// refused refresh, the scopes a step-up asks for); "" unless
	// NeedsSignIn.
	Reason string `json:"reason,omitempty"`
	// Login is the command that signs in ("berth login plugin__server").
	Login string `json:"login"`
	// Error says why berth could not read what it keeps (the keychain did
	// not answer); SignedIn is false then.
	Error string `json:"error,omitempty"`
}

// signInStatus reads, without network, what is stored for s when it
// signs in (Options.SignIns), matched against the operator's client
// (Options.SignInClient): a sign-in made with another client is not
// this one's. need is the server's own NeedSignInError when it waits
// for a sign-in. nil for a server that does not sign in.
func (p *Pool) signInStatus(s *server, need *signin.NeedSignInError) *SignInStatus {
	if s.spec == nil || s.spec.Remote == nil || s.spec.Remote.Auth == nil || s.spec.Remote.Auth.OAuth == nil {
		return nil
	}
	t := signin.Target{Plugin: s.pl.name, Server: s.name, Resource: s.spec.Remote.URL, OAuth: *s.spec.Remote.Auth.OAuth}
	out := &SignInStatus{Login: t.LoginCommand()}
	if need != nil {
		out.NeedsSignIn, out.Reason = true, need.Reason
		if need.StepUp && len(need.Scopes) > 0 {
			out.Reason += " (the server asks for the scopes " + strings.Join(need.Scopes, " ") + ")"
		}
	}
	if p.opts.SignIns == nil {
		out.Error = "this berth has no secret store for sign-ins"
		return out
	}
	var c *signin.Client
	var err error
	if p.opts.SignInClient != nil {
		c, err = p.opts.SignInClient(t)
	}
	var st *signin.State
	if err == nil {
		st, err = signin.LookupWith(p.opts.SignIns, t, c)
	}
	switch {
	case err != nil:
		out.Error = err.Error()
	case st != nil && st.SignedIn:
		out.SignedIn, out.Subject, out.Issuer, out.Scopes = true, st.Subject, st.Issuer, slices.Clone(st.Scopes)
		out.ExpiresAt, out.Refreshable = st.ExpiresAt, st.Refreshable
	}
	return out
}

// waitingSignInLocked returns the NeedSignInError of a server that waits
// for a sign-in (failed for it, not running, not given up), or nil. The
// caller holds s.mu.
func (s *server) waitingSignInLocked() *signin.NeedSignInError {
	var ne *signin.NeedSignInError
	if s.gaveUp || s.state == StateRunning || s.state == StateStopped || s.state == StateDrifted || !errors.As(s.lastErr, &ne) {
		return nil
	}
	return ne
}
