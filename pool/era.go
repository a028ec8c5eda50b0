//lint:file-ignore SA1019 berth relays the SEP-2577 features (logging) during their deprecation window

package pool

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The protocol era berth speaks to plugin servers (docs/relay.md §"The
// protocol berth speaks to plugin servers"). A server written for legacy
// clients asks for sampling, elicitation and roots with requests during a
// call, which go-sdk forbids on a 2026-07-28 connection; a 2026-07-28
// server asks with input requests, which go-sdk turns into those requests
// on a legacy connection. So the era to speak upstream is the client's:
// Options.LegacyUpstream fixes it for the pool's life (HTTP listeners that
// serve legacy clients only), Options.AwaitUpstreamEra leaves it to the
// one client berth serves over stdio, which names its era in its first
// message (SetUpstreamEra); no server connects before then.

// upstreamEra is the era chosen for a pool that awaits its client's.
type upstreamEra struct {
	once   sync.Once
	known  chan struct{} // closed once the era is set
	legacy bool          // written before known is closed
}

func (e *upstreamEra) init() {
	e.known = make(chan struct{})
}

// SetUpstreamEra sets the era the pool's servers are spoken to in, for a
// pool opened with Options.AwaitUpstreamEra (the servers then connect):
// legacy is 2025-11-25 (no server/discover probe), else 2026-07-28 with the
// fall back to 2025-11-25 for servers that do not speak it. The first call
// decides; later calls change nothing. Without AwaitUpstreamEra it does
// nothing.
func (p *Pool) SetUpstreamEra(legacy bool) {
	if !p.opts.AwaitUpstreamEra {
		return
	}
	p.era.once.Do(func() {
		p.era.legacy = legacy
		close(p.era.known)
	})
}

// awaitEra waits until the pool's era is known (at once unless the pool
// awaits its client's) and reports whether it is legacy.
func (p *Pool) awaitEra(ctx context.Context) (legacy bool, err error) {
	if !p.opts.AwaitUpstreamEra {
		return p.opts.LegacyUpstream, nil
	}
	select {
	case <-p.era.known:
		return p.era.legacy || p.opts.LegacyUpstream, nil
	case <-ctx.Done():
		return false, context.Cause(ctx)
	}
}

// levelRank orders the log levels, debug lowest.
var levelRank = map[mcp.LoggingLevel]int{"debug": 0, "info": 1, "notice": 2, "warning": 3, "error": 4, "critical": 5, "alert": 6, "emergency": 7}

// LevelBelow reports whether log level a is lower than b (debug is the
// lowest; an unknown level counts as debug).
func LevelBelow(a, b mcp.LoggingLevel) bool {
	return levelRank[a] < levelRank[b]
}

// setLevel notes the level set on a legacy connection.
func (rs *relaySet) setLevel(level mcp.LoggingLevel) {
	rs.mu.Lock()
	rs.level = level
	rs.mu.Unlock()
}

// lowerLegacyLevel applies a 2026-07-28 client's log level (one request's)
// to a legacy connection, whose server logs at one level for the whole
// connection (logging/setLevel), when it is lower than the level set
// there, before the request is sent: the server then logs during the
// request what that client asked for. (Each session gets only what it
// asked for: go-sdk filters a legacy session's messages by its own level,
// and a 2026-07-28 request's are relayed at its level, mcpexport.)
func (s *server) lowerLegacyLevel(c *conn, level mcp.LoggingLevel) {
	if level == "" || c.cs == nil || isModern(c.cs) {
		return
	}
	if _, ok := levelRank[level]; !ok {
		return
	}
	c.relays.mu.Lock()
	cur := c.relays.level
	c.relays.mu.Unlock()
	if cur != "" && levelRank[cur] <= levelRank[level] {
		return
	}
	s.applyLogLevel(c, level)
}

// AsksDuringCall reports whether the server of tool name may send the
// client requests (sampling, elicitation, roots) while it serves a call:
// it is connected with a legacy version, or not connected yet (its era is
// not known before it starts). A server on 2026-07-28 asks with input
// requests in its result instead, and a native tool asks nothing. A tool
// the pool does not know: true (the call itself says what is wrong).
func (p *Pool) AsksDuringCall(name string) bool {
	e := p.index().tools[name]
	if e == nil {
		return true
	}
	if e.s.native != nil {
		return false
	}
	c := e.s.live()
	if c == nil {
		return true
	}
	return c.protocol < "2026-07-28"
}
