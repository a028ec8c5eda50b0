// Package mcpexport is berth's MCP server: it offers a workspace pool's
// tools, prompts and resources to any MCP client over stdio, the legacy
// HTTP+SSE transport or Streamable HTTP, with approval by default. A call
// runs only when the operator's policy allows it or a human approved it
// (MCP elicitation, multi-round-trip input requests, or the approval queue
// that `berth approve` settles); every decision goes to the audit log.
package mcpexport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/mcpotel"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
)

// DefaultApprovalTimeout is how long a queued call waits for a decision:
// less than the 60 s after which the TypeScript SDK and the MCP Inspector
// give up on a request by default, so that the client reads berth's
// refusal instead of a timeout of its own.
const DefaultApprovalTimeout = 55 * time.Second

// catchUpWait bounds how long a request waits for the catalog before it
// is answered: the servers' first start and the re-assembly of the
// catalog together (a plugin's server may take its call timeout, 60 s by
// default, to list, and clients give up on a request after 60 s). A
// request that waited that long is answered from the catalog as it is,
// and the sync worker finishes the re-assembly (list_changed follows).
const catchUpWait = 20 * time.Second

// maxDescription caps tool descriptions (clients cap them too).
const maxDescription = 2048

// Hints name where a user changes a limit of the Server or settles the
// calls that wait for approval, in the words of the program that embeds
// it (a flag, a command). An empty hint is left out of the message; the
// library itself names no flag.
type Hints struct {
	// MaxPendingPerSession and MaxPending raise Options'
	// MaxPendingPerSession and MaxPending.
	MaxPendingPerSession, MaxPending string
	// MaxSessions raises HTTPOptions.MaxSessions.
	MaxSessions string
	// Approvals settles waiting calls.
	Approvals string
}

// Options tune a Server. A nil *Options means the defaults.
type Options struct {
	// ApprovalTimeout bounds the wait in the approval queue; default
	// DefaultApprovalTimeout.
	ApprovalTimeout time.Duration
	// MaxPendingPerSession and MaxPending bound the calls that wait for a
	// human (an elicitation or the queue) per session and in all; a call
	// beyond them is refused at once. Defaults DefaultMaxPendingPerSession
	// and DefaultMaxPending.
	MaxPendingPerSession, MaxPending int
	// Hints say, in the words of the program that embeds the Server,
	// where a user changes a limit or settles waiting calls; messages to
	// clients cite them. berth serve sets its flags and commands.
	Hints Hints
	// Logger receives the server's log; default text on stderr.
	Logger *slog.Logger
	// SupportedProtocolVersions narrows the protocol versions offered
	// (nil: all that go-sdk speaks).
	SupportedProtocolVersions []string
	// View is what the Server offers: a profile, the tools mode (nil: the
	// whole workspace, every tool listed).
	View *View
	// RecordSessions keeps the registry of this process's sessions (their
	// profile, mode, transport, client) in a file of the store's Serving
	// directory, <pid>.json, removed by Close; berth status reads it
	// (ReadServing). One Server per process may set it.
	RecordSessions bool
	// OnWaiting, if set, is called in its own goroutine each time a call
	// starts waiting in the approval queue (berth serve shows a desktop
	// notification with it: internal/cli's notifydesktop.go).
	OnWaiting func(*Pending)
	// TracerProvider and MeterProvider, when either is set, turn on
	// OpenTelemetry: a span per client request and the
	// mcp.server.operation.duration histogram (docs/telemetry.md). nil
	// for both (the default) adds no instrumentation at all.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// TelemetryContentUnsafe also records what may hold secrets: tool
	// call arguments, resource URIs and error messages.
	TelemetryContentUnsafe bool
}

// Server exports one pool. It is safe for concurrent use: many sessions
// over several transports may use it at once, and one session's pending
// approval never blocks another's calls. It keeps its catalog in step with
// the pool through one background worker; Close stops it.
type Server struct {
	pool    *pool.Pool
	store   *store.Store
	view    View // Options.View; the zero View is the whole workspace in full mode
	ms      *mcp.Server
	queue   *Queue
	audit   *Audit
	states  *stateBox
	pending *pendingLimits
	hints   Hints
	// requests are the HTTP requests in flight, for withdrawing the calls
	// whose request went away.
	requests *liveRequests
	timeout  time.Duration
	// onWaiting is Options.OnWaiting.
	onWaiting func(*Pending)
	log       *slog.Logger
	// protocols is Options.SupportedProtocolVersions.
	protocols []string
	// fam is the Server made by New and its siblings (WithView): what
	// they share, and who closes whom (family.go).
	fam *family

	syncCh      chan struct{} // wakes the sync worker; holds at most one wake-up
	stopSync    context.CancelFunc
	syncDone    chan struct{}
	unsubscribe func()
	closeOnce   sync.Once
	stopOnce    sync.Once
	closeErr    error
	// handling counts the requests whose handler runs (recoverMiddleware):
	// Close waits for them, and so do tests before they remove the home.
	handling inflight

	notices listNotices // which list_changed notifications go out
	// The rest is shared by the siblings of a family: the log level each
	// legacy session set (relay.go), the sign-ins asked through clients
	// (signin.go) and those asked as input requests (signin_input.go).
	levels      *logLevels
	outbox      *outboxes // each session's relayed notifications (outbox.go)
	signIns     *signInAsks
	signInFlows *signInFlows
	// flights are the calls whose legacy server waits for a 2026-07-28
	// client's answers (era.go).
	flights *flights

	// syncSem serializes Sync; a caller waits for it only as long as its
	// context lets it. syncMu guards the maps below, which only the
	// holder of syncSem changes.
	syncSem   chan struct{}
	catchUp   time.Duration // catchUpWait; shorter in tests
	syncMu    sync.Mutex
	tools     map[string]string
	offered   *offeredTools // what full mode would list (lazy.go)
	prompts   map[string]string
	resources map[string]string
	templates map[string]string
	// resPlugins is the plugin of each resource URI and template of the
	// catalog (applyResources); subs are the resource subscriptions of
	// this Server's sessions that berth holds in the pool
	// (relay_completion.go). subMu guards subs.
	resPlugins map[string]string
	subMu      sync.Mutex
	subs       map[string]map[*mcp.ServerSession]bool
	// viewCache is the view as last resolved from the state (view.go).
	viewCache viewCache
	// tel is the telemetry, nil when off (telemetry.go).
	tel *mcpotel.Instruments
}

// New builds the MCP server of a pool. Its approval queue, audit log and
// "allow always" policy changes live in the pool's store (Pool.Store). It
// subscribes to the pool's changes (Pool.OnChange) and keeps its catalog in
// step from one background worker; the catalog is also assembled afresh
// at every list request. Close the Server before the pool.
func New(p *pool.Pool, opts *Options) *Server {
	if opts == nil {
		opts = &Options{}
	}
	st := p.Store()
	s := &Server{
		pool:      p,
		store:     st,
		queue:     NewQueue(st.Paths().Approvals()),
		audit:     NewAudit(st.Paths().Audit()),
		timeout:   opts.ApprovalTimeout,
		onWaiting: opts.OnWaiting,
		hints:     opts.Hints,
		log:       opts.Logger,
		tools:     map[string]string{},
		prompts:   map[string]string{},
		resources: map[string]string{},
		templates: map[string]string{},
		syncSem:   make(chan struct{}, 1),
		catchUp:   catchUpWait,
	}
	if s.timeout <= 0 {
		s.timeout = DefaultApprovalTimeout
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if opts.View != nil {
		s.view = *opts.View
		s.view.Always = slices.Clone(opts.View.Always)
	}
	s.states = newStateBox(s.timeout + time.Minute)
	s.pending = &pendingLimits{maxSession: opts.MaxPendingPerSession, maxTotal: opts.MaxPending, hints: opts.Hints}
	if s.pending.maxSession <= 0 {
		s.pending.maxSession = DefaultMaxPendingPerSession
	}
	if s.pending.maxTotal <= 0 {
		s.pending.maxTotal = DefaultMaxPending
	}
	s.requests, s.levels, s.signIns, s.signInFlows = &liveRequests{}, &logLevels{}, &signInAsks{}, &signInFlows{}
	s.outbox = newOutboxes(s.log)
	s.flights = &flights{}
	s.protocols = opts.SupportedProtocolVersions
	s.tel = newInstruments(opts, s.log)
	s.fam = &family{root: s, profiles: map[string]*Server{}}
	if opts.RecordSessions {
		s.fam.registry = newRegistry(st.Paths().Serving(), p.WorkspaceDir(), s.log)
	}
	s.start()
	p.SetLogSink(s.relayLog)
	p.SetResourceUpdatedSink(s.relayUpdated)
	return s
}

// start makes the Server's own go-sdk server and starts its background
// work: the sync worker, the wait for the pool's first start, the
// subscription to the pool's changes.
func (s *Server) start() {
	p := s.pool
	s.ms = mcp.NewServer(&mcp.Implementation{Name: "berth", Title: "berth", Version: bundle.BerthVersion}, &mcp.ServerOptions{
		Instructions: "Tools of the berth workspace " + p.WorkspaceDir() + ". Calls run only when the operator's policy allows them or a human approves them.",
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true},
			//lint:ignore SA1019 legacy sessions still get MCP logging during the SEP-2577 deprecation window
			Logging: &mcp.LoggingCapabilities{},
		},
		SupportedProtocolVersions: s.protocols,
		Logger:                    s.log,
		// Relayed to the plugin servers (relay_completion.go).
		CompletionHandler:  s.complete,
		SubscribeHandler:   s.subscribeResource,
		UnsubscribeHandler: s.unsubscribeResource,
	})
	s.ms.AddReceivingMiddleware(s.recoverMiddleware, s.sessionsMiddleware, s.capsMiddleware, s.levelMiddleware, s.boundaryMiddleware)
	s.instrumentSending() // innermost: what sendingMiddleware drops is not traced
	s.ms.AddSendingMiddleware(s.sendingMiddleware)
	s.instrument()
	ctx, cancel := context.WithCancel(context.Background())
	s.syncCh, s.stopSync, s.syncDone = make(chan struct{}, 1), cancel, make(chan struct{})
	go s.syncWorker(ctx)
	go s.waitFirstStart(ctx)
	s.unsubscribe = p.OnChange(s.syncSoon)
}

// Close stops the server's background work (the pool subscription and
// the sync worker, waiting for a sync in progress) and closes the audit
// log once the requests in flight have ended, waiting for them up to
// CloseWait. It does not close the pool or end sessions; cancel the
// contexts of ServeStdio and ServeHTTP for that, first, so that the calls
// waiting for a human are withdrawn (and audited) before the log closes. A
// call that ends after Close is not audited: its append fails with
// ErrAuditClosed, and the failure is logged. It is safe to call more than
// once.
//
// Closing the Server that New made closes its siblings (WithView) too,
// all at once, before the audit log they share; closing a sibling stops
// its own background work only.
func (s *Server) Close() error {
	if s.fam == nil || s.fam.root != s {
		s.stopWork()
		return nil
	}
	s.closeOnce.Do(func() {
		sibs := s.fam.close()
		s.pool.SetLogSink(nil)
		s.pool.SetResourceUpdatedSink(nil)
		var wg sync.WaitGroup
		for _, c := range sibs {
			wg.Go(c.stopWork)
		}
		s.stopWork()
		wg.Wait()
		s.fam.registry.close()
		s.fam.closeWatch()
		s.closeErr = s.audit.Close()
	})
	return s.closeErr
}

// stopWork stops one Server's own background work and waits up to
// CloseWait for its requests in flight. It is safe to call more than once.
func (s *Server) stopWork() {
	s.stopOnce.Do(func() {
		s.unsubscribe()
		s.stopSync()
		<-s.syncDone
		if n := s.handling.wait(CloseWait); n > 0 {
			s.log.Warn("closing the audit log while requests still run; what they decide is not audited", "requests", n, "profile", s.view.Profile)
		}
	})
}

// CloseWait bounds how long Server.Close waits for the requests in flight
// to end before it closes the audit log.
const CloseWait = 5 * time.Second

// inflight counts requests in flight and lets Close wait until none is.
type inflight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n falls to 0
}

func (f *inflight) add() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		f.idle = make(chan struct{})
	}
	f.n++
}

func (f *inflight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n--; f.n == 0 {
		close(f.idle)
	}
}

func (f *inflight) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// wait waits up to d until no request is in flight, and returns how many
// still are.
func (f *inflight) wait(d time.Duration) int {
	f.mu.Lock()
	idle := f.idle
	n := f.n
	f.mu.Unlock()
	if n == 0 {
		return 0
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
	return f.count()
}

// MCPServer is the underlying go-sdk server.
func (s *Server) MCPServer() *mcp.Server { return s.ms }

// recoverMiddleware turns a panic in any handler into an error for that
// request only, logged with its stack.
func (s *Server) recoverMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		s.handling.add()
		defer s.handling.done()
		defer func() {
			if r := recover(); r != nil {
				s.log.Error("panic in a handler; only this request fails", "method", method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				res, err = nil, fmt.Errorf("berth: internal error while handling %s (logged on berth's stderr)", method)
			}
		}()
		return next(ctx, method, req)
	}
}

// boundaryMiddleware re-assembles the catalog from the pool before every
// list: the pool re-checks the state generation and drift there.
func (s *Server) boundaryMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			// A client may call a tool it knows from an earlier session
			// without listing first: assemble the catalog once.
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && !s.hasTool(p.Name) {
				s.refresh(ctx, method)
				if cr, ok := req.(*mcp.CallToolRequest); ok && !s.hasTool(p.Name) {
					if res, how, err := s.unlistedCall(ctx, cr, p.Name, ""); how == unlistedAnswered {
						if err != nil {
							return nil, err
						}
						return res, nil
					}
				}
			}
		case "prompts/get":
			// As for tools/call: a prompt asked for before any list.
			if p, ok := req.GetParams().(*mcp.GetPromptParams); ok && !s.hasPrompt(p.Name) {
				s.refresh(ctx, method)
				if !s.hasPrompt(p.Name) && s.promptInView(p.Name) {
					// Not offered: a denied prompt is refused (and
					// audited) with the reason; an unknown one stays
					// go-sdk's protocol error.
					if res, err := s.getPrompt(ctx, &mcp.GetPromptRequest{Session: sessionOf(req), Params: p, Extra: req.GetExtra()}); !errors.Is(err, pool.ErrNotFound) {
						if err != nil {
							return nil, err
						}
						return res, nil
					}
				}
			}
		case "resources/read":
			if p, ok := req.GetParams().(*mcp.ReadResourceParams); ok && !s.hasResource(p.URI) {
				s.refresh(ctx, method)
				if !s.hasResource(p.URI) {
					if res, err := s.readResource(ctx, &mcp.ReadResourceRequest{Session: sessionOf(req), Params: p, Extra: req.GetExtra()}); !errors.Is(err, pool.ErrNotFound) {
						if err != nil {
							return nil, err
						}
						return res, nil
					}
				}
			}
		case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
			// Let the first start of every server settle, so a client that
			// lists right after connecting sees the whole catalog.
			s.refresh(ctx, method)
		}
		res, err := next(ctx, method, req)
		if err == nil {
			dropUpstreamIdentity(res)
		}
		return res, err
	}
}

// unlisted is what unlistedCall made of a call of a name the catalog does
// not list.
type unlisted int

const (
	// unlistedUnknown: nothing to say; the name is unknown to this view.
	unlistedUnknown unlisted = iota
	// unlistedAnswered: the result or error is the answer.
	unlistedAnswered
	// unlistedSignedIn: its server was signed in to; the call can go on.
	unlistedSignedIn
)

// unlistedCall answers a call of a name the catalog does not list (after
// a re-assembly), when it is a name of this view: if its plugin drifted,
// the policy denies it before any sign-in, or its server waits for a
// sign-in, it says so or signs in; anything else is unknown. A name
// outside the view (its profile's plugins and tool patterns), or any
// name while the view's profile is removed, is never signed in to nor
// run: unknown, or the removed profile's tool error. via is the
// meta-tool the call came through ("" for a direct call).
func (s *Server) unlistedCall(ctx context.Context, cr *mcp.CallToolRequest, name, via string) (*mcp.CallToolResult, unlisted, error) {
	v, verr := s.current()
	if verr != nil {
		return toolError(fmt.Sprintf("berth refused to run %s: %v", name, verr)), unlistedAnswered, nil
	}
	if err := s.removedErr(v); err != nil {
		return toolError(fmt.Sprintf("berth refused to run %s: %v", name, err)), unlistedAnswered, nil
	}
	if plugin, _, _, ok := pool.ParseName(name); !ok || !v.offersTool(plugin, name) {
		return nil, unlistedUnknown, nil
	}
	// Not in the catalog: if that is because its plugin drifted, say so
	// as a tool error; an unknown name stays unknown. The approver
	// refuses, so nothing can run from here.
	_, err := s.pool.Call(ctx, name, cr.Params.Arguments, refuseAll)
	if errors.Is(err, store.ErrDrift) {
		return toolError(fmt.Sprintf("berth refused to run %s: %v", name, err)), unlistedAnswered, nil
	}
	// The policy before any sign-in (signin_policy.go).
	var pe *SignInPolicyError
	if err = s.policyBeforeSignIn(pool.RequestTool, name, err); errors.As(err, &pe) {
		s.refusedBeforeSignIn(ctx, cr, pe, via)
		return toolError(fmt.Sprintf("berth refused to run %s: %v. Nothing was run.", name, pe)), unlistedAnswered, nil
	}
	// Its server did not start for want of a sign-in (signin.go): sign
	// in through the client if it can be asked, else say which command
	// signs it in.
	if err = s.signInToStart(ctx, cr, err); err == nil {
		return nil, unlistedSignedIn, nil
	}
	if _, ok := needsInputSignIn(err, cr); ok || strings.HasPrefix(cr.Params.RequestState, signInStatePrefix) {
		// A 2026-07-28 client: the tool handler asks with an input
		// request (signin_input.go), or runs the call after the sign-in.
		res, err := s.runTool(ctx, cr, name, via)
		switch {
		case err != nil:
			return nil, unlistedAnswered, err
		case res.InputRequests != nil && via == "":
			// Returned from the middleware, where go-sdk does not mark it.
			res, err = markInputRequired(res)
			return res, unlistedAnswered, err
		}
		return res, unlistedAnswered, nil
	}
	if msg, ok := needSignIn(err, cr.Session, cr.ClientCapabilities(), cr.ProtocolVersion(), clientName(cr)); ok {
		return toolError(fmt.Sprintf("berth could not run %s: %s", name, msg)), unlistedAnswered, nil
	}
	return nil, unlistedUnknown, nil
}

// refresh waits for the servers' first start and re-assembles the
// catalog, for at most s.catchUp in all: a request is then answered from
// the catalog as it is, never held by a server that is slow to start or
// to list (nor by another request's re-assembly that waits for one). A
// re-assembly cut short is left to the sync worker.
func (s *Server) refresh(ctx context.Context, method string) {
	wctx, cancel := context.WithTimeout(ctx, s.catchUp)
	defer cancel()
	if s.pool.WaitStarted(wctx) != nil {
		// This client sees the catalog before the first start settled:
		// what comes later is news to it.
		s.notices.baselined.Store(true)
	}
	if err := s.Sync(wctx); err != nil {
		if ctx.Err() == nil {
			s.syncSoon()
		}
		s.log.Warn("catalog boundary: answering from the catalog as it is", "method", method, "waited", s.catchUp.String(), "error", err)
	}
}

// dropUpstreamIdentity removes the plugin server's identity
// (_meta "io.modelcontextprotocol/serverInfo", set on 2026-07-28 results)
// from a result berth relays, so that go-sdk stamps berth's own: the
// client talks to berth, not to the server behind it.
func dropUpstreamIdentity(res mcp.Result) {
	var meta *mcp.Meta
	switch r := res.(type) {
	case *mcp.CallToolResult:
		if r != nil {
			meta = &r.Meta
		}
	case *mcp.GetPromptResult:
		if r != nil {
			meta = &r.Meta
		}
	case *mcp.ReadResourceResult:
		if r != nil {
			meta = &r.Meta
		}
	}
	if meta == nil {
		return
	}
	if _, ok := (*meta)[mcp.MetaKeyServerInfo]; !ok {
		return
	}
	// The result is the pool's fresh copy of the server's answer: edit it
	// in place.
	delete(*meta, mcp.MetaKeyServerInfo)
	if len(*meta) == 0 {
		*meta = nil
	}
}

// promptInView reports whether a prompt's name is of a plugin the view
// offers (a prompt outside it is unknown, whatever the policy says of it).
func (s *Server) promptInView(name string) bool {
	plugin, _, _, ok := pool.ParseName(name)
	return ok && s.viewRefusal(pool.RequestPrompt, plugin, name) == nil
}

func (s *Server) hasPrompt(name string) bool {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	_, ok := s.prompts[name]
	return ok
}

// hasResource reports whether uri is a registered resource or matches a
// registered template.
func (s *Server) hasResource(uri string) bool {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if _, ok := s.resources[uri]; ok {
		return true
	}
	for t := range s.templates {
		if tp, err := uritemplate.New(t); err == nil && tp.Regexp().MatchString(uri) {
			return true
		}
	}
	return false
}

// sessionOf is the server session of a request, if it has one.
func sessionOf(req mcp.Request) *mcp.ServerSession {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	return ss
}

func (s *Server) hasTool(name string) bool {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	_, ok := s.tools[name]
	return ok
}

// syncSoon asks the sync worker to re-assemble the catalog; a burst of
// requests is one sync. It never blocks.
func (s *Server) syncSoon() {
	select {
	case s.syncCh <- struct{}{}:
	default:
	}
}

// syncWorker runs the syncs that syncSoon asks for, one at a time, until
// ctx ends.
func (s *Server) syncWorker(ctx context.Context) {
	defer close(s.syncDone)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.syncCh:
		}
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := s.Sync(sctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			s.log.Warn("catalog sync", "error", err)
		}
	}
}

// Sync makes the server's catalog the pool's, as the view offers it
// (view.go): tools (deny never listed; in lazy mode the meta-tools and
// the Always tools instead of every tool), prompts, resources and
// templates, those of the plugins outside the view's profile left out.
// Registering and removing notifies every session (list_changed).
func (s *Server) Sync(ctx context.Context) error {
	select {
	case s.syncSem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("waiting for a re-assembly of the catalog in progress: %w", context.Cause(ctx))
	}
	defer func() { <-s.syncSem }()
	// A sync that starts after the first start settled completes the
	// first catalog (listNotices).
	if s.notices.started.Load() {
		defer s.notices.baselined.Store(true)
	}
	// The view's profile, read afresh: what this boundary offers.
	v, err := s.current()
	if err != nil {
		return err
	}
	tools, err := s.pool.Tools(ctx)
	if err != nil {
		return err
	}
	s.applyTools(v, tools)
	prompts, err := s.pool.Prompts(ctx)
	if err != nil {
		return err
	}
	s.applyPrompts(v, prompts)
	resources, err := s.pool.Resources(ctx)
	if err != nil {
		return err
	}
	s.applyResources(v, resources)
	s.endStaleSubs(ctx)
	return nil
}

// applyTools, applyPrompts and applyResources register what the pool
// listed and the view offers, and remove the rest. The caller holds
// syncSem.
func (s *Server) applyTools(v *viewNow, tools []*pool.Tool) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	offered := make([]*pool.Tool, 0, len(tools))
	for _, t := range tools {
		if v.offersTool(t.Plugin, t.Name) {
			offered = append(offered, t)
		}
	}
	// What full mode would list is what berth_find_tools searches and
	// berth_call_tool calls (lazy.go).
	offered = s.setOffered(offered)
	want := map[string]string{}
	if v.lazy && !v.removed {
		for _, m := range MetaTools() {
			want[m.Name] = metaHash
			if s.tools[m.Name] == metaHash {
				continue
			}
			s.notices.changed(listTools)
			s.ms.AddTool(m, s.metaHandler(m.Name))
			s.tools[m.Name] = metaHash
		}
		always := offered[:0:0]
		for _, t := range offered {
			if v.listsAlways(t.Name) {
				always = append(always, t)
			}
		}
		offered = always
	}
	for _, t := range offered {
		h := t.Hash + "|" + string(t.Policy.Action) + "|" + t.UI // a withheld UI template's link is dropped (pool/apps.go)
		want[t.Name] = h
		if s.tools[t.Name] == h {
			continue
		}
		s.notices.changed(listTools)
		if err := s.addTool(t); err != nil {
			// setOffered tried the same definition and warned of any it
			// refused: this one passed there.
			s.log.Error("go-sdk refused a tool definition it accepted before", "tool", t.Name, "error", err)
			delete(want, t.Name)
			continue
		}
		s.tools[t.Name] = h
	}
	if g := gone(s.tools, want); len(g) > 0 {
		s.notices.changed(listTools)
		s.ms.RemoveTools(g...)
	}
}

func (s *Server) applyPrompts(v *viewNow, prompts []*pool.Prompt) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	want := map[string]string{}
	for _, p := range prompts {
		if !v.offersPlugin(p.Plugin) {
			continue
		}
		h := jsonHash(p.Definition)
		want[p.Name] = h
		if s.prompts[p.Name] != h {
			s.notices.changed(listPrompts)
			def := *p.Definition
			s.ms.AddPrompt(&def, s.getPrompt)
			s.prompts[p.Name] = h
		}
	}
	if g := gone(s.prompts, want); len(g) > 0 {
		s.notices.changed(listPrompts)
		s.ms.RemovePrompts(g...)
	}
}

func (s *Server) applyResources(v *viewNow, resources []*pool.Resource) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	wantR, wantT := map[string]string{}, map[string]string{}
	read := s.readResource
	s.resPlugins = map[string]string{}
	for _, r := range resources {
		if !v.offersPlugin(r.Plugin) {
			continue
		}
		switch {
		case r.Resource != nil:
			s.resPlugins[r.Resource.URI] = r.Plugin
			h := jsonHash(r.Resource)
			wantR[r.Resource.URI] = h
			if s.resources[r.Resource.URI] != h {
				s.notices.changed(listResources)
				if err := safely(func() { res := *r.Resource; s.ms.AddResource(&res, read) }); err != nil {
					s.log.Warn("not offering a resource", "uri", r.Resource.URI, "error", err)
					delete(wantR, r.Resource.URI)
					continue
				}
				s.resources[r.Resource.URI] = h
			}
		case r.Template != nil:
			s.resPlugins[r.Template.URITemplate] = r.Plugin
			h := jsonHash(r.Template)
			wantT[r.Template.URITemplate] = h
			if s.templates[r.Template.URITemplate] != h {
				s.notices.changed(listResources)
				if err := safely(func() { tpl := *r.Template; s.ms.AddResourceTemplate(&tpl, read) }); err != nil {
					s.log.Warn("not offering a resource template", "template", r.Template.URITemplate, "error", err)
					delete(wantT, r.Template.URITemplate)
					continue
				}
				s.templates[r.Template.URITemplate] = h
			}
		}
	}
	if g := gone(s.resources, wantR); len(g) > 0 {
		s.notices.changed(listResources)
		s.ms.RemoveResources(g...)
	}
	if g := gone(s.templates, wantT); len(g) > 0 {
		s.notices.changed(listResources)
		s.ms.RemoveResourceTemplates(g...)
	}
}

// gone returns the keys of have that want lacks, and drops them from have.
func gone(have, want map[string]string) []string {
	var out []string
	for k := range have {
		if _, ok := want[k]; !ok {
			out = append(out, k)
			delete(have, k)
		}
	}
	return out
}

func jsonHash(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// safely runs f, turning a panic (go-sdk panics on definitions it cannot
// serve) into an error.
func safely(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}

// addTool registers one tool of the pool on the Server's go-sdk server
// (listable).
func (s *Server) addTool(t *pool.Tool) error {
	_, err := listable(s.ms, t, s.toolHandler(t.Name))
	return err
}

// listable is the one check of whether berth can list a tool: its
// definition as berth lists it (exportedDef), added to srv with h (go-sdk
// panics on a definition it cannot serve: an error here). setOffered and
// ToolCost try it on a scratch server, addTool on the Server's own, so
// what is measured, searched and listed cannot drift apart.
func listable(srv *mcp.Server, t *pool.Tool, h mcp.ToolHandler) (*mcp.Tool, error) {
	def, err := exportedDef(t)
	if err != nil {
		return nil, err
	}
	if err := safely(func() { srv.AddTool(def, h) }); err != nil {
		return nil, err
	}
	return def, nil
}

// exportedDef is a tool's definition as berth lists it (and
// berth_find_tools returns it): the upstream definition, the description
// capped; an error when the input schema is not a JSON object schema.
func exportedDef(t *pool.Tool) (*mcp.Tool, error) {
	def := *t.Definition
	if len(def.Description) > maxDescription {
		cut := maxDescription
		for cut > 0 && !utf8Start(def.Description[cut]) {
			cut--
		}
		def.Description = def.Description[:cut] + "…"
	}
	if m, ok := def.InputSchema.(map[string]any); !ok || m["type"] != "object" {
		if raw, err := json.Marshal(def.InputSchema); err != nil || !isObjectSchema(raw) {
			return nil, fmt.Errorf("its input schema is not a JSON object schema")
		}
	}
	return &def, nil
}

func isObjectSchema(raw json.RawMessage) bool {
	var m map[string]any
	return json.Unmarshal(raw, &m) == nil && m["type"] == "object"
}

// toolHandler runs one exported tool: the arguments' canonical encoding
// (ambiguous arguments are refused before anything else), approval, then
// the pool's dispatch with its boundaries, of exactly the encoding that
// was approved. Failures come back as tool errors that say what happened
// and what to run.
func (s *Server) toolHandler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return s.runTool(ctx, req, name, "")
	}
}

// runTool is one call of the tool exported as name, made directly
// (via "") or through the meta-tool via (berth_call_tool, whose req
// carries the real name and arguments: lazy.go). Both are the same call:
// the view, the arguments' canonical encoding, policy and approval, the
// pool's boundaries, sign-in, relay and audit; the audit entry names the
// meta-tool in Via.
func (s *Server) runTool(ctx context.Context, req *mcp.CallToolRequest, name, via string) (res *mcp.CallToolResult, err error) {
	var header http.Header
	if req.Extra != nil {
		header = req.Extra.Header
	}
	ctx, stop := s.requests.bind(ctx, header)
	defer stop()
	ctx, stopLife := bindLife(ctx)
	defer stopLife()
	c := &call{s: s, req: req, tool: name, origin: originOf(ctx)}
	defer s.traceCall(ctx, c)
	c.entry = AuditEntry{Tool: name, Client: clientName(req), Transport: c.origin.Transport, Authenticated: c.origin.Authenticated, Via: via}
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("panic in a tool call; only this call fails", "tool", name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			res, err = toolError(fmt.Sprintf("berth: internal error while calling %s (logged on berth's stderr); nothing else was affected", name)), nil
			c.entry.Outcome, c.entry.Reason = OutcomeFailed, "panic"
			c.writeAudit()
		}
	}()
	// The view as the state has it now (a registered tool its profile
	// no longer offers is unknown, as at the next tools/list); the pool's
	// routing is checked again before anyone is asked (call.Approve).
	if plugin, _, _, ok := pool.ParseName(name); ok {
		if verr := s.viewRefusal(pool.RequestTool, plugin, name); verr != nil {
			var nv *notInViewError
			switch {
			case errors.As(verr, &nv) && via == "":
				return nil, unknownTool(name)
			case errors.As(verr, &nv):
				return toolError(notOffered(name)), nil
			}
			return toolError(fmt.Sprintf("berth refused to run %s: %v. Nothing was run.", name, verr)), nil
		}
	}
	args, decoded, aerr := canonicalArguments(req.Params.Arguments)
	if aerr != nil {
		c.entry.Arguments = "refused"
		c.entry.Decision, c.entry.DecidedBy, c.entry.Outcome, c.entry.Reason = VerdictDeny, ByBerth, OutcomeRefused, aerr.Error()
		c.writeAudit()
		s.logRefused("tools/call", aerr)
		return nil, refusedParams("tools/call", aerr)
	}
	sum := sha256.Sum256(args)
	c.entry.ArgumentsDigest = "sha256:" + hex.EncodeToString(sum[:])
	c.entry.Arguments = shapeOf(decoded)
	signedIn := false
	if strings.HasPrefix(req.Params.RequestState, signInStatePrefix) {
		// The retry of a call that waited for a sign-in (signin_input.go).
		signedIn = true
		if serr := c.signInRetry(ctx, name, args); serr != nil {
			defer c.writeAudit()
			c.entry.Outcome = OutcomeFailed
			if !c.signInFailed(serr) {
				c.entry.Reason = shortErr(serr)
			}
			return toolError(fmt.Sprintf("berth could not run %s: %s", name, c.entry.Reason)), nil
		}
	}
	c.relay, c.relayReq = s.relayFor(ctx, req.Session, req.Params.Meta, req.ClientCapabilities(), req.ProtocolVersion(), req.Params.InputResponses, req.Params.RequestState, c.entry)
	defer c.relay.flush()
	sctx := s.withSignIn(pool.WithRelay(ctx, c.relayReq), req.Session, req.ClientCapabilities(), req.ProtocolVersion(), c.entry)
	tc := c.taskCall(ctx)
	if tc != nil {
		c.task = tc
		sctx = pool.WithTaskCall(sctx, tc)
	}
	if c.flies(name) {
		// A legacy server's requests reach this 2026-07-28 client as
		// input requests (era.go).
		var now *mcp.CallToolResult
		if res, now, err = c.runFlight(sctx, name, args); now != nil {
			return now, nil
		}
	} else {
		res, err = s.pool.Call(sctx, name, args, c)
	}
	s.signInDone(sctx, req.Session, err)
	if err != nil && c.entry.Decision == "" {
		// Its server is down for want of a sign-in (nothing was
		// decided, nothing ran): unless the policy denies the name
		// (signin_policy.go), sign in through the client if it can
		// be asked, and call once more.
		if err = s.policyBeforeSignIn(pool.RequestTool, name, err); errors.Is(err, pool.ErrDenied) {
			c.entry.Policy = policyOf(err)
		} else if serr := s.signInToStart(ctx, req, err); serr == nil {
			res, err = s.pool.Call(sctx, name, args, c)
		} else {
			err = serr
		}
	}
	if ne, ok := needsInputSignIn(err, req); ok && !signedIn {
		// A 2026-07-28 client that can open a link: the sign-in
		// goes to it as an input request (once per call: a server
		// that still asks after the sign-in gets the error).
		ir, ierr := c.signInInputRequest(ctx, ne, name, args)
		switch {
		case ierr != nil:
			err = ierr
		case ir != nil:
			return ir, nil
		default: // signed in meanwhile: on the approval just given
			c.preApproved = c.approved
			res, err = s.pool.Call(sctx, name, args, c)
		}
	}
	if err == nil && tc != nil && tc.Created() != nil {
		// The plugin server made a task of it (tasks.go).
		defer c.writeAudit()
		c.entry.Outcome, c.entry.Reason = OutcomeRan, "task created"
		return taskCreated(tc.Created()), nil
	}
	if err == nil && res.InputRequests != nil && !c.relay.modern {
		// A legacy client is asked, round after round (era.go).
		res, err = c.legacyRounds(sctx, name, args, res)
	}
	if err == nil && res.InputRequests != nil {
		return c.relayInputRequests(res), nil
	}
	if c.inputRequired != nil {
		return c.inputRequired, nil
	}
	defer c.writeAudit()
	switch {
	case c.withdrawn:
		c.entry.Outcome = OutcomeWithdrawn
		return toolError(fmt.Sprintf("berth did not run %s: the call was %s. Nothing was run.", name, c.denied)), nil
	case err == nil && res.IsError:
		c.entry.Outcome = OutcomeToolError
		return res, nil
	case err == nil:
		c.entry.Outcome = OutcomeRan
		return res, nil
	case errors.Is(err, pool.ErrDenied):
		c.entry.Outcome = OutcomeRefused
		if c.entry.Decision == "" {
			c.entry.Decision, c.entry.DecidedBy = VerdictDeny, ByPolicy
		}
		return toolError(refusal(name, c.reason(err))), nil
	case errors.Is(err, store.ErrDrift):
		c.entry.Outcome, c.entry.Reason = OutcomeRefused, "drift"
		return toolError(fmt.Sprintf("berth refused to run %s: %v", name, err)), nil
	case c.viewRefused != nil:
		// The view changed while the call was on its way: refused
		// before anyone was asked, nothing ran.
		c.entry.Decision, c.entry.DecidedBy, c.entry.Outcome, c.entry.Reason = VerdictDeny, ByBerth, OutcomeRefused, c.viewRefused.Error()
		return toolError(fmt.Sprintf("berth refused to run %s: %v. Nothing was run.", name, c.viewRefused)), nil
	case c.signInFailed(err):
		c.entry.Outcome = OutcomeFailed
		return toolError(fmt.Sprintf("berth could not run %s: %s", name, c.entry.Reason)), nil
	case c.relay != nil && c.relay.modern && upstreamRPCError(name, err) != nil:
		// The plugin server's own answer, about this client's request.
		c.entry.Outcome, c.entry.Reason = OutcomeFailed, "error"
		return nil, upstreamRPCError(name, err)
	default:
		c.entry.Outcome, c.entry.Reason = OutcomeFailed, "error"
		return toolError(fmt.Sprintf("berth could not run %s: %v", name, err)), nil
	}
}

// refuseAll is the approver of calls that must not run.
var refuseAll = pool.ApproverFunc(func(context.Context, *pool.ApprovalRequest) (pool.Decision, error) {
	return pool.Decision{By: "berth", Reason: "not in the catalog"}, nil
})

func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// lineSpace turns newlines and tabs into spaces (a client's name is
// shown on one line).
func lineSpace(r rune) rune {
	if r == '\n' || r == '\t' {
		return ' '
	}
	return r
}

// clientName is how approvals and the audit log name the client: what it
// says it is, made printable and cut to a line.
func clientName(req *mcp.CallToolRequest) string {
	return printableClient(req.ClientInfo())
}

// printableClient is a client's name and version, made printable and cut
// to a line; "unknown client" when it gave none.
func printableClient(ci *mcp.Implementation) string {
	if ci == nil {
		return "unknown client"
	}
	name := ci.Name
	if ci.Version != "" {
		name += " " + ci.Version
	}
	name = review.PrintableLines(strings.Map(lineSpace, name))
	if len(name) > maxClientName {
		cut := maxClientName
		for cut > 0 && !utf8Start(name[cut]) {
			cut--
		}
		name = name[:cut] + "…"
	}
	return name
}

const maxClientName = 128
