//lint:file-ignore SA1019 the relay carries the SEP-2577 features (roots, sampling, logging) during their deprecation window

package mcpexport

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
)

// The client side of the pool's relay (pool/relay.go, docs/relay.md): a
// plugin server's progress for a request reaches the client that made it
// under the client's own token, its sampling and elicitation requests go
// to that client (named as the plugin's and audited), and its log
// messages reach the sessions that set a log level.

// callRelay is one client request (tools/call, prompts/get,
// resources/read) as the pool relays to it.
type callRelay struct {
	s     *Server
	ss    *mcp.ServerSession
	ctx   context.Context // the request's: notifications go on its stream
	token any             // the client's progress token, nil for none
	// modern: the session is on 2026-07-28, where a server cannot send a
	// request during a call.
	modern bool
	caps   *mcp.ClientCapabilities
	// level is a 2026-07-28 request's log level (its _meta's; "" for
	// none): the server's log messages reach it at that level.
	level  mcp.LoggingLevel
	client string
	entry  AuditEntry // who asks and how, for the audit of relayed requests
	// flight, on a 2026-07-28 session, parks a legacy server's requests
	// for the client's retry (era.go).
	flight *flight
}

// relayFor builds the relay of a request and the pool's view of it.
func (s *Server) relayFor(ctx context.Context, ss *mcp.ServerSession, meta mcp.Meta, caps *mcp.ClientCapabilities, protocol string, responses mcp.InputResponseMap, state string, entry AuditEntry) (*callRelay, *pool.RelayRequest) {
	r := &callRelay{s: s, ss: ss, ctx: ctx, modern: protocol >= modernProtocol, caps: caps, client: entry.Client, entry: entry}
	if meta != nil {
		r.token = meta["progressToken"]
	}
	rr := &pool.RelayRequest{Relay: r, Progress: r.token != nil, Capabilities: caps, InputResponses: responses, RequestState: state}
	if r.modern {
		if lv, ok := meta[mcp.MetaKeyLogLevel].(string); ok {
			rr.LogLevel = mcp.LoggingLevel(lv)
			r.level = rr.LogLevel
		}
	} else {
		rr.LogLevel = s.levels.of(ss)
	}
	return r, rr
}

// Progress implements pool.Relay: the progress goes in the session's
// outbox (outbox.go), and the call's answer after it. A call in a flight
// relays it to the client's request that waits on the flight now (era.go).
func (r *callRelay) Progress(_ context.Context, _ pool.Origin, p *mcp.ProgressNotificationParams) {
	if r.flight != nil {
		r.flight.relay(flightNote{progress: p}, nil)
		return
	}
	r.progress(p)
}

// progress relays p to r's request under its progress token.
func (r *callRelay) progress(p *mcp.ProgressNotificationParams) {
	if r.ss == nil || r.token == nil || r.ctx.Err() != nil {
		return
	}
	p.ProgressToken = r.token
	r.s.outbox.send(r.ss, func() {
		if r.ctx.Err() != nil {
			return
		}
		if err := r.ss.NotifyProgress(r.ctx, p); err != nil && r.ctx.Err() == nil {
			r.s.log.Debug("relaying progress", "error", err)
		}
	})
}

// flush waits until what was relayed to the session so far went out
// (outbox.go): the request's answer goes after it. Deferred right after
// the relay is made, it runs while the request's context is live.
func (r *callRelay) flush() {
	if r.ss != nil {
		r.s.outbox.flush(r.ctx, r.ss)
	}
}

// Client implements pool.Relay.
func (r *callRelay) Client() any { return r.ss }

// CreateMessage implements pool.Relay.
func (r *callRelay) CreateMessage(ctx context.Context, from pool.Origin, m store.PolicyMatch, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	if r.modern && r.flight != nil {
		q := *p
		q.Meta = metaWithOrigin(q.Meta, from)
		res, err := r.askAsInput(ctx, from, pool.RequestSampling, "sampling/createMessage", r.caps != nil && r.caps.Sampling != nil, m, &q)
		if err != nil {
			return nil, err
		}
		return res.(*mcp.CreateMessageWithToolsResult), nil
	}
	if err := r.canAsk(from, pool.RequestSampling, "sampling/createMessage", r.caps != nil && r.caps.Sampling != nil); err != nil {
		r.audit(from, pool.RequestSampling, m, OutcomeRefused, err.Error())
		return nil, err
	}
	q := *p
	q.Meta = metaWithOrigin(q.Meta, from)
	rctx, done := r.onRequestStream(ctx)
	defer done()
	res, err := r.ss.CreateMessageWithTools(rctx, &q)
	r.auditResult(from, pool.RequestSampling, m, err)
	return res, err
}

// Elicit implements pool.Relay.
func (r *callRelay) Elicit(ctx context.Context, from pool.Origin, m store.PolicyMatch, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if err := r.canAsk(from, pool.RequestElicitation, "elicitation/create", r.caps != nil && r.caps.Elicitation != nil); err != nil {
		r.audit(from, pool.RequestElicitation, m, OutcomeRefused, err.Error())
		return nil, err
	}
	msg, err := relayedMessage(from, "elicitation/create", p.Message)
	if err != nil {
		r.audit(from, pool.RequestElicitation, m, OutcomeRefused, err.Error())
		return nil, err
	}
	schema, err := relayedSchema(from, "elicitation/create", p.RequestedSchema)
	if err != nil {
		r.audit(from, pool.RequestElicitation, m, OutcomeRefused, err.Error())
		return nil, err
	}
	q := *p
	q.Message, q.RequestedSchema = msg, schema
	q.Meta = metaWithOrigin(q.Meta, from)
	if r.modern && r.flight != nil {
		res, err := r.askAsInput(ctx, from, pool.RequestElicitation, "elicitation/create", r.caps != nil && r.caps.Elicitation != nil, m, &q)
		if err != nil {
			return nil, err
		}
		return res.(*mcp.ElicitResult), nil
	}
	rctx, done := r.onRequestStream(ctx)
	defer done()
	res, err := r.ss.Elicit(rctx, &q)
	r.auditResult(from, pool.RequestElicitation, m, err)
	return res, err
}

// ListRoots implements pool.RootsRelay: a plugin server's roots/list
// during the call reaches a client that declared roots, as a request
// (legacy session) or as an input request of the call's flight
// (2026-07-28 session, era.go); any other client's is answered by the
// pool with the workspace (handled false).
func (r *callRelay) ListRoots(ctx context.Context, from pool.Origin, p *mcp.ListRootsParams) (*mcp.ListRootsResult, bool, error) {
	if r.ss == nil || !declaresRoots(r.caps) || r.modern && r.flight == nil {
		return nil, false, nil
	}
	q := *p
	q.Meta = metaWithOrigin(q.Meta, from)
	if r.modern {
		res, err := r.flight.ask(ctx, &q)
		if err != nil {
			return nil, true, err
		}
		return res.(*mcp.ListRootsResult), true, nil
	}
	rctx, done := r.onRequestStream(ctx)
	defer done()
	res, err := r.ss.ListRoots(rctx, &q)
	return res, true, err
}

// canAsk says why a server's request cannot go to this client, or nil.
func (r *callRelay) canAsk(from pool.Origin, kind pool.RequestKind, method string, declared bool) error {
	switch {
	case r.ss == nil:
		return relayRefusal("berth refused %s from %s: the request it serves has no client session to ask", method, from.ID)
	case r.modern && r.flight == nil && (r.entry.Kind == pool.RequestPrompt || r.entry.Kind == pool.RequestResource):
		// Flights carry a tools/call only (docs/relay.md §"The protocol
		// berth speaks to plugin servers").
		return relayRefusal("berth refused %s from %s: the client's session is on protocol %s, where a server cannot send requests while it serves one, and berth passes a legacy server's requests on to such a client (as input requests) only during a tools/call, not during %s; the plugin server should ask during a tool call instead, or answer with input requests (protocol %s)", method, from.ID, modernProtocol, requestMethod(r.entry.Kind), modernProtocol)
	case r.modern && r.flight == nil:
		return relayRefusal("berth refused %s from %s: the client's session is on protocol %s, where a server cannot send requests during a call, and the client declared neither sampling nor elicitation, so berth cannot pass it on as an input request", method, from.ID, modernProtocol)
	case !declared:
		return relayRefusal("berth refused %s from %s: the client (%s) did not declare the %s capability", method, from.ID, r.client, kind)
	}
	return nil
}

// requestMethod is the MCP method of a client's request of kind.
func requestMethod(kind pool.RequestKind) string {
	switch kind {
	case pool.RequestPrompt:
		return "prompts/get"
	case pool.RequestResource:
		return "resources/read"
	}
	return "tools/call"
}

func relayRefusal(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// originText is how a relayed elicitation names where it comes from.
func originText(from pool.Origin) string {
	return fmt.Sprintf("[plugin %s, server %s] ", review.PrintableLines(from.Plugin), review.PrintableLines(from.Server))
}

// MaxElicitLines is how many lines of a plugin's elicitation message berth
// passes on as lines; the lines after it are joined to the last one,
// separated by spaces.
const MaxElicitLines = 20

// relayedMessage is the message of a plugin server's elicitation (method,
// for the error) as berth passes it to the client: its origin first
// (originText), then the plugin's text with every control and format
// character escaped as a log line's is (review.PrintableLines: a carriage
// return, ESC, U+202E become \r, \x1b, \u202e), blank lines dropped so
// that a run of newlines is one, trailing spaces cut, at most
// MaxElicitLines lines and each cut at MaxElicitLineRunes
// (printableLines); single newlines and tabs stay, so a multi-line
// question reads as written. Nothing the plugin writes can push the
// origin out of view or redraw it. A message that reads like berth's own
// text is refused (imitatesBerth).
func relayedMessage(from pool.Origin, method, msg string) (string, error) {
	lines := printableLines(msg)
	if l, ok := imitatesBerth(lines); ok {
		return "", relayRefusal("berth refused %s from %s: its message reads like berth's own text (%q), which could pass for berth's approval form; berth passes on no message whose first line begins with \"berth\", nor one with a line that begins with \"berth:\", \"[plugin\", \"Run this tool call?\" or a label of berth's form (\"Tool:\", \"Server:\", \"Policy:\", …), letters that look alike counted as the same (the plugin should word its message as its own)", method, from.ID, review.Cut(l, 80))
	}
	return originText(from) + strings.Join(lines, "\n"), nil
}

// metaWithOrigin adds berth's note of the origin to a relayed request's _meta.
func metaWithOrigin(m mcp.Meta, from pool.Origin) mcp.Meta {
	out := mcp.Meta{}
	for k, v := range m {
		out[k] = v
	}
	out[metaOrigin] = map[string]string{"plugin": from.Plugin, "server": from.Server}
	return out
}

// metaOrigin is the _meta key of a relayed request that names the plugin
// and server it comes from.
const metaOrigin = "dev.berth/origin"

func (r *callRelay) auditResult(from pool.Origin, kind pool.RequestKind, m store.PolicyMatch, err error) {
	if err != nil {
		r.audit(from, kind, m, OutcomeFailed, shortErr(err))
		return
	}
	r.audit(from, kind, m, OutcomeRan, "")
}

// audit writes one relayed request to the audit log.
func (r *callRelay) audit(from pool.Origin, kind pool.RequestKind, m store.PolicyMatch, outcome Outcome, reason string) {
	e := r.entry
	e.Kind, e.Tool, e.Plugin, e.Server = kind, pool.RelayPolicyName(from.Plugin, kind), from.Plugin, from.Server
	e.URI, e.ArgumentsDigest, e.Arguments, e.Approval, e.Always = "", "", nil, "", false
	e.Policy, e.DecidedBy, e.Decision = m.String(), ByPolicy, VerdictAllow
	if outcome == OutcomeRefused {
		e.DecidedBy, e.Decision = ByBerth, VerdictDeny
	}
	e.Outcome, e.Reason = outcome, reason
	e.Profile = r.s.view.Profile
	if err := r.s.audit.Append(e); err != nil {
		r.s.log.Error("cannot write the audit log", "error", err)
	}
	r.traceRelayed(kind, &e)
}

// logLevels is the log level each legacy session set (logging/setLevel),
// and the Server (view) the session is of, so that a plugin's log
// messages reach only the sessions whose view offers the plugin.
type logLevels struct {
	mu sync.Mutex
	m  map[*mcp.ServerSession]sessionLevel
}

type sessionLevel struct {
	level mcp.LoggingLevel
	srv   *Server
}

func (l *logLevels) of(ss *mcp.ServerSession) mcp.LoggingLevel {
	if ss == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[ss].level
}

func (l *logLevels) set(ss *mcp.ServerSession, level mcp.LoggingLevel, srv *Server) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[*mcp.ServerSession]sessionLevel{}
	}
	l.m[ss] = sessionLevel{level: level, srv: srv}
}

// lowest forgets sessions that are gone and returns the lowest level of
// the others ("" for none).
func (l *logLevels) lowest(live map[*mcp.ServerSession]bool) mcp.LoggingLevel {
	l.mu.Lock()
	defer l.mu.Unlock()
	var low mcp.LoggingLevel
	for ss, e := range l.m {
		if !live[ss] {
			delete(l.m, ss)
			continue
		}
		if low == "" || pool.LevelBelow(e.level, low) {
			low = e.level
		}
	}
	return low
}

// sessions are the sessions that set a level, with the Server of each.
func (l *logLevels) sessions() map[*mcp.ServerSession]*Server {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[*mcp.ServerSession]*Server, len(l.m))
	for ss, e := range l.m {
		out[ss] = e.srv
	}
	return out
}

// levelMiddleware notes each session's logging/setLevel, and asks the
// plugin servers for the lowest level any live session wants.
func (s *Server) levelMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "logging/setLevel" || err != nil {
			return res, err
		}
		p, ok := req.GetParams().(*mcp.SetLoggingLevelParams)
		ss := sessionOf(req)
		if !ok || ss == nil {
			return res, err
		}
		s.levels.set(ss, p.Level, s)
		// The levels are the family's: every sibling's sessions count.
		live := map[*mcp.ServerSession]bool{}
		for _, l := range s.fam.sessions() {
			live[l] = true
		}
		s.pool.SetLogLevel(s.levels.lowest(live))
		return res, err
	}
}

// relayLog delivers a plugin server's log message: to every legacy
// session that set a level (go-sdk drops what is below it), and to the
// 2026-07-28 requests open with the server, on their own streams, at the
// level each asked for; in both cases only to a session whose view offers
// the plugin as the state has it now (a profile that leaves the plugin
// out, or was removed, gets none of its messages). It waits on no client:
// each message goes in each session's outbox (outbox.go).
func (s *Server) relayLog(_ context.Context, m *pool.LogMessage) {
	done := map[*mcp.ServerSession]bool{}
	for ss, srv := range s.levels.sessions() {
		done[ss] = true
		if srv == nil || !srv.offersPluginNow(m.From.Plugin) {
			continue
		}
		s.outbox.send(ss, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = ss.Log(ctx, m.Params)
			cancel()
		})
	}
	for _, rr := range m.Open {
		r, ok := rr.Relay.(*callRelay)
		switch {
		case !ok || !r.modern:
		case r.flight != nil:
			// The request that waits on the flight now (era.go).
			r.flight.relay(flightNote{log: m}, done)
		default:
			r.log(m, done)
		}
	}
}

// log relays a log message to r's 2026-07-28 request, if it asked for
// log messages, is still open, its session has none of them yet (done)
// and its view offers the plugin.
func (r *callRelay) log(m *pool.LogMessage, done map[*mcp.ServerSession]bool) {
	if r.ss == nil || done[r.ss] || r.level == "" || r.ctx.Err() != nil {
		return
	}
	done[r.ss] = true
	if !r.s.offersPluginNow(m.From.Plugin) {
		return
	}
	r.s.outbox.send(r.ss, func() {
		if r.ctx.Err() == nil {
			_ = r.ss.Log(r.ctx, m.Params)
		}
	})
}
