//lint:file-ignore SA1019 the wire relays log messages (SEP-2577 logging) during their deprecation window

package pool

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/mcpotel"
)

// The wire: berth sees every message a plugin server sends, in the order
// it sent them, before go-sdk does (go-sdk hands a response to its caller
// at once but queues notifications for a goroutine of its own, so their
// order is lost above the connection). go-sdk's mcp.Transport and
// mcp.Connection are its public extension points; this wraps them, it
// patches nothing.
//
// What the wire does (docs/relay.md §Progress, §Logging):
//
//   - a request berth sends with a progress token of its own is noted by
//     its JSON-RPC ID as it is written (Write), and its answer closes it
//     the moment the answer is read, before go-sdk hands it to the caller:
//     a progress the server sent after its answer is never relayed;
//   - notifications/progress and notifications/message are relayed from
//     Read, in wire order, and go-sdk never sees them: by the time go-sdk
//     hands a request's answer over, every progress and log message the
//     server sent before it has been passed to the client's side (whose
//     Relay queues it without waiting on the client, and delivers it
//     before the answer). No timer is involved.
//
// Stdio servers and legacy SSE servers are wrapped. go-sdk's Streamable
// HTTP client connection is not: it learns the negotiated protocol from
// the session through an unexported method (sessionUpdated), which a
// wrapper cannot pass on; its progress is read off the HTTP response
// stream instead (wire_http.go). Neither go-sdk's stdio connection
// (ioConn) nor its SSE client connection implements an optional interface
// the client session looks for (clientConnection's sessionUpdated, or
// cancellationPropagator, which only Streamable HTTP server connections
// have), so the wrapper hides nothing the session would use.

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

// Write implements mcp.Connection: a request of an open call with a
// progress token is noted by its ID before it goes out, so that its
// answer, when read, closes the call (onRead).
func (w *wireConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := w.c.tasksOnWrite(ctx, msg); err != nil {
		return err
	}
	w.c.relays.onWrite(ctx, msg)
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		mcpotel.NoteRequestID(ctx, req.ID)
	}
	return w.Connection.Write(ctx, msg)
}

// onRead sees a message the server sent, in wire order, before go-sdk
// does; true consumes it (go-sdk never sees it).
func (c *conn) onRead(msg jsonrpc.Message) bool {
	if c.tasksOnRead(msg) {
		return true
	}
	switch m := msg.(type) {
	case *jsonrpc.Response:
		c.relays.answer(m.ID)
	case *jsonrpc.Request:
		switch m.Method {
		case "notifications/progress":
			c.relays.progressRaw(m.Params)
			return true
		case "notifications/message":
			if c.srv == nil {
				return false
			}
			var p mcp.LoggingMessageParams
			if json.Unmarshal(m.Params, &p) == nil {
				c.srv.relayLog(c.ctx, c, &p)
			}
			return true
		}
	}
	return false
}

// onWrite notes the ID of a request that an open call with a progress
// token sends (ctx is the caller's: go-sdk passes it down to Write).
func (rs *relaySet) onWrite(ctx context.Context, msg jsonrpc.Message) {
	if rs.tokened.Load() == 0 {
		return
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return
	}
	oc, _ := ctx.Value(openCallKey{}).(*openCall)
	if oc == nil || oc.token == "" {
		return
	}
	rs.mu.Lock()
	if _, open := rs.open[oc]; open && !oc.hasID {
		oc.id, oc.hasID = req.ID, true
		rs.byID[req.ID] = oc
	}
	rs.mu.Unlock()
}

// answer closes the call whose request has id, when the server's answer
// to it is read: nothing the server sends after it is relayed for it.
func (rs *relaySet) answer(id jsonrpc.ID) {
	if rs.tokened.Load() == 0 {
		return
	}
	rs.mu.Lock()
	oc := rs.byID[id]
	delete(rs.byID, id)
	rs.mu.Unlock()
	if oc != nil {
		oc.close()
	}
}

// progressRaw relays a notifications/progress as read off the wire.
func (rs *relaySet) progressRaw(raw json.RawMessage) {
	var p mcp.ProgressNotificationParams
	if json.Unmarshal(raw, &p) != nil {
		return
	}
	rs.progress(&p)
}
