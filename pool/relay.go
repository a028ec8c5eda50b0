//lint:file-ignore SA1019 the relay carries the SEP-2577 features (roots, sampling, logging) during their deprecation window

package pool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
)

// What a plugin server sends back while it serves a request — progress,
// log messages, and its own requests for sampling and elicitation — is
// relayed to the client that made the request, with the plugin's identity
// kept (docs/relay.md):
//
//   - the client's request (tools/call, prompts/get, resources/read) is
//     opened on the server's connection with WithRelay; the upstream
//     request then carries a progress token of berth's own when the client
//     asked for progress, and the client's log level and capabilities on
//     2026-07-28 connections;
//   - the server's notifications/progress for that token reach the Relay
//     while the request is open, and only then, in order: read off the
//     wire (wire.go), before the request's answer is handed over;
//   - its sampling/createMessage and elicitation/create are answered by the
//     Relay of the one client that has requests open with the server, after
//     the plugin's sampling or elicitation policy allowed them;
//   - its log messages go to the pool's log sink (SetLogSink);
//   - its roots/list is passed to the client of the one client's request
//     open with the server when that client declared roots (RootsRelay),
//     and answered with the workspace the pool serves otherwise.

// Request kinds of a plugin server's own requests (the policy names are
// "<plugin>__sampling" and "<plugin>__elicitation").
const (
	RequestSampling    RequestKind = "sampling"
	RequestElicitation RequestKind = "elicitation"
)

// Limits on what a plugin server can push through the relay.
const (
	// MaxProgressPerSecond is how many progress notifications of one
	// request are relayed per second; the rest are dropped.
	MaxProgressPerSecond = 50
	// MaxProgressMessage caps a progress notification's message (bytes).
	MaxProgressMessage = 1024
	// MaxLogPerSecond is how many log messages of one server connection
	// are relayed per second; the rest are dropped.
	MaxLogPerSecond = 100
	// MaxLogData caps a log message's data (bytes of JSON); larger data is
	// replaced by a string saying how large it was.
	MaxLogData = 8 << 10
	// MaxLoggerName caps the logger name a plugin server gives.
	MaxLoggerName = 128
	// MaxUpdatesPerSecond is how many notifications/resources/updated of
	// one server connection are relayed per second, after a burst of up
	// to UpdateBurst (a token bucket). An update of a URI whose update is
	// still waiting is merged into it, so each URI's last update is
	// relayed however many came (relay_subscriptions.go).
	MaxUpdatesPerSecond = 10
	// UpdateBurst is how many resource updates are relayed at once
	// before MaxUpdatesPerSecond applies.
	UpdateBurst = 10
)

// Origin names the plugin server a relayed message comes from.
type Origin struct {
	Plugin string
	Server string
	// ID is the server's identity "<plugin>__<server>" (ServerID).
	ID string
}

// Relay is the client side of one request: where its progress goes and who
// answers the plugin server's requests made during it.
type Relay interface {
	// Progress relays a progress notification of the request; the token is
	// unset, the Relay puts the client's. It is called from the reader of
	// the server's connection (wire.go), in wire order, before the
	// request's answer is handed over: it must not wait on the client.
	Progress(ctx context.Context, from Origin, p *mcp.ProgressNotificationParams)
	// CreateMessage asks the client to sample. policy is the plugin's
	// sampling policy as it applied (not deny).
	CreateMessage(ctx context.Context, from Origin, policy store.PolicyMatch, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error)
	// Elicit asks the client's human.
	Elicit(ctx context.Context, from Origin, policy store.PolicyMatch, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	// Client identifies the client's session: a server's request is
	// relayed only when the requests open with it are all one client's.
	Client() any
}

// RootsRelay is a Relay that can pass a plugin server's roots/list to its
// client. handled is false when the client cannot be asked (it did not
// declare roots, or its era and transport give no way to ask it): the
// pool then answers with the workspace.
type RootsRelay interface {
	ListRoots(ctx context.Context, from Origin, p *mcp.ListRootsParams) (res *mcp.ListRootsResult, handled bool, err error)
}

// listRoots passes a server's roots/list to the client whose request is
// open with it (target), when that client can answer it; ok is false for
// the workspace answer: no request open, several clients', or a client
// that cannot be asked.
func (s *server) listRoots(ctx context.Context, c *conn, req mcp.Request) (mcp.Result, bool, error) {
	oc, err := c.relays.target(ctx, s.origin(), "roots/list")
	if err != nil {
		return nil, false, nil
	}
	rr, ok := oc.req.Relay.(RootsRelay)
	if !ok {
		return nil, false, nil
	}
	p, _ := req.GetParams().(*mcp.ListRootsParams)
	if p == nil {
		p = &mcp.ListRootsParams{}
	}
	res, handled, err := rr.ListRoots(mergeCancel(ctx, oc.ctx), s.origin(), p)
	if !handled {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	return res, true, nil
}

// RelayRequest is what WithRelay attaches to a request's context.
type RelayRequest struct {
	Relay Relay
	// Progress: the client asked for progress (it sent a progress token).
	Progress bool
	// LogLevel is the client's log level ("" for none): on 2026-07-28
	// connections it goes in the upstream request's _meta.
	LogLevel mcp.LoggingLevel
	// Capabilities are the client's; on 2026-07-28 connections the server
	// is told these, so it asks only for what the client can answer.
	Capabilities *mcp.ClientCapabilities
	// InputResponses and RequestState are the client's answers to the
	// server's input requests of the previous round (2026-07-28, SEP-2322),
	// passed on unchanged.
	InputResponses mcp.InputResponseMap
	RequestState   string
}

type relayKey struct{}

// WithRelay returns a context whose request (Call, GetPrompt,
// ReadResource) relays to r.
func WithRelay(ctx context.Context, r *RelayRequest) context.Context {
	if r == nil || r.Relay == nil {
		return ctx
	}
	return context.WithValue(ctx, relayKey{}, r)
}

func relayOf(ctx context.Context) *RelayRequest {
	r, _ := ctx.Value(relayKey{}).(*RelayRequest)
	return r
}

// relaySet is the requests open on one connection.
type relaySet struct {
	mu   sync.Mutex
	open map[*openCall]struct{}
	// byToken finds a request by the progress token berth gave it.
	byToken map[string]*openCall
	// byID finds a request with a token by the JSON-RPC ID of the
	// message that carried it upstream (the wire's Write notes it), so
	// that its answer closes it the moment it is read (wire.go).
	byID map[jsonrpc.ID]*openCall
	// tokened counts the open requests with a token, so that the wire
	// looks for one only while there is one.
	tokened atomic.Int32
	// opened counts the requests opened; each openCall's seq is its
	// place in that count (target picks the most recent).
	opened uint64
	log    rateWindow
	// subs are the clients subscribed to each URI (relay_subscriptions.go).
	subs map[string]subscribers
	// updates are the resource updates waiting to be relayed.
	updates updateQueue
	// level is the log level last set on a legacy connection (era.go).
	level mcp.LoggingLevel
}

// openCall is one request open on a connection.
type openCall struct {
	req   *RelayRequest
	from  Origin
	ctx   context.Context
	token string
	// id is the JSON-RPC ID of the request that carried token upstream
	// (hasID: it was written), under relaySet.mu.
	id    jsonrpc.ID
	hasID bool
	// seq orders the requests opened on the connection (relaySet.opened).
	seq uint64

	mu       sync.Mutex // serializes the request's progress
	closed   bool
	sent     int
	last     float64
	progress rateWindow
}

// close ends what is relayed of oc: nothing after it returns. It is
// called when the server's answer is read off the wire (wire.go), before
// go-sdk hands it to the caller, and again when the caller is done.
func (oc *openCall) close() {
	oc.mu.Lock()
	oc.closed = true
	oc.mu.Unlock()
}

func (oc *openCall) isClosed() bool {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	return oc.closed
}

type openCallKey struct{}

// rateWindow counts events per second.
type rateWindow struct {
	start time.Time
	n     int
}

// allow counts an event and reports whether it is within max per second.
func (w *rateWindow) allow(now time.Time, max int) bool {
	if now.Sub(w.start) >= time.Second {
		w.start, w.n = now, 0
	}
	w.n++
	return w.n <= max
}

// openRelay opens the request of ctx (if it relays) on connection c; done
// closes it: nothing of it is relayed after done returns.
func (s *server) openRelay(ctx context.Context, c *conn) (context.Context, func()) {
	r := relayOf(ctx)
	if r == nil || c == nil {
		return ctx, func() {}
	}
	oc := &openCall{req: r, from: s.origin(), ctx: ctx}
	if r.Progress {
		oc.token = newToken()
	}
	rs := &c.relays
	rs.mu.Lock()
	if rs.open == nil {
		rs.open, rs.byToken, rs.byID = map[*openCall]struct{}{}, map[string]*openCall{}, map[jsonrpc.ID]*openCall{}
	}
	rs.opened++
	oc.seq = rs.opened
	rs.open[oc] = struct{}{}
	if oc.token != "" {
		rs.byToken[oc.token] = oc
		rs.tokened.Add(1)
	}
	rs.mu.Unlock()
	s.lowerLegacyLevel(c, r.LogLevel)
	return context.WithValue(ctx, openCallKey{}, oc), func() {
		rs.mu.Lock()
		delete(rs.open, oc)
		if oc.token != "" {
			delete(rs.byToken, oc.token)
			rs.tokened.Add(-1)
		}
		if oc.hasID && rs.byID[oc.id] == oc {
			delete(rs.byID, oc.id)
		}
		rs.mu.Unlock()
		oc.close()
	}
}

func (s *server) origin() Origin { return Origin{Plugin: s.pl.name, Server: s.name, ID: s.id} }

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "berth-" + hex.EncodeToString(b[:])
}

// stampParams puts what the open request of ctx tells the server into the
// upstream request's params: berth's progress token, the client's answers
// to the server's input requests (a go-sdk server on a legacy connection
// returns input requests too, from its second round on: era.go), and, on
// 2026-07-28 connections, the client's log level and capabilities.
func stampParams(ctx context.Context, modern bool, meta *mcp.Meta, setToken func(any)) (mcp.InputResponseMap, string) {
	oc, _ := ctx.Value(openCallKey{}).(*openCall)
	if oc == nil {
		return nil, ""
	}
	if oc.token != "" {
		setToken(oc.token)
	}
	if !modern {
		return oc.req.InputResponses, oc.req.RequestState
	}
	if *meta == nil {
		*meta = mcp.Meta{}
	}
	if oc.req.LogLevel != "" {
		(*meta)[mcp.MetaKeyLogLevel] = oc.req.LogLevel
	}
	(*meta)[mcp.MetaKeyClientCapabilities] = relayedCapabilities(oc.req.Capabilities)
	return oc.req.InputResponses, oc.req.RequestState
}

// relayedCapabilities is what a 2026-07-28 server is told the client can
// do: the client's sampling, elicitation and roots, whose input requests
// berth passes to the client.
func relayedCapabilities(c *mcp.ClientCapabilities) map[string]any {
	out := map[string]any{}
	if c == nil {
		return out
	}
	if c.RootsV2 != nil {
		out["roots"] = c.RootsV2
	}
	if c.Sampling != nil {
		out["sampling"] = c.Sampling
	}
	if c.Elicitation != nil {
		out["elicitation"] = c.Elicitation
	}
	return out
}

func isModern(cs *mcp.ClientSession) bool {
	ir := cs.InitializeResult()
	return ir != nil && ir.ProtocolVersion >= "2026-07-28"
}

// progress relays a progress notification from the server to the request
// it names, if that request is open: in order, at most
// MaxProgressPerSecond a second, each strictly greater than the last.
func (rs *relaySet) progress(p *mcp.ProgressNotificationParams) {
	tok, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	rs.mu.Lock()
	oc := rs.byToken[tok]
	rs.mu.Unlock()
	if oc != nil {
		oc.relayProgress(p)
	}
}

// relayProgress relays p, a progress of oc's token, under the rules of
// progress.
func (oc *openCall) relayProgress(p *mcp.ProgressNotificationParams) {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if oc.closed || (oc.sent > 0 && p.Progress <= oc.last) || !oc.progress.allow(time.Now(), MaxProgressPerSecond) {
		return
	}
	oc.sent++
	oc.last = p.Progress
	out := &mcp.ProgressNotificationParams{Progress: p.Progress, Total: p.Total, Message: review.Cut(p.Message, MaxProgressMessage)}
	oc.req.Relay.Progress(oc.ctx, oc.from, out)
}

// errRelay is the MCP error a plugin server gets when berth does not
// relay its request.
func errRelay(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// target finds the open request that a server's request belongs to: the
// one whose context it runs in, or else the most recently opened of the
// requests open with the server, which must all be one client's (a server
// asks during the call it serves; of one client's calls, the latest is the
// one the client waits on now, and the choice does not depend on map
// order). A request closes when its answer is read off the wire (wire.go)
// or its caller is done, whichever is first; a closed one (another
// client's, often, as clients take turns) is not a candidate: a server
// sends its requests while it serves a call, never after its answer.
func (rs *relaySet) target(ctx context.Context, from Origin, method string) (*openCall, error) {
	if oc, _ := ctx.Value(openCallKey{}).(*openCall); oc != nil {
		return oc, nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var pick *openCall
	for oc := range rs.open {
		if oc.isClosed() {
			continue
		}
		if pick != nil && oc.req.Relay.Client() != pick.req.Relay.Client() {
			return nil, errRelay("berth refused %s from %s: requests of several clients are open with that server, and berth cannot tell which one it belongs to", method, from.ID)
		}
		if pick == nil || oc.seq > pick.seq {
			pick = oc
		}
	}
	if pick == nil {
		return nil, errRelay("berth refused %s from %s: berth relays it only while the server is serving a client's request (a tool call, prompt or resource read), and none is open", method, from.ID)
	}
	return pick, nil
}

// relayPolicy is the plugin's policy for its servers' sampling or
// elicitation requests ("<plugin>__sampling", "<plugin>__elicitation").
func (s *server) relayPolicy(kind RequestKind) store.PolicyMatch {
	return s.p.policyFor(s, RelayPolicyName(s.pl.name, kind))
}

// RelayPolicyName is the name a plugin's sampling or elicitation policy
// is decided by: "<plugin>__sampling" or "<plugin>__elicitation".
func RelayPolicyName(plugin string, kind RequestKind) string {
	return plugin + Sep + string(kind)
}

func (s *server) createMessage(ctx context.Context, c *conn, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	from := s.origin()
	oc, err := c.relays.target(ctx, from, "sampling/createMessage")
	if err != nil {
		s.out.event("%v", err)
		return nil, err
	}
	m := s.relayPolicy(RequestSampling)
	if m.Action == store.ActionDeny {
		return nil, errRelay("berth refused sampling/createMessage from %s: the operator's policy denies sampling for plugin %s (rule %q); change it with `berth policy set %s ask`", from.ID, from.Plugin, m.Pattern, RelayPolicyName(from.Plugin, RequestSampling))
	}
	return oc.req.Relay.CreateMessage(mergeCancel(ctx, oc.ctx), from, m, p)
}

func (s *server) elicit(ctx context.Context, c *conn, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	from := s.origin()
	oc, err := c.relays.target(ctx, from, "elicitation/create")
	if err != nil {
		s.out.event("%v", err)
		return nil, err
	}
	m := s.relayPolicy(RequestElicitation)
	if m.Action == store.ActionDeny {
		return nil, errRelay("berth refused elicitation/create from %s: the operator's policy denies elicitation for plugin %s (rule %q); change it with `berth policy set %s ask`", from.ID, from.Plugin, m.Pattern, RelayPolicyName(from.Plugin, RequestElicitation))
	}
	return oc.req.Relay.Elicit(mergeCancel(ctx, oc.ctx), from, m, p)
}

// LogMessage is a log message of a plugin server, as the pool relays it:
// Logger names the plugin and server ("<plugin>__<server>", then "/" and
// the server's own logger name if it gave one, printable and capped), Data
// is capped at MaxLogData.
type LogMessage struct {
	From   Origin
	Params *mcp.LoggingMessageParams
	// Open are the requests open with the server when it sent the message.
	Open []*RelayRequest
}

// SetLogSink sets where plugin servers' log messages go (nil: nowhere).
// f is called from the reader of the server's connection (wire.go), in
// wire order: it must not wait on a client.
func (p *Pool) SetLogSink(f func(context.Context, *LogMessage)) {
	p.relayMu.Lock()
	p.logSink = f
	p.relayMu.Unlock()
}

// SetLogLevel sets the log level berth asks of plugin servers on legacy
// connections (logging/setLevel), for the ones running and those that
// start later; "" asks for nothing. On 2026-07-28 connections each request
// carries its client's level instead.
func (p *Pool) SetLogLevel(level mcp.LoggingLevel) {
	p.relayMu.Lock()
	changed := p.logLevel != level
	p.logLevel = level
	p.relayMu.Unlock()
	if !changed || level == "" {
		return
	}
	for _, s := range p.servers() {
		if c := s.live(); c != nil {
			go s.applyLogLevel(c, level)
		}
	}
}

func (p *Pool) currentLogLevel() mcp.LoggingLevel {
	p.relayMu.Lock()
	defer p.relayMu.Unlock()
	return p.logLevel
}

// applyLogLevel sends logging/setLevel on a legacy connection to a server
// that declared logging.
func (s *server) applyLogLevel(c *conn, level mcp.LoggingLevel) {
	if c.cs == nil || level == "" || isModern(c.cs) {
		return
	}
	if !hasCap(c, func(sc *mcp.ServerCapabilities) bool { return sc.Logging != nil }) {
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, s.callTime)
	defer cancel()
	c.relays.setLevel(level)
	if err := c.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
		s.out.event("logging/setLevel %s: %v", level, err)
	}
}

// relayLog passes a server's log message to the sink, with its logger
// named and its data capped.
func (s *server) relayLog(ctx context.Context, c *conn, p *mcp.LoggingMessageParams) {
	s.p.relayMu.Lock()
	sink := s.p.logSink
	s.p.relayMu.Unlock()
	if sink == nil || p == nil {
		return
	}
	rs := &c.relays
	rs.mu.Lock()
	if !rs.log.allow(time.Now(), MaxLogPerSecond) {
		// A flood is dropped before anything of it is copied.
		rs.mu.Unlock()
		return
	}
	var open []*RelayRequest
	for oc := range rs.open {
		open = append(open, oc.req)
	}
	rs.mu.Unlock()
	from := s.origin()
	logger := from.ID
	if p.Logger != "" {
		logger += "/" + review.Cut(printable(p.Logger), MaxLoggerName)
	}
	sink(ctx, &LogMessage{From: from, Open: open, Params: &mcp.LoggingMessageParams{Level: p.Level, Logger: logger, Data: capData(p.Data)}})
}

// printable escapes control characters (and invalid UTF-8) as Go escapes.
func printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == utf8.RuneError || r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// capData keeps data of at most MaxLogData bytes of JSON; larger data
// becomes a string saying so, with the first bytes.
func capData(d any) any {
	raw, err := json.Marshal(d)
	if err != nil {
		return "(log data that is not JSON)"
	}
	if len(raw) <= MaxLogData {
		return json.RawMessage(raw)
	}
	return fmt.Sprintf("(log data of %d bytes, cut to %d) %s", len(raw), MaxLogData/2, review.Cut(string(raw), MaxLogData/2))
}

// workspaceRoot is the root berth gives plugin servers: the workspace the
// pool serves, as a file URI.
func (p *Pool) workspaceRoot() *mcp.Root {
	abs, err := filepath.Abs(p.workspace)
	if err != nil {
		abs = p.workspace
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	return &mcp.Root{URI: u.String(), Name: "berth workspace " + filepath.Base(abs)}
}

// relayClient is the pool's MCP client for one connection: it relays
// progress, log messages, sampling and elicitation of the server, and
// answers roots/list with the workspace.
func (s *server) relayOptions(c *conn, o *mcp.ClientOptions) {
	o.Capabilities = &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}}
	o.Capabilities.AddExtension(UIExtension, map[string]any{"mimeTypes": []any{UIMimeType}}) // apps.go
	// Progress and log messages of stdio and legacy SSE servers are
	// relayed from the wire and never reach these handlers (wire.go);
	// a Streamable HTTP server's reach them, and its progress on a
	// request's own stream was relayed already (wire_http.go: a repeat
	// is not greater than the last, and is dropped).
	o.ProgressNotificationHandler = func(ctx context.Context, r *mcp.ProgressNotificationClientRequest) {
		c.relays.progress(r.Params)
	}
	o.LoggingMessageHandler = func(ctx context.Context, r *mcp.LoggingMessageRequest) {
		s.relayLog(ctx, c, r.Params)
	}
	o.CreateMessageWithToolsHandler = func(ctx context.Context, r *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
		return s.createMessage(ctx, c, r.Params)
	}
	o.ElicitationHandler = func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		markElicitReached(ctx)
		return s.elicit(ctx, c, r.Params)
	}
	o.ResourceUpdatedHandler = func(ctx context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
		s.resourceUpdated(ctx, c, r.Params)
	}
	// 2026-07-28 input requests are the client's to answer: pass them on.
	o.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
}

// RelayPolicy is a plugin's sampling or elicitation policy (deny refuses
// its servers' requests of that kind; ask, the default, and allow pass them
// to the client, whose human sees them).
func (p *Pool) RelayPolicy(plugin string, kind RequestKind) store.PolicyMatch {
	for _, s := range p.servers() {
		if s.pl.name == plugin {
			return s.relayPolicy(kind)
		}
	}
	return store.PolicyMatch{Action: store.ActionDeny, Pattern: "(no such plugin enabled)"}
}

type elicitReachedKey struct{}

// relayMiddleware is the receiving middleware of the pool's client: an
// elicitation/create that go-sdk's client refuses before berth sees it
// (its schema check rejects some schemas the specification allows, such
// as SEP-1330 titled multi-select enums whose items say "type": "string")
// is relayed as is; the client the human uses checks the schema.
func (s *server) relayMiddleware(c *conn) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "roots/list" {
				if res, ok, err := s.listRoots(ctx, c, req); ok {
					return res, err
				}
				return next(ctx, method, req)
			}
			if method != "elicitation/create" {
				return next(ctx, method, req)
			}
			reached := new(bool)
			res, err := next(context.WithValue(ctx, elicitReachedKey{}, reached), method, req)
			p, ok := req.GetParams().(*mcp.ElicitParams)
			if err == nil || *reached || !ok || p == nil {
				return res, err
			}
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.HasPrefix(werr.Message, "elicit schema") {
				return res, err
			}
			return s.elicit(ctx, c, p)
		}
	}
}

func markElicitReached(ctx context.Context) {
	if r, ok := ctx.Value(elicitReachedKey{}).(*bool); ok {
		*r = true
	}
}
