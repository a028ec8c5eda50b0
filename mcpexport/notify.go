package mcpexport

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listKind is one of the catalog lists whose changes go-sdk announces.
type listKind int

const (
	listTools listKind = iota
	listPrompts
	listResources
	numListKinds
)

var listChangedKind = map[string]listKind{
	"notifications/tools/list_changed":     listTools,
	"notifications/prompts/list_changed":   listPrompts,
	"notifications/resources/list_changed": listResources,
}

// listNotices decides which list_changed notifications go out. go-sdk
// announces every AddTool (and removal) to every session, the first
// catalog included: a session that connected while the pool's servers
// were starting, and listed (its list waited for that start), was then
// told its list had changed when nothing had. The first catalog (every
// change made before the servers' first start settled, and the sync
// that follows it) is the baseline no session has seen an older form of,
// so its changes are not announced; every later change is. Should a
// client be shown the catalog before the first start settled (a list
// whose wait for it ran out), the baseline ends there, so what comes
// after is announced.
type listNotices struct {
	started   atomic.Bool // the pool's first start settled
	baselined atomic.Bool // the first catalog is complete
	// real[k] is set once a change of list k after the baseline was made:
	// from then on go-sdk's notifications of that list go out. (go-sdk
	// coalesces changes within 10 ms into one notification, so one that
	// covers a real change is never dropped.)
	real [numListKinds]atomic.Bool
}

// changed records a change to list k made by a Sync.
func (n *listNotices) changed(k listKind) {
	if n.baselined.Load() {
		n.real[k].Store(true)
	}
}

// waitFirstStart marks the pool's first start settled, and syncs, so the
// baseline ends with the catalog it made.
func (s *Server) waitFirstStart(ctx context.Context) {
	if s.pool.WaitStarted(ctx) != nil {
		return
	}
	s.notices.started.Store(true)
	s.syncSoon()
}

// sendingMiddleware drops the list_changed notifications of the first
// catalog (listNotices), and turns a notification's failure to reach a
// stream or session that already closed into silence: a client that went
// away is not a fault of berth's, and go-sdk would log it as a warning.
func (s *Server) sendingMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if k, ok := listChangedKind[method]; ok && !s.notices.real[k].Load() {
			return nil, nil
		}
		if method == "notifications/resources/updated" {
			// Only to a session berth holds subscribed, whose view
			// offers the resource now (relay_completion.go).
			p, _ := req.GetParams().(*mcp.ResourceUpdatedNotificationParams)
			if ss := sessionOf(req); p == nil || ss == nil || !s.subscribedNow(p.URI, ss) {
				return nil, nil
			}
		}
		res, err := next(ctx, method, req)
		if err != nil && strings.HasPrefix(method, "notifications/") && closedStream(err) {
			s.log.Debug("notification to a closed stream or session dropped", "method", method, "error", err)
			return nil, nil
		}
		return res, err
	}
}

// closedStream reports whether err says the message could not be
// delivered because the stream or session it was meant for had closed.
// go-sdk's Streamable HTTP server says so with an error that wraps an
// internal sentinel (jsonrpc2.ErrRejected, "write to closed stream") or
// with "session is closed"; its other transports with ErrConnectionClosed
// or the closed pipe or connection below.
func closedStream(err error) bool {
	if errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "write to closed stream") || strings.Contains(msg, "session is closed") ||
		strings.Contains(msg, "connection closed") || strings.Contains(msg, "client is closing") || strings.Contains(msg, "server is closing")
}
