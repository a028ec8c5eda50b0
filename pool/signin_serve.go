package pool

import (
	"context"
	"errors"
	"fmt"

	"github.com/berth-mcp/berth/signin"
)

// SignIn signs in the remote server name of plugin, which waits for a
// sign-in, now, asking a human through the asker on ctx (signin.WithAsk; berth serve's client) or the pool's
// Options.SignInAsk, and then starts it at once and waits until its start
// is over. extraScopes are asked for besides (a step-up: the scopes the
// server's 403 named). It is how a server that never started, for want of a sign-in,
// gets one from a client: a request on a live connection asks within the
// request instead (go-sdk's OAuth handler). It fails with the server's
// start error if the start failed after the sign-in, and with the
// sign-in's error (a *signin.NeedSignInError when no human could be
// asked) otherwise.
func (p *Pool) SignIn(ctx context.Context, plugin, name string, extraScopes ...string) error {
	id := ServerID(plugin, name)
	var s *server
	for _, c := range p.servers() {
		if c.pl.name == plugin && c.name == name && c.spec != nil && c.spec.Remote != nil {
			s = c
		}
	}
	if s == nil {
		return fmt.Errorf("no remote server %s is enabled in %s: %w", id, p.workspace, ErrNotFound)
	}
	r := s.spec.Remote
	if r.Auth == nil || r.Auth.OAuth == nil {
		return fmt.Errorf("server %s does not sign in with OAuth (its manifest declares no auth.oauth)", id)
	}
	t := signin.Target{Plugin: s.pl.name, Server: s.name, Resource: r.URL, OAuth: *r.Auth.OAuth}
	if p.opts.SignIns == nil {
		return fmt.Errorf("server %s signs in with OAuth, but this berth has no secret store for sign-ins", id)
	}
	o := signin.Options{Secrets: p.opts.SignIns, Ask: p.opts.SignInAsk}
	if p.opts.SignInClient != nil {
		c, err := p.opts.SignInClient(t)
		if err != nil {
			return fmt.Errorf("server %s: the operator's client settings: %w", id, err)
		}
		o.Client = c
	}
	if _, err := signin.Login(ctx, t, o, extraScopes...); err != nil {
		return err
	}
	// Start it now, not at its next recheck (as kickSignIn does for a
	// call), and wait for that start.
	s.mu.Lock()
	var ne *signin.NeedSignInError
	if s.state == StateFailed && !s.gaveUp && errors.As(s.lastErr, &ne) {
		s.state = StateStarting
		s.changedLocked()
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
	if err := p.waitStarting(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == StateFailed {
		return s.failedErrLocked()
	}
	if s.conn == nil {
		return fmt.Errorf("server %s is %s after the sign-in", id, s.state)
	}
	return nil
}
