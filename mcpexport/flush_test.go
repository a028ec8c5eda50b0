package mcpexport

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gatedTransport is the server side of a client's connection that holds
// each notifications/progress it writes at a gate, opened when a
// response is written (or after a while), and records the order in which
// progress and the tools/call's response go out on the wire.
type gatedTransport struct {
	mcp.Transport
	mu    sync.Mutex
	order []string
	gate  chan struct{}
	once  sync.Once
}

func (g *gatedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := g.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &gatedConn{Connection: c, g: g}, nil
}

func (g *gatedTransport) open() { g.once.Do(func() { close(g.gate) }) }

func (g *gatedTransport) note(s string) {
	g.mu.Lock()
	g.order = append(g.order, s)
	g.mu.Unlock()
}

type gatedConn struct {
	mcp.Connection
	g *gatedTransport
}

func (c *gatedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if m.Method == "notifications/progress" {
			// A response written meanwhile opens the gate: it went out
			// before this progress. Else the gate opens on its own
			// (what waits here is then the call's answer, as it should).
			select {
			case <-c.g.gate:
			case <-time.After(500 * time.Millisecond):
			}
			c.g.note("progress")
		}
	case *jsonrpc.Response:
		if m.Result != nil && strings.Contains(string(m.Result), "token berth-") {
			c.g.note("response")
			c.g.open()
		}
	}
	return c.Connection.Write(ctx, msg)
}

// The progress a plugin server sent before its result reaches the client
// before the call's answer, whatever the outbox's goroutine is doing: the
// tools/call handler waits for the session's outbox (callRelay.flush)
// before it answers. The progress writes are held back here, so without
// the flush the answer overtakes them every time.
func TestRelayProgressBeforeAnswer(t *testing.T) {
	e := newRelayEnv(t, false)
	ct, st := mcp.NewInMemoryTransports()
	g := &gatedTransport{Transport: st, gate: make(chan struct{})}
	ctx := context.Background()
	if _, err := e.srv.Connect(ctx, g); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "order-client", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {},
	})
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	p := &mcp.CallToolParams{Name: "rly__up__progress", Arguments: map[string]any{"n": 2}}
	p.SetProgressToken("tok")
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := cs.CallTool(cctx, p); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if got := strings.Join(g.order, ","); got != "progress,progress,response" {
		t.Fatalf("written to the client in the order %s, want both progress before the answer", got)
	}
}
