package pool

import (
	"errors"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/signin"
)

// signInRecheck is how often a server that waits for a sign-in tries
// again by itself; a call to it tries at once.
const signInRecheck = SignInRecheck

// SignInRecheck is how often a server that waits for a sign-in looks at
// the secret store again (locally) and connects once it holds one.
const SignInRecheck = 30 * time.Second

// signInHandler builds the sign-in handler of a remote that declares
// auth.oauth (docs/signin.md).
func (p *Pool) signInHandler(plugin, server string, r *bundle.Remote) (*signin.Handler, error) {
	return newSignInHandler(&p.opts, plugin, server, r)
}

func newSignInHandler(opts *Options, plugin, server string, r *bundle.Remote) (*signin.Handler, error) {
	t := signin.Target{Plugin: plugin, Server: server, Resource: r.URL, OAuth: *r.Auth.OAuth}
	if opts.SignIns == nil {
		return nil, permanent("server %s signs in with OAuth, but this berth has no secret store for sign-ins", t.ID())
	}
	var c *signin.Client
	if opts.SignInClient != nil {
		var err error
		if c, err = opts.SignInClient(t); err != nil {
			return nil, permanent("server %s: the operator's client settings: %v", t.ID(), err)
		}
	}
	return signin.NewHandler(t, signin.Options{Secrets: opts.SignIns, Client: c, Ask: opts.SignInAsk})
}

// kickSignIn starts the servers that wait for a sign-in and whose tools
// name could be, now rather than at their next recheck: after `berth
// login`, the next call connects. It reports whether it woke any.
func (p *Pool) kickSignIn(name string) bool {
	plugin, provider, _, _ := ParseName(name)
	woke := false
	for _, s := range p.servers() {
		if s.pl.name != plugin || s.name != provider {
			continue
		}
		s.mu.Lock()
		var ne *signin.NeedSignInError
		waiting := s.state == StateFailed && !s.gaveUp && errors.As(s.lastErr, &ne)
		if waiting {
			s.state = StateStarting
			s.changedLocked()
		}
		s.mu.Unlock()
		if waiting {
			select {
			case s.kick <- struct{}{}:
			default:
			}
			woke = true
		}
	}
	return woke
}

// stillNoSignIn reports whether the server waits for a sign-in and the
// store still holds none for it (read locally, no network): then its
// recheck does not connect.
func (s *server) stillNoSignIn() bool {
	s.mu.Lock()
	var ne *signin.NeedSignInError
	waiting := errors.As(s.lastErr, &ne)
	s.mu.Unlock()
	if !waiting || s.p.opts.SignIns == nil || s.spec == nil || s.spec.Remote == nil || s.spec.Remote.Auth == nil || s.spec.Remote.Auth.OAuth == nil {
		return false
	}
	r := s.spec.Remote
	st, err := signin.Lookup(s.p.opts.SignIns, signin.Target{Plugin: s.pl.name, Server: s.name, Resource: r.URL, OAuth: *r.Auth.OAuth})
	return err == nil && !st.SignedIn
}
