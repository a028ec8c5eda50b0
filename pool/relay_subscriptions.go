//lint:file-ignore SA1019 the relay carries the SEP-2577 features (roots, sampling, logging) during their deprecation window

package pool

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/store"
)

// Resource subscriptions are relayed per connection: the first subscriber
// of a URI subscribes berth to it on the server that serves the URI, the
// last one's unsubscribe ends it there. They live on the connection, so a
// server stopped (disabled, revoked, drifted) or restarted ends them: no
// update of it is relayed any more, and a client subscribes again.

// subscribers of one URI on a connection.
type subscribers map[any]struct{}

// Subscribe subscribes who (the client's session) to updates of uri, on
// the one server that serves it, under that server's resource policy (a
// denied one is refused: an error wrapping ErrDenied). A server that does
// not offer subscriptions wraps ErrNotFound.
func (p *Pool) Subscribe(ctx context.Context, uri string, who any) error {
	s, err := p.routeResource(ctx, uri)
	if err != nil {
		return err
	}
	if m := p.policyFor(s, s.id); m.Action == store.ActionDeny {
		return fmt.Errorf("the operator's policy denies the resources of %s (rule %q), %s among them: %w", s.id, m.Pattern, uri, ErrDenied)
	}
	if err := s.pl.checkDrift(ctx); err != nil {
		return err
	}
	c := s.live()
	if c == nil || c.cs == nil {
		return fmt.Errorf("server %s stopped; try again", s.id)
	}
	if !hasCap(c, func(sc *mcp.ServerCapabilities) bool { return sc.Resources != nil && sc.Resources.Subscribe }) {
		return fmt.Errorf("server %s does not offer resource subscriptions (%s): %w", s.id, uri, ErrNotFound)
	}
	rs := &c.relays
	rs.mu.Lock()
	if rs.subs == nil {
		rs.subs = map[string]subscribers{}
	}
	first := len(rs.subs[uri]) == 0
	if rs.subs[uri] == nil {
		rs.subs[uri] = subscribers{}
	}
	rs.subs[uri][who] = struct{}{}
	rs.mu.Unlock()
	if !first {
		return nil
	}
	cctx, cancel := context.WithTimeoutCause(ctx, s.callTime, errCallTimeout)
	defer cancel()
	if err := c.cs.Subscribe(mergeCancel(cctx, c.ctx), &mcp.SubscribeParams{URI: uri}); err != nil {
		rs.mu.Lock()
		delete(rs.subs[uri], who)
		rs.mu.Unlock()
		s.classify(ctx, cctx, c, err)
		return fmt.Errorf("subscribing to %s on %s: %w", uri, s.id, err)
	}
	return nil
}

// Unsubscribe ends who's subscription to uri on every connection that
// has it; the last subscriber's ends berth's on the server.
func (p *Pool) Unsubscribe(ctx context.Context, uri string, who any) error {
	for _, s := range p.servers() {
		c := s.live()
		if c == nil || c.cs == nil {
			continue
		}
		rs := &c.relays
		rs.mu.Lock()
		_, had := rs.subs[uri][who]
		delete(rs.subs[uri], who)
		last := had && len(rs.subs[uri]) == 0
		if last {
			delete(rs.subs, uri)
		}
		rs.mu.Unlock()
		if !last {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, s.callTime)
		err := c.cs.Unsubscribe(mergeCancel(cctx, c.ctx), &mcp.UnsubscribeParams{URI: uri})
		cancel()
		if err != nil {
			s.out.event("unsubscribing from %s: %v", uri, err)
		}
	}
	return nil
}

// SetResourceUpdatedSink sets where updates of subscribed resources go:
// f gets the URI and the subscribers berth holds for it on that server.
func (p *Pool) SetResourceUpdatedSink(f func(ctx context.Context, uri string, who []any)) {
	p.relayMu.Lock()
	p.updatedSink = f
	p.relayMu.Unlock()
}

// resourceUpdated relays a server's notifications/resources/updated to the
// subscribers of that URI on this connection, while it is the server's
// current one.
func (s *server) resourceUpdated(ctx context.Context, c *conn, p *mcp.ResourceUpdatedNotificationParams) {
	if p == nil {
		return
	}
	rs := &c.relays
	rs.mu.Lock()
	var who []any
	for w := range rs.subs[p.URI] {
		who = append(who, w)
	}
	rs.mu.Unlock()
	s.p.relayMu.Lock()
	sink := s.p.updatedSink
	s.p.relayMu.Unlock()
	// Only subscribers of this connection get it: they subscribed here
	// because this server served the URI. (No re-routing here: this runs
	// in the connection's read loop.)
	if len(who) == 0 || sink == nil || s.live() != c {
		return
	}
	sink(ctx, p.URI, who)
}
