//lint:file-ignore SA1019 the relay carries the SEP-2577 features (roots, sampling, logging) during their deprecation window

package pool

import (
	"context"
	"fmt"
	"time"

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
		return deniedf("the operator's policy denies the resources of %s (rule %q), %s among them", s.id, m.Pattern, uri)
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

// resourceUpdated queues a server's notifications/resources/updated for
// the subscribers of that URI on this connection: an update of a URI
// already waiting is merged into it (counted as dropped), and
// relayUpdates sends them at most MaxUpdatesPerSecond a second.
func (s *server) resourceUpdated(_ context.Context, c *conn, p *mcp.ResourceUpdatedNotificationParams) {
	if p == nil {
		return
	}
	rs := &c.relays
	rs.mu.Lock()
	defer rs.mu.Unlock()
	// Only a URI that a client subscribed to on this connection is kept:
	// the queue holds at most one entry per subscribed URI.
	if len(rs.subs[p.URI]) == 0 {
		return
	}
	u := &rs.updates
	if u.waiting[p.URI] {
		u.dropped++
		return
	}
	if u.waiting == nil {
		u.waiting = map[string]bool{}
	}
	u.waiting[p.URI] = true
	u.order = append(u.order, p.URI)
	if !u.running {
		u.running = true
		go s.relayUpdates(c)
	}
}

// updateQueue is a connection's resource updates waiting to be relayed,
// guarded by relaySet.mu: each URI at most once, oldest first, with a
// token bucket of UpdateBurst refilled at MaxUpdatesPerSecond.
type updateQueue struct {
	order   []string
	waiting map[string]bool
	running bool // relayUpdates runs
	tokens  float64
	filled  time.Time // when tokens was last refilled
	// dropped counts the updates merged since the last report.
	dropped  int
	reported time.Time
}

// updateReportEvery is how often, at most, the updates dropped on a
// connection are written to the server's log.
const updateReportEvery = 10 * time.Second

// take takes a token, or says how long until there is one.
func (u *updateQueue) take(now time.Time) time.Duration {
	if u.filled.IsZero() {
		u.tokens = UpdateBurst
	} else {
		u.tokens = min(UpdateBurst, u.tokens+now.Sub(u.filled).Seconds()*MaxUpdatesPerSecond)
	}
	u.filled = now
	if u.tokens >= 1 {
		u.tokens--
		return 0
	}
	return time.Duration((1 - u.tokens) / MaxUpdatesPerSecond * float64(time.Second))
}

// relayUpdates sends c's waiting updates, at most MaxUpdatesPerSecond a
// second, to the subscribers each URI has when it is sent, while c is the
// server's connection; it writes how many were dropped to the server's log
// at most every updateReportEvery, and returns when nothing waits and
// nothing is left to report, or c ends.
func (s *server) relayUpdates(c *conn) {
	rs := &c.relays
	u := &rs.updates
	for {
		now := time.Now()
		rs.mu.Lock()
		if n := u.dropped; n > 0 && now.Sub(u.reported) >= updateReportEvery {
			u.dropped, u.reported = 0, now
			rs.mu.Unlock()
			s.out.event("dropped %d notifications/resources/updated: an update of a URI whose last update was still waiting to be relayed is merged into it (at most %d a second are relayed)", n, MaxUpdatesPerSecond)
			continue
		}
		var wait time.Duration
		switch {
		case len(u.order) > 0:
			wait = u.take(now)
		case u.dropped > 0:
			wait = u.reported.Add(updateReportEvery).Sub(now)
		default:
			u.running = false
			rs.mu.Unlock()
			return
		}
		if wait > 0 {
			rs.mu.Unlock()
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-c.ctx.Done():
				t.Stop()
				rs.mu.Lock()
				u.running = false
				rs.mu.Unlock()
				return
			}
			continue
		}
		uri := u.order[0]
		u.order = u.order[1:]
		delete(u.waiting, uri)
		var who []any
		for w := range rs.subs[uri] {
			who = append(who, w)
		}
		rs.mu.Unlock()
		s.p.relayMu.Lock()
		sink := s.p.updatedSink
		s.p.relayMu.Unlock()
		// Only subscribers of this connection get it: they subscribed here
		// because this server served the URI.
		if len(who) > 0 && sink != nil && s.live() == c {
			sink(c.ctx, uri, who)
		}
	}
}
