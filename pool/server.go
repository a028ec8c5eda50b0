package pool

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/runtimefetch"
	"github.com/berth-mcp/berth/fetched"
	"github.com/berth-mcp/berth/internal/stdioframe"
	"github.com/berth-mcp/berth/sandbox"
	"github.com/berth-mcp/berth/signin"
	"github.com/berth-mcp/berth/store"
)

// State is a server's state in a pool.
type State string

// Server states.
const (
	// StateStarting: a start is in progress (spawn or connect, handshake,
	// first tools/list).
	StateStarting State = "starting"
	// StateRunning: connected; its tools are in the catalog.
	StateRunning State = "running"
	// StateFailed: the last start failed or the server died. Unless the
	// status says it gave up, a restart is scheduled.
	StateFailed State = "failed"
	// StateDrifted: the plugin's staged snapshot no longer matches what was
	// reviewed; its children were killed and nothing of it runs.
	StateDrifted State = "drifted"
	// StateChanged: connected, but some tools differ from the pinned
	// surface and are withheld until `berth accept`.
	StateChanged State = "changed"
	// StateStopped: disabled, revoked, replaced by another version, or the
	// pool was closed.
	StateStopped State = "stopped"
)

// MaxRestarts is how many restarts in a row the pool attempts before it
// leaves a server failed. A successful call resets the count.
const MaxRestarts = 5

var errCallTimeout = errors.New("call timeout")

// conn is one connection to a server: a process and its MCP session, a
// remote MCP session, or a native tool provider's client. Its context ends
// when the connection dies or the server is stopped; the cause says why.
type conn struct {
	seq      uint64
	ctx      context.Context
	cancel   context.CancelCauseFunc
	sess     session            // tools: list and call
	cs       *mcp.ClientSession // MCP servers only: prompts and resources
	proc     *process           // stdio only
	guard    *guard             // remote only
	native   *nativeSession     // native tool providers only
	started  time.Time
	protocol string

	toolsDirty     atomic.Bool
	promptsDirty   atomic.Bool
	resourcesDirty atomic.Bool

	relays relaySet // the clients' requests open on it (relay.go)
	srv    *server  // whose connection it is (its log messages are relayed as that server's)

	wire  *wireConn // the connection as berth reads it, when wrapped (wire.go)
	tasks connTasks // the task surface on it, stdio and Streamable HTTP (tasks.go, tasks_http.go)
}

// stopCause is why a server was stopped on purpose.
type stopCause struct {
	state State
	hard  bool
	err   error
}

func (c *stopCause) Error() string { return c.err.Error() }
func (c *stopCause) Unwrap() error { return c.err }

// server supervises one MCP server or native tool provider of a plugin:
// it starts it, watches it, restarts it with backoff, and stops it. Its
// supervisor goroutine owns the process; everything else reads its state
// under mu. The two kinds differ only in how a connection is made
// (connectMCP, connectNative) and spoken to (session).
type server struct {
	p        *Pool
	pl       *plugin
	name     string // the manifest's key under mcpServers or nativeTools
	id       string
	pinKey   string             // its key in store.Enablement.Surfaces
	spec     *bundle.Server     // MCP servers; nil for a native tool provider
	native   *bundle.NativeTool // native tool providers; nil for MCP servers
	kind     Transport
	startup  time.Duration
	callTime time.Duration
	out      *output

	ctx     context.Context // ends when the server is stopped for good
	cancel  context.CancelCauseFunc
	done    chan struct{} // closed when the supervisor has exited and the children are gone
	settled chan struct{} // closed when the first start attempt is over

	listMu sync.Mutex // serializes re-listing; never held with mu

	mu        sync.Mutex
	state     State
	lastErr   error
	conn      *conn
	seq       uint64
	legacy    bool // pin 2025-11-25 (the server died on server/discover)
	restarts  int
	inRow     int
	gaveUp    bool
	nextStart time.Time
	notify    chan struct{} // closed and replaced at every change of the fields above
	kick      chan struct{} // wakes a server waiting for a sign-in (kickSignIn)
	tools     []*mcp.Tool   // live, after the manifest filter
	hashes    map[string]string
	pinned    map[string]string // nil until the surface is recorded
	changes   []ToolChange
	ui        uiSurface // MCP Apps templates (apps.go)
	prompts   []*mcp.Prompt
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	listedAt  struct{ prompts, resources bool }
	sources   []SourceStatus // as the last start resolved them
	// enforcement is the confinement of the last start (nil before one).
	enforcement *sandbox.Enforcement
	// refused is why berth refused the last start, "" when it did not.
	refused string
}

// newServer sets up the supervisor of an MCP server; pinned is its
// surface from the state, if recorded.
func newServer(p *Pool, pl *plugin, name string, spec *bundle.Server, pinned *store.Surface) *server {
	s := &server{p: p, pl: pl, name: name, id: ServerID(pl.name, name), pinKey: name, spec: spec, kind: TransportStdio}
	s.startup, s.callTime = spec.ParseTimeouts()
	if spec.Remote != nil {
		s.kind = Transport(spec.Remote.Transport)
	}
	return s.init(pinned)
}

// newNativeServer sets up the supervisor of a native tool provider. The
// manifest gives it no timeouts: it has the defaults of a server.
func newNativeServer(p *Pool, pl *plugin, name string, nt *bundle.NativeTool, pinned *store.Surface) *server {
	s := &server{p: p, pl: pl, name: name, id: NativeProviderID(pl.name, name), pinKey: NativeSurfaceKey(name), native: nt, kind: TransportNative,
		startup: bundle.DefaultStartupTimeout, callTime: bundle.DefaultCallTimeout}
	return s.init(pinned)
}

func (s *server) init(pinned *store.Surface) *server {
	s.state = StateStarting
	s.done, s.settled, s.notify = make(chan struct{}), make(chan struct{}), make(chan struct{})
	s.kick = make(chan struct{}, 1)
	if pinned != nil {
		s.pinned, s.ui.pinned = pinned.Tools, pinned.UI
	}
	s.out = newOutput(s.p.paths.Log(s.id))
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	return s
}

// noun names what the server is, for messages: "server" or "native tool
// provider".
func (s *server) noun() string {
	if s.native != nil {
		return "native tool provider"
	}
	return "server"
}

// exportName is the name a client sees for one of the server's tools.
func (s *server) exportName(tool string) string { return ExportName(s.pl.name, s.name, tool) }

// changedLocked wakes everyone waiting for a change of the server.
func (s *server) changedLocked() {
	close(s.notify)
	s.notify = make(chan struct{})
}

// stop stops the server for good with a cause. hard kills the process
// group at once (drift); otherwise the shutdown is graceful.
func (s *server) stop(state State, cause error, hard bool) {
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		return
	}
	s.state, s.lastErr = state, cause
	s.changedLocked()
	s.mu.Unlock()
	s.cancel(&stopCause{state: state, hard: hard, err: cause})
	s.p.invalidate()
}

func (s *server) stopped() *stopCause {
	var sc *stopCause
	if errors.As(context.Cause(s.ctx), &sc) {
		return sc
	}
	return nil
}

// supervise is the server's goroutine: start, watch, restart with backoff.
func (s *server) supervise() {
	defer close(s.done)
	first := true
	settle := func() {
		if first {
			first = false
			close(s.settled)
		}
	}
	defer settle()
	for {
		c, err := s.connect()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			retry := s.fail(err)
			settle()
			if !retry || !s.sleep() {
				<-s.ctx.Done()
				return
			}
			continue
		}
		settle()
		<-c.ctx.Done()
		cause := context.Cause(c.ctx)
		s.shutdown(c)
		if s.ctx.Err() != nil {
			return
		}
		if s.fail(s.deathError(c, cause)) {
			if !s.sleep() {
				return
			}
			continue
		}
		<-s.ctx.Done()
		return
	}
}

// deathError describes why a running connection ended.
func (s *server) deathError(c *conn, cause error) error {
	if c.guard != nil && c.guard.refusal() != nil {
		return c.guard.refusal()
	}
	if c.proc != nil {
		select {
		case <-c.proc.exited:
			var ee *exitError
			if c.proc.killedByBerth() && !errors.As(cause, &ee) {
				// Alive when it was found dead (hung, or its connection
				// closed): the exit status is berth's own signal.
				return fmt.Errorf("%w; berth killed its process group", cause)
			}
			return &exitError{id: s.id, err: c.proc.waitErr, tail: s.out.tail()}
		default:
		}
	}
	if c.native != nil && !errors.Is(cause, errHung) && c.native.exited() {
		return &providerExitError{id: s.id, tail: s.out.tail()}
	}
	return cause
}

// fail records a failed start or a death and schedules a restart; it
// returns false when the server stays failed.
func (s *server) fail(err error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.p.invalidate()
	defer s.changedLocked()
	s.state, s.lastErr, s.conn = StateFailed, err, nil
	var ne *signin.NeedSignInError
	if errors.As(err, &ne) {
		// Not the server's fault and not for good: the next call (after
		// `berth login`) starts it again at once (kickSignIn), and the
		// store is looked at again now and then.
		s.nextStart = time.Now().Add(signInRecheck)
		s.out.event("needs a sign-in: %v", err)
		return true
	}
	var pe *permanentError
	var ge *guardError
	if errors.As(err, &pe) || errors.As(err, &ge) {
		s.gaveUp = true
		s.out.event("failed for good: %v", err)
		return false
	}
	if s.inRow >= MaxRestarts {
		s.gaveUp = true
		s.out.event("failed: %v; gave up after %d restarts in a row", err, s.inRow)
		return false
	}
	s.inRow++
	s.restarts++
	delay := s.p.backoff << (s.inRow - 1)
	s.nextStart = time.Now().Add(delay)
	s.out.event("failed: %v; restart %d of %d in %s", err, s.inRow, MaxRestarts, delay)
	return true
}

func (s *server) sleep() bool {
	s.mu.Lock()
	d := time.Until(s.nextStart)
	s.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if s.stillNoSignIn() {
				// Nothing to try with: look again later, without a
				// request to the server.
				t.Reset(signInRecheck)
				continue
			}
			return true
		case <-s.kick:
			return true
		case <-s.ctx.Done():
			return false
		}
	}
}

// closedError ends a connection whose MCP session ended.
type closedError struct {
	id  string
	err error
}

func (e *closedError) Error() string {
	return fmt.Sprintf("the connection to %s closed: %v", e.id, e.err)
}
func (e *closedError) Unwrap() error { return e.err }

var errHung = errors.New("no reply within the call timeout, so berth treats the server as hung")

// connect starts the server: drift check, spawn, dial or launch,
// handshake, first tools/list, surface pinning, all within the startup
// timeout.
func (s *server) connect() (*conn, error) {
	for attempt := 0; ; attempt++ {
		c, err, retryLegacy := s.connectOnce()
		if err == nil || !retryLegacy || attempt > 0 {
			return c, err
		}
		s.mu.Lock()
		s.legacy = true
		s.mu.Unlock()
		s.out.event("the server exited during the handshake; retrying with the 2025-11-25 handshake (no server/discover probe)")
	}
}

func (s *server) connectOnce() (*conn, error, bool) {
	eraLegacy, eraErr := s.p.awaitEra(s.ctx)
	if eraErr != nil {
		return nil, eraErr, false
	}
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		return nil, context.Cause(s.ctx), false
	}
	s.seq++
	c := &conn{seq: s.seq, started: time.Now(), srv: s}
	s.state = StateStarting
	legacy := s.legacy || eraLegacy
	s.changedLocked()
	s.mu.Unlock()
	s.p.invalidate()

	if err := s.pl.checkDrift(s.ctx); err != nil {
		return nil, err, false
	}
	c.ctx, c.cancel = context.WithCancelCause(s.ctx)
	timer := time.AfterFunc(s.startup, func() {
		if s.native != nil {
			c.cancel(fmt.Errorf("native tool provider %s did not start within the startup timeout of %s (launch, handshake and first ListTools)", s.id, s.startup))
			return
		}
		c.cancel(fmt.Errorf("server %s did not start within its startup timeout of %s (spawn, handshake and first tools/list); raise timeouts.startup in the manifest if it needs longer", s.id, s.startup))
	})
	defer timer.Stop()
	failed := func(err error) (*conn, error, bool) {
		if cerr := context.Cause(c.ctx); cerr != nil {
			err = cerr
		}
		if c.guard != nil && c.guard.refusal() != nil {
			err = c.guard.refusal()
		}
		exited := false
		if c.proc != nil {
			// The pipe may close a moment before the exit is reaped.
			exitWait := time.NewTimer(200 * time.Millisecond)
			defer exitWait.Stop()
			select {
			case <-c.proc.exited:
			case <-exitWait.C:
			}
			select {
			case <-c.proc.exited:
				exited = true
				// It exited by itself: its exit status and stderr say more
				// than the closed connection that may have been noticed
				// first.
				if cause := context.Cause(c.ctx); cause == nil || errors.As(cause, new(*exitError)) || errors.As(cause, new(*closedError)) {
					err = &exitError{id: s.id, err: c.proc.waitErr, tail: s.out.tail()}
				}
			default:
			}
		}
		c.cancel(err)
		s.shutdown(c)
		if sc := s.stopped(); sc != nil {
			err = sc
		}
		return nil, fmt.Errorf("starting %s: %w", s.id, err), exited && !legacy && s.ctx.Err() == nil
	}

	var tools []*mcp.Tool
	var err error
	if s.native != nil {
		tools, err = s.connectNative(c)
		var de *launchDriftError
		if errors.As(err, &de) {
			// The executable is not the reviewed one: the whole plugin
			// drifted, as if the boundary check had found it.
			s.pl.markDrifted(err)
		}
	} else {
		tools, err = s.connectMCP(c, legacy)
	}
	if err != nil {
		return failed(err)
	}
	if !timer.Stop() {
		return failed(errors.New("startup timeout"))
	}
	if err := s.applyTools(c.ctx, c, tools); err != nil {
		return failed(err)
	}
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		return failed(context.Cause(s.ctx))
	}
	s.conn = c
	s.lastErr = nil
	s.gaveUp = false
	s.prompts, s.resources, s.templates = nil, nil, nil
	s.listedAt.prompts, s.listedAt.resources = false, false
	s.setStateLocked()
	s.changedLocked()
	s.mu.Unlock()
	s.out.event("running (protocol %s, %d tools)", c.protocol, len(tools))
	s.p.invalidate()
	s.p.changed()
	return c, nil, false
}

// recordSources keeps what a start resolved, for Status.
func (s *server) recordSources(src *sources) {
	s.mu.Lock()
	s.sources = src.seen
	s.mu.Unlock()
}

// connectMCP spawns a stdio server or dials a remote one, makes the MCP
// handshake and lists the tools.
func (s *server) connectMCP(c *conn, legacy bool) ([]*mcp.Tool, error) {
	var transport mcp.Transport
	if s.spec.Stdio != nil {
		src := s.p.sources(c.ctx, s.pl)
		var sp *spawnSpec
		var err error
		if l := s.pl.lockOf(s.name); l != nil {
			sp, err = s.p.stagedSpawn(s.id, s.spec.Stdio, s.pl.dir, l, src)
		} else {
			sp, err = s.p.stdioSpawn(s.id, s.spec.Stdio, s.pl.dir, src)
		}
		s.recordSources(src)
		if err != nil {
			return nil, err
		}
		conf, err := s.confine(sp.path, envValue(sp.env, "PATH"), sp.fetchRead, sp.fetchWrite, sp.fetchedTrees, false)
		if err == nil && conf.policy != nil && sp.fetchWrite != nil {
			conf.done()
			fix := "re-trust the plugin (berth trust, install or upgrade) so that its package is staged at trust (docs/sandbox.md)"
			if f, ferr := runtimefetch.Read(s.spec.Stdio.Command, s.spec.Stdio.Args); ferr == nil && f != nil && !fetched.Stages(f) {
				fix = "berth does not stage " + f.Tool + " packages at trust"
			}
			err = permanent("server %s fetches its package when it starts (%s), and what a confined server writes is never executable; %s; or run it unconfined with berth config set sandbox-unconfined %s [%s]", s.id, sp.argv[0], fix, s.id, RuleSandboxFetchAtStart)
		}
		if err != nil {
			if sp.cleanup != nil {
				sp.cleanup()
			}
			s.setRefused(err)
			return nil, err
		}
		proc, err := startProcess(s.id, sp, s.out, conf)
		if err == nil || conf.policy == nil {
			s.setEnforcement(&conf.enf) // a refused launch has none: its error says why
		} else {
			s.setEnforcement(nil)
		}
		if err != nil {
			if errors.Is(err, sandbox.ErrNotEnforced) {
				err = permanent("server %s: %v [%s]; berth status shows what this host lacks; run it unconfined with berth config set sandbox-unconfined %s, or turn the requirement off with berth config set sandbox-require off", s.id, err, RuleSandboxRequired, s.id)
				s.setRefused(err)
				return nil, err
			}
			return nil, permanent("server %s: cannot start %s: %v", s.id, sp.path, err)
		}
		c.proc = proc
		s.out.event("started pid %d: %s", proc.pid(), sp.argv[0])
		go func() {
			<-proc.exited
			c.cancel(&exitError{id: s.id, err: proc.waitErr, tail: s.out.tail()})
		}()
		// berth's framing of the pipe (internal/stdioframe): go-sdk's
		// IOTransport, decoding each message once instead of three times.
		transport = &wireTransport{Transport: &stdioframe.Transport{Reader: proc.stdout, Writer: proc.stdin}, c: c}
	} else {
		src := s.p.sources(c.ctx, s.pl)
		g, err := newGuard(s.id, s.spec.Remote, src, s.p.opts.testNet)
		s.recordSources(src)
		if err != nil {
			return nil, err
		}
		c.guard = g
		if s.kind != TransportSSE {
			g.c = c // tasks are read off its HTTP messages (tasks_http.go)
		}
		if s.spec.Remote.Auth != nil && s.spec.Remote.Auth.OAuth != nil {
			h, err := s.p.signInHandler(s.pl.name, s.name, s.spec.Remote)
			if err != nil {
				return nil, err
			}
			g.oauth = h
		}
		s.out.event("connecting to %s (%s)", g.ep.Origin(), s.kind)
		transport = g.transport(s.kind)
		if s.kind == TransportSSE {
			// Legacy SSE has one stream for everything, read in order:
			// the wire reads it as it reads a stdio pipe (wire.go).
			transport = &wireTransport{Transport: transport, c: c}
		}
	}

	copts0 := &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.toolsDirty.Store(true)
			s.p.changed()
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			c.promptsDirty.Store(true)
			s.p.changed()
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			c.resourcesDirty.Store(true)
			s.p.changed()
		},
	}
	s.relayOptions(c, copts0)
	client := mcp.NewClient(&mcp.Implementation{Name: "berth", Version: bundle.BerthVersion}, copts0)
	//lint:ignore SA1019 plugin servers on legacy connections get the workspace as their root (docs/relay.md)
	client.AddRoots(s.p.workspaceRoot())
	client.AddReceivingMiddleware(s.relayMiddleware(c))
	s.instrumentClient(client)
	var copts *mcp.ClientSessionOptions
	if legacy {
		copts = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	}
	cs, err := client.Connect(c.ctx, transport, copts)
	if err != nil {
		return nil, err
	}
	c.cs = cs
	c.sess = mcpSession{cs}
	go s.applyLogLevel(c, s.p.currentLogLevel())
	if ir := cs.InitializeResult(); ir != nil {
		c.protocol = ir.ProtocolVersion
	}
	go func() {
		err := cs.Wait()
		if err == nil {
			err = errors.New("the session ended")
		}
		c.cancel(&closedError{id: s.id, err: err})
	}()
	// Always list right after connecting: some servers add tools just
	// after initialized.
	c.toolsDirty.Store(false)
	tools, err := c.sess.listTools(c.ctx)
	if err != nil {
		return nil, fmt.Errorf("listing its tools: %w", err)
	}
	return tools, nil
}

// setStateLocked sets running or changed for a live connection.
func (s *server) setStateLocked() {
	if s.conn == nil || s.ctx.Err() != nil {
		return
	}
	if len(s.changes) > 0 || len(s.ui.changes) > 0 {
		s.state = StateChanged
	} else {
		s.state = StateRunning
	}
}

// shutdown ends a connection and its process group.
func (s *server) shutdown(c *conn) {
	s.endTasks(c, s.tasksEndReason(c))
	// A connection that died (or hung) is killed at once; a stop is
	// graceful unless it is for drift.
	hard := c.ctx.Err() != nil
	c.cancel(errors.New("shutting down"))
	if sc := s.stopped(); sc != nil {
		hard = sc.hard
	}
	if c.proc != nil {
		c.proc.stop(s.p.grace, hard)
		if c.proc.cmd.ProcessState != nil {
			s.out.event("stopped: %s", c.proc.cmd.ProcessState)
		}
	}
	if c.sess != nil {
		c.sess.close(s.p.grace, hard)
	}
	if c.native != nil {
		s.out.event("stopped pid %d", c.native.c.Pid())
	}
	if c.guard != nil {
		c.guard.close()
	}
}

// applyTools filters a listing by the manifest, hashes it, pins the
// surface on the first listing after enable, and computes what changed.
func (s *server) applyTools(ctx context.Context, c *conn, tools []*mcp.Tool) error {
	var kept []*mcp.Tool
	hashes := map[string]string{}
	for _, t := range tools {
		if !s.allowedByManifest(t.Name) {
			continue
		}
		h, err := ToolHash(t)
		if err != nil {
			s.out.event("withholding a tool: %v", err)
			continue
		}
		if _, dup := hashes[t.Name]; dup {
			continue
		}
		hashes[t.Name] = h
		kept = append(kept, t)
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].Name < kept[j].Name })
	uiLive, uiDefs := s.readUI(ctx, c, kept)
	s.mu.Lock()
	pinned, pinnedUI := s.pinned, s.ui.pinned
	s.mu.Unlock()
	if pinned == nil {
		var err error
		if pinned, pinnedUI, err = s.p.recordSurface(ctx, s, hashes, uiLive); err != nil {
			return fmt.Errorf("recording the tool surface of %s: %w", s.id, err)
		}
	}
	s.mu.Lock()
	if s.pinned == nil {
		s.pinned, s.ui.pinned = pinned, pinnedUI
	}
	s.tools, s.hashes = kept, hashes
	s.changes = diffSurface(s, kept, hashes, s.pinned)
	s.setUILocked(uiLive, uiDefs)
	s.setStateLocked()
	s.changedLocked()
	s.mu.Unlock()
	s.p.invalidate()
	return nil
}

// setPinned replaces the pinned surface (after an accept, or a record by
// another process) and recomputes the changes.
func (s *server) setPinned(tools map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tools == nil || (s.pinned != nil && maps.Equal(tools, s.pinned)) {
		return
	}
	s.pinned = tools
	if s.hashes != nil {
		s.changes = diffSurface(s, s.tools, s.hashes, s.pinned)
	}
	s.setStateLocked()
	s.changedLocked()
	s.p.invalidate()
}

// allowedByManifest applies the manifest's tools.allow and tools.deny of
// a server. A native tool provider has no filter: all its tools pass.
func (s *server) allowedByManifest(tool string) bool {
	if s.spec == nil || s.spec.Tools == nil {
		return true
	}
	f := s.spec.Tools
	for _, d := range f.Deny {
		if bundle.MatchGlob(d, tool) {
			return false
		}
	}
	if len(f.Allow) == 0 {
		return true
	}
	for _, a := range f.Allow {
		if bundle.MatchGlob(a, tool) {
			return true
		}
	}
	return false
}

// live returns the current connection, or nil.
func (s *server) live() *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}

// refreshTools re-lists the tools when the server said they changed.
func (s *server) refreshTools(ctx context.Context) error {
	s.listMu.Lock()
	defer s.listMu.Unlock()
	c := s.live()
	if c == nil || !c.toolsDirty.Swap(false) {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, s.callTime)
	defer cancel()
	tools, err := c.sess.listTools(mergeCancel(lctx, c.ctx))
	if err != nil {
		c.toolsDirty.Store(true)
		s.classify(ctx, lctx, c, err)
		return fmt.Errorf("re-listing the tools of %s: %w", s.id, err)
	}
	return s.applyTools(ctx, c, tools)
}

// classify marks a connection dead after a failed request when the
// failure was not the peer's answer nor the caller's cancellation.
func (s *server) classify(caller, req context.Context, c *conn, err error) {
	switch {
	case c.ctx.Err() != nil, caller.Err() != nil, c.sess.answered(err):
	case errors.As(err, new(*signin.NeedSignInError)):
		// The server asked for a sign-in berth could not ask for: the
		// connection is sound, the call failed.
	case errors.Is(context.Cause(req), errCallTimeout), errors.Is(req.Err(), context.DeadlineExceeded):
		c.cancel(fmt.Errorf("%s %s: %w (%s); berth killed it", s.noun(), s.id, errHung, s.callTime))
	default:
		c.cancel(fmt.Errorf("%s %s: the connection failed: %w", s.noun(), s.id, err))
	}
}

// mergeCancel returns a context that ends when either ctx or other ends,
// with other's cause.
func mergeCancel(ctx, other context.Context) context.Context {
	m, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(other, func() { cancel(context.Cause(other)) })
	context.AfterFunc(m, func() { stop() })
	return m
}

// waitConn waits until the server has a connection newer than after, and
// returns it. It fails when the server is stopped, gave up, or (unless
// waitRestart) is failed and waiting to restart.
func (s *server) waitConn(ctx context.Context, after uint64, waitRestart bool) (*conn, error) {
	for {
		s.mu.Lock()
		c, st, ch := s.conn, s.state, s.notify
		var err error
		switch {
		case c != nil && c.seq > after && c.ctx.Err() == nil:
			s.mu.Unlock()
			return c, nil
		case st == StateStopped || st == StateDrifted:
			err = s.lastErr
		case st == StateFailed && (s.gaveUp || !waitRestart):
			err = s.failedErrLocked()
		}
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (s *server) failedErrLocked() error {
	when := "berth gave up restarting it; fix the cause and start berth again (berth logs " + s.id + " shows its stderr)"
	var ne *signin.NeedSignInError
	if !s.gaveUp && errors.As(s.lastErr, &ne) {
		when = "berth connects again at the next call, once signed in"
	} else if !s.gaveUp {
		when = fmt.Sprintf("berth restarts it in %s (restart %d of %d)", time.Until(s.nextStart).Round(100*time.Millisecond), s.inRow, MaxRestarts)
	}
	return fmt.Errorf("%s %s is not running: %w; %s", s.noun(), s.id, s.lastErr, when)
}

// awaitDown waits briefly until the supervisor has taken a dead
// connection down, so that the status shows the death when a call
// reports it.
func (s *server) awaitDown(c *conn) {
	deadline := time.NewTimer(2*s.p.grace + time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		cur, ch := s.conn, s.notify
		s.mu.Unlock()
		if cur != c {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			return
		}
	}
}
