package pool

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The wire: berth sees every message a stdio plugin server sends, in the
// order it sent them, before go-sdk does (go-sdk hands a response to its
// caller at once but queues notifications for a goroutine of its own, so
// their order is lost above the connection). go-sdk's mcp.Transport and
// mcp.Connection are its public extension points; this wraps them, it
// patches nothing.
//
// Only stdio connections are wrapped: go-sdk's Streamable HTTP client
// connection learns the negotiated protocol from the session through an
// unexported method, which a wrapper cannot pass on.

// wireTransport wraps the transport to one plugin server's connection c.
type wireTransport struct {
	mcp.Transport
	c *conn
}

// Connect implements mcp.Transport.
func (t *wireTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	inner, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	w := &wireConn{Connection: inner, c: t.c}
	t.c.wire = w
	return w, nil
}

// wireConn is the connection to a plugin server as berth reads it.
type wireConn struct {
	mcp.Connection
	c *conn
}

// Read implements mcp.Connection: each message the server sent is shown
// to the connection's readers first (onRead), which may consume it.
func (w *wireConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := w.Connection.Read(ctx)
		if err != nil {
			return nil, err
		}
		if w.c.onRead(msg) {
			continue
		}
		return msg, nil
	}
}

// onRead sees a message the server sent, in wire order, before go-sdk
// does; true consumes it (go-sdk never sees it).
func (c *conn) onRead(msg jsonrpc.Message) bool {
	return c.tasksOnRead(msg)
}
