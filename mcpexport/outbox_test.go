//lint:file-ignore SA1019 the relay tests exercise the SEP-2577 features (logging) on purpose

package mcpexport

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/testkit"
)

// stuckTransport is a server transport of a client that stops reading:
// once the connection is asked to write a notifications/message, that
// write (and every write after it) waits until release is closed, whatever
// its context says, as a write to a stream nobody reads does.
type stuckTransport struct {
	mcp.Transport
	release chan struct{}
	stuck   chan struct{} // closed at the first write that waits
	once    sync.Once
}

func (t *stuckTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &stuckConn{Connection: c, t: t}, nil
}

type stuckConn struct {
	mcp.Connection
	t       *stuckTransport
	blocked atomic.Bool
}

func (c *stuckConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "notifications/message" {
		c.blocked.Store(true)
	}
	if c.blocked.Load() {
		c.t.once.Do(func() { close(c.t.stuck) })
		<-c.t.release
	}
	return c.Connection.Write(ctx, msg)
}

// A log message reaches every session that asked for it without waiting
// on any one: a client that stopped reading holds up its own messages
// only, and the one that reads gets each message of every call, and its
// progress, while the other stays stuck. (Before the outboxes, berth
// wrote to the sessions one after the other, from the plugin connection's
// notification handler: a stuck client held up everyone's log messages
// and every later progress of that plugin server.)
func TestRelayLogSlowClient(t *testing.T) {
	e := newRelayEnv(t, true)
	ctx := context.Background()

	st := &stuckTransport{release: make(chan struct{}), stuck: make(chan struct{})}
	ct, sst := mcp.NewInMemoryTransports()
	st.Transport = sst
	if _, err := e.srv.Connect(ctx, st); err != nil {
		t.Fatal(err)
	}
	stuck, err := mcp.NewClient(&mcp.Implementation{Name: "stuck-client", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(st.release); stuck.Close() })
	if err := stuck.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}

	rc := e.client("2025-11-25", clientCaps{})
	rc.setLevel(t, "debug")
	for round := 1; round <= 3; round++ {
		if got := rc.call(t, "log", nil, nil); got != "logged" {
			t.Fatalf("round %d: the log call answered %q", round, got)
		}
		// debug, info, error and the big one, each round.
		testkit.Eventually(t, 10*time.Second, "the reading client's log messages", func() bool { return lenOf(rc, &rc.logs) >= 4*round })
	}
	select {
	case <-st.stuck:
	case <-time.After(10 * time.Second):
		t.Fatal("the stuck client was never sent a log message")
	}
	// The plugin server's connection is not held up either: a call's
	// progress still reaches the client that reads.
	rc.call(t, "progress", map[string]any{"n": 2}, "tok")
	testkit.Eventually(t, 10*time.Second, "the reading client's progress", func() bool { return lenOf(rc, &rc.progress) >= 2 })
}

// An outbox holds at most MaxOutbox notifications for a session whose
// client does not read; what comes beyond is dropped, counted and logged,
// and the other sessions' outboxes deliver and flush as ever.
func TestOutboxDropsWhenFull(t *testing.T) {
	var logBuf syncBuffer
	o := newOutboxes(slog.New(slog.NewTextHandler(&logBuf, nil)))
	slow, fast := &mcp.ServerSession{}, &mcp.ServerSession{}
	release, started := make(chan struct{}), make(chan struct{})
	o.send(slow, func() { close(started); <-release })
	<-started
	for i := range MaxOutbox {
		if !o.send(slow, func() {}) {
			t.Fatalf("notification %d of %d was dropped", i+1, MaxOutbox)
		}
	}
	for range 3 {
		if o.send(slow, func() {}) {
			t.Fatal("an outbox took more than MaxOutbox notifications")
		}
	}
	var n atomic.Int32
	o.send(fast, func() { n.Add(1) })
	o.flush(context.Background(), fast)
	if n.Load() != 1 {
		t.Fatal("the other session's flush returned before its notification went out")
	}
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	o.flush(cctx, slow) // returns with its request's context
	if got := o.dropped.Load(); got != 3 {
		t.Fatalf("dropped %d, want 3", got)
	}
	if !strings.Contains(logBuf.String(), "not reading") {
		t.Fatalf("the first drop was not logged: %q", logBuf.String())
	}
	close(release)
	o.flush(context.Background(), slow)
	testkit.Eventually(t, 10*time.Second, "the count of drops logged", func() bool { return strings.Contains(logBuf.String(), "dropped=3") })
}
