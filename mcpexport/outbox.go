package mcpexport

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What berth relays to a client from plugin servers — progress and log
// messages (relay.go) — goes through the client session's outbox: a
// queue of the session's own, delivered in order by a goroutine of its
// own. Relaying never waits on a client: a client that does not read
// holds up its own outbox only, never a plugin server's connection (whose
// reader puts progress and log messages in, wire order, pool/wire.go),
// other sessions, or their calls.
//
// A full outbox (MaxOutbox waiting) drops what comes next for that
// session; the drops are counted per session and in all (outboxes.dropped,
// which also counts a flight's messages dropped between rounds), and
// logged: once when a session starts dropping, and with the count when
// its outbox has emptied.
//
// A request's answer goes out after what was relayed before it: the
// handler of tools/call, prompts/get and resources/read waits, before it
// returns, until the session's outbox has delivered everything put in it
// so far (callRelay.flush). That wait is the session's own, ends with
// its request, and has no timer.

// MaxOutbox is how many relayed notifications wait for one client
// session at most; more are dropped.
const MaxOutbox = 256

// outboxes are the outboxes of the sessions that have something waiting
// (one whose outbox has emptied has none: it is made again when needed).
type outboxes struct {
	mu      sync.Mutex
	m       map[*mcp.ServerSession]*outbox
	log     *slog.Logger
	dropped atomic.Uint64
}

// outbox is one session's queue; its fields are under outboxes.mu.
type outbox struct {
	q []func()
	// put counts what was put in, done what was delivered (or given up
	// on); a flush waits until done reaches put as it was.
	put, done uint64
	dropped   uint64 // since the outbox was made
	// wake is closed, and replaced, when done advances.
	wake chan struct{}
}

func newOutboxes(log *slog.Logger) *outboxes {
	return &outboxes{m: map[*mcp.ServerSession]*outbox{}, log: log}
}

// send puts f, which delivers one notification to ss, in ss's outbox,
// without waiting; false: the outbox was full and f was dropped.
func (o *outboxes) send(ss *mcp.ServerSession, f func()) bool {
	o.mu.Lock()
	b := o.m[ss]
	if b == nil {
		b = &outbox{wake: make(chan struct{})}
		o.m[ss] = b
		go o.run(ss, b)
	}
	if len(b.q) >= MaxOutbox {
		b.dropped++
		first := b.dropped == 1
		o.mu.Unlock()
		o.dropped.Add(1)
		if first {
			o.log.Warn("a client is not reading what berth relays to it: berth drops the progress and log messages that do not fit its queue", "session", ss.ID(), "queue", MaxOutbox)
		}
		return false
	}
	b.q = append(b.q, f)
	b.put++
	o.mu.Unlock()
	return true
}

// run delivers b's notifications in order until b is empty, then forgets
// b.
func (o *outboxes) run(ss *mcp.ServerSession, b *outbox) {
	for {
		o.mu.Lock()
		if len(b.q) == 0 {
			delete(o.m, ss)
			dropped := b.dropped
			o.mu.Unlock()
			if dropped > 0 {
				o.log.Warn("berth dropped relayed notifications a client did not read in time", "session", ss.ID(), "dropped", dropped)
			}
			return
		}
		f := b.q[0]
		b.q[0] = nil
		b.q = b.q[1:]
		o.mu.Unlock()
		f()
		o.mu.Lock()
		b.done++
		close(b.wake)
		b.wake = make(chan struct{})
		o.mu.Unlock()
	}
}

// flush waits until ss's outbox delivered what was put in it so far, or
// ctx ends.
func (o *outboxes) flush(ctx context.Context, ss *mcp.ServerSession) {
	o.mu.Lock()
	b := o.m[ss]
	if b == nil {
		o.mu.Unlock()
		return
	}
	want := b.put
	for b.done < want {
		wake := b.wake
		o.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return
		}
		o.mu.Lock()
	}
	o.mu.Unlock()
}
