package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/internal/sockpeer"
	"github.com/berth-mcp/berth/mcpexport"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

const serveLong = `Serve is an MCP server that offers the tools, prompts and resources of the
plugins enabled in a workspace (default: the current directory). Without
--sse or --http it serves one client over stdio: the way Claude Desktop and
other clients launch it (berth connect writes that entry for you).

--http ADDR serves Streamable HTTP at /mcp (stateful; --stateless for the
2026-07-28 era); --sse ADDR serves the legacy HTTP+SSE transport at /sse.
ADDR is HOST:PORT with a port from 0 to 65535 (0 picks a free one), or
unix:PATH; any other is a usage error (exit 2), before anything starts.
Each profile of the workspace (berth profile list) is served beside it at
/profiles/NAME/mcp (/profiles/NAME/sse) in its own tools mode, every path
with sessions of its own; --max-sessions counts the sessions of all
paths, and berth status shows which profile each session uses. --tools
and --always shape /mcp only; with --profile NAME, /mcp serves NAME and
other profiles' paths are refused.
An ADDR without a host (":8931") listens on 127.0.0.1. Every request, on
every address, loopback included, must carry "Authorization: Bearer
<token>": the token of --token-file, else of $BERTH_HOME/serve.token (made
on first use, mode 0600, and kept). /healthz answers without it.
--unsafe-no-token lets any local user in; it works on loopback only.
Requests from non-loopback web origins are refused.

--http unix:PATH serves Streamable HTTP on a Unix-domain socket, in a
directory of your own (made with mode 0700 when missing; refused when
group or others can reach it). The OS names each peer (SO_PEERCRED):
another user's connection is closed unread, and your own needs no token.
On loopback TCP on Linux, the kernel names each peer too (sock_diag) and
another user is refused before the token is read; elsewhere loopback TCP
is token-only (the start log's peer_check says which). When another
user's program holds the port, or one berth cannot name (always so
without sock_diag), serve says so, replaces the token of
$BERTH_HOME/serve.token (clients must read it again; a --token-file is
yours to replace) and exits.

A call runs only if the policy allows it (berth policy set TOOL allow) or a
human approves it: in the client (elicitation or input requests), or with
'berth approve ID' while it waits in the queue (--approval-timeout, then it
is refused). A call whose client gives up, ends its session or goes away is
withdrawn from the queue. Decisions go to $BERTH_HOME/audit.log. Logs go to
stderr. docs/serve.md has the details.

--profile NAME serves one profile of the workspace (berth profile create):
its plugins, the tools its patterns let through, in its tools mode; over
HTTP, every session of the listener gets it. A profile only narrows: the
policy applies unchanged. It is read again at every boundary, so a
changed profile applies to running sessions and a removed one offers
nothing. --tools full|lazy sets the tools mode: lazy lists two
meta-tools, berth_find_tools and berth_call_tool, instead of every tool;
an explicit --tools overrides the profile's mode (without --tools the
profile's mode holds; full without a profile). --always PATTERN (lazy mode
only; repeatable) also lists the tools matching PATTERN directly, beside
the profile's own. docs/profiles.md has the details.

--otel exports OpenTelemetry traces and metrics over OTLP/HTTP to where
the standard OTEL_EXPORTER_OTLP_* variables say; without it nothing is
sent. No argument values are recorded unless --otel-unsafe-content.
docs/telemetry.md has the details.`

// serveOptions are the inputs of berth serve.
type serveOptions struct {
	Workspace, SSEAddr, HTTPAddr, TokenFile string
	Stateless, UnsafeNoToken                bool
	ApprovalTimeout                         time.Duration
	MaxPendingPerSession, MaxPending        int
	HTTP                                    mcpexport.HTTPOptions
	// Profile is --profile: the workspace's profile to serve ("" the
	// whole workspace).
	Profile string
	// Tools is --tools: "" (the profile's mode; full without one), full
	// or lazy.
	Tools string
	// Always is --always: patterns of tools listed directly in lazy
	// mode, beside the profile's.
	Always []string
	// OTel is --otel: export traces and metrics over OTLP/HTTP where
	// the OTEL_EXPORTER_OTLP_* variables say; OTelUnsafeContent is
	// --otel-unsafe-content: record arguments, resource URIs and error
	// messages too (docs/telemetry.md).
	OTel, OTelUnsafeContent bool
}

func newServeCmd(a *app) *cobra.Command {
	opts := &serveOptions{}
	cmd := &cobra.Command{
		Use: "serve [--workspace DIR] [--profile NAME] [--tools full|lazy [--always PATTERN]...] [--sse ADDR | --http ADDR [--stateless]] [--token-file FILE | --unsafe-no-token] [--otel [--otel-unsafe-content]]",
		Example: `  berth serve --workspace ~/src/project
  berth serve --http 127.0.0.1:8931
  berth serve --http unix:$XDG_RUNTIME_DIR/berth/serve.sock
  berth serve --http 0.0.0.0:8931 --token-file ~/.config/berth/token
  berth serve --profile docs
  berth serve --tools lazy --always 'acme-notes__notes__search'
  OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 berth serve --otel`,
		Short: "Serve the workspace's tools to MCP clients, with approval by default",
		Long:  serveLong,
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(cmd.Context(), a, opts)
		},
	}
	hopts := &opts.HTTP
	f := cmd.Flags()
	f.StringVar(&opts.Workspace, "workspace", "", "the workspace whose enabled plugins to serve (default: the current directory)")
	f.StringVar(&opts.SSEAddr, "sse", "", "serve the legacy HTTP+SSE transport at ADDR (/sse)")
	f.StringVar(&opts.HTTPAddr, "http", "", "serve Streamable HTTP at ADDR (/mcp); unix:PATH for a Unix-domain socket")
	f.BoolVar(&opts.Stateless, "stateless", false, "serve Streamable HTTP without sessions (the 2026-07-28 era)")
	f.StringVar(&opts.TokenFile, "token-file", "", "the bearer token HTTP clients must send (a file of mode 0600; default: $BERTH_HOME/serve.token, made on first use)")
	f.BoolVar(&opts.UnsafeNoToken, "unsafe-no-token", false, "serve HTTP without a token: any local user can call the tools (loopback addresses only)")
	f.DurationVar(&opts.ApprovalTimeout, "approval-timeout", mcpexport.DefaultApprovalTimeout, "how long a call waits in the approval queue before it is refused (keep it below the client's request timeout)")
	f.IntVar(&opts.MaxPendingPerSession, "max-pending-per-session", mcpexport.DefaultMaxPendingPerSession, "calls of one session that may wait for approval at once; more are refused at once")
	f.IntVar(&opts.MaxPending, "max-pending", mcpexport.DefaultMaxPending, "calls that may wait for approval at once, in all")
	f.IntVar(&hopts.MaxSessions, "max-sessions", mcpexport.DefaultMaxSessions, "sessions per HTTP listener; a new one closes the session idle the longest")
	f.DurationVar(&hopts.SessionIdleTimeout, "session-idle-timeout", mcpexport.DefaultSessionIdleTimeout, "close an HTTP session with no request in flight for this long")
	f.DurationVar(&hopts.ReadTimeout, "read-timeout", mcpexport.DefaultReadTimeout, "time a client has to send a request's headers, and again its body")
	f.DurationVar(&hopts.WriteIdleTimeout, "write-idle-timeout", mcpexport.DefaultWriteIdleTimeout, "cut a response the client has not read for this long")
	f.DurationVar(&hopts.KeepAliveTimeout, "keepalive-timeout", mcpexport.DefaultKeepAliveTimeout, "close an idle keep-alive connection after this long")
	f.StringVar(&opts.Profile, "profile", "", "serve the workspace's profile `NAME` (berth profile list) instead of the whole workspace")
	f.StringVar(&opts.Tools, "tools", "", "the tools `MODE`: full lists every tool, lazy lists berth_find_tools and berth_call_tool instead (default: the profile's mode, else full)")
	f.StringArrayVar(&opts.Always, "always", nil, "in lazy mode, also list the tools matching `PATTERN` directly (repeatable)")
	f.BoolVar(&opts.OTel, "otel", false, "export OpenTelemetry traces and metrics over OTLP/HTTP, to where the OTEL_EXPORTER_OTLP_* variables say (docs/telemetry.md)")
	f.BoolVar(&opts.OTelUnsafeContent, "otel-unsafe-content", false, "with --otel, also record tool call arguments, resource URIs and error messages, which may hold secrets")
	return cmd
}

// check refuses contradictory or out-of-range options (usage errors).
func (o *serveOptions) check() error {
	if o.Stateless && o.HTTPAddr == "" {
		return usagef("--stateless applies to --http only")
	}
	if o.OTelUnsafeContent && !o.OTel {
		return usagef("--otel-unsafe-content applies to --otel only")
	}
	if o.ApprovalTimeout <= 0 {
		return usagef("--approval-timeout must be positive")
	}
	if o.MaxPendingPerSession <= 0 || o.MaxPending <= 0 || o.HTTP.MaxSessions <= 0 {
		return usagef("--max-pending-per-session, --max-pending and --max-sessions must be positive")
	}
	for name, d := range map[string]time.Duration{"--session-idle-timeout": o.HTTP.SessionIdleTimeout, "--read-timeout": o.HTTP.ReadTimeout, "--write-idle-timeout": o.HTTP.WriteIdleTimeout, "--keepalive-timeout": o.HTTP.KeepAliveTimeout} {
		if d <= 0 {
			return usagef("%s must be positive", name)
		}
	}
	if o.TokenFile != "" && o.UnsafeNoToken {
		return usagef("--token-file and --unsafe-no-token contradict each other; choose one")
	}
	if (o.TokenFile != "" || o.UnsafeNoToken) && !o.listening() {
		return usagef("--token-file and --unsafe-no-token apply to --http and --sse only")
	}
	for flag, addr := range map[string]string{"--http": o.HTTPAddr, "--sse": o.SSEAddr} {
		if _, unix := mcpexport.UnixPath(addr); addr == "" || unix {
			continue
		}
		if _, _, err := mcpexport.ListenAddr(addr); err != nil {
			return usagef("%s: %v", flag, err)
		}
	}
	return o.checkView()
}

// checkView checks --profile, --tools and --always on their own (usage
// errors); resolveView checks them against the state.
func (o *serveOptions) checkView() error {
	if o.Profile != "" {
		if err := store.CheckProfileName(o.Profile); err != nil {
			return usagef("--profile: %v", err)
		}
	}
	switch store.ToolsMode(o.Tools) {
	case "", store.ToolsFull, store.ToolsLazy:
	default:
		return usagef("--tools: %q is not a tools mode; use full or lazy", o.Tools)
	}
	// Without a profile the mode is known now; with one and no --tools,
	// resolveView checks it against the profile's.
	mode := store.ToolsLazy
	if o.Tools != "" || o.Profile == "" {
		mode = store.EffectiveMode(store.ToolsMode(o.Tools), nil)
	}
	return checkAlways(o.Always, mode, nil, "")
}

// checkAlways checks --always against the mode and the plugins of the
// profile (none: any) it applies to, with store.CheckAlways (the rules
// of a profile's own always): usage errors.
func checkAlways(always []string, mode store.ToolsMode, plugins []string, profile string) error {
	bad, lazy := store.CheckAlways(always, mode, plugins)
	if lazy != nil {
		if profile != "" {
			return usagef("--always: %v, and profile %s is in %s mode; add --tools lazy", lazy, profile, mode)
		}
		return usagef("--always: %v; add --tools lazy", lazy)
	}
	if len(bad) > 0 {
		return usagef("--always: %v", bad[0])
	}
	return nil
}

// resolveView checks --profile against the state of st (the profile
// must exist in the workspace; --always without --tools needs it to be
// lazy; an --always pattern must name one of its plugins) and returns
// the view to serve (nil for the whole workspace in full mode) and the
// tools mode it starts in, for the start log.
func (o *serveOptions) resolveView(st *store.Store, workspace string) (*mcpexport.View, store.ToolsMode, error) {
	mode := store.EffectiveMode(store.ToolsMode(o.Tools), nil)
	if o.Profile == "" && o.Tools == "" && len(o.Always) == 0 {
		return nil, mode, nil
	}
	v := &mcpexport.View{Profile: o.Profile, Mode: store.ToolsMode(o.Tools), Always: o.Always}
	if o.Profile == "" {
		return v, mode, nil
	}
	ws, err := pool.Workspace(workspace)
	if err != nil {
		return nil, "", err
	}
	state, err := st.State()
	if err != nil {
		return nil, "", err
	}
	p, err := profileIn(state, ws, o.Profile)
	if err != nil {
		return nil, "", err
	}
	mode = store.EffectiveMode(store.ToolsMode(o.Tools), p)
	if err := checkAlways(o.Always, mode, p.Plugins, o.Profile); err != nil {
		return nil, "", err
	}
	return v, mode, nil
}

// listening reports whether serve listens on HTTP (else it serves stdio).
func (o *serveOptions) listening() bool { return o.SSEAddr != "" || o.HTTPAddr != "" }

// serveListener is one HTTP address serve listens on.
type serveListener struct {
	o    *mcpexport.HTTPOptions
	addr string
	ln   net.Listener
}

// listeners are the HTTP addresses of o, not yet listening.
func (o *serveOptions) listeners() []*serveListener {
	var lns []*serveListener
	if o.SSEAddr != "" {
		h := o.HTTP
		h.SSE = true
		lns = append(lns, &serveListener{o: &h, addr: o.SSEAddr})
	}
	if o.HTTPAddr != "" {
		h := o.HTTP
		h.Stateless = o.Stateless
		lns = append(lns, &serveListener{o: &h, addr: o.HTTPAddr})
	}
	return lns
}

// raiseGCTarget raises the GC target unless GOGC is set, and reports
// whether it did. Every relayed call decodes JSON twice through go-sdk,
// which allocates generously; a larger GC target cuts berth's CPU per
// call by about a fifth (bench/README.md). What it leaves resident is
// returned (trimMemory).
func (a *app) raiseGCTarget() bool {
	if a.getenv("GOGC") != "" {
		return false
	}
	debug.SetGCPercent(400)
	return true
}

func runServe(ctx context.Context, a *app, opts *serveOptions) error {
	if err := opts.check(); err != nil {
		return err
	}
	gcTarget := a.raiseGCTarget()
	log := slog.New(slog.NewTextHandler(a.stderr, nil))
	// Telemetry's variables are checked before anything starts; the
	// exporters flush after everything else has stopped.
	tel, err := a.startTelemetry(ctx, log, opts.OTel)
	if err != nil {
		return err
	}
	defer tel.shutdown(context.WithoutCancel(ctx))
	workspace := opts.Workspace
	if workspace == "" {
		workspace = "."
	}
	// An unknown profile is refused before anything starts.
	st, err := a.store()
	if err != nil {
		return err
	}
	view, mode, err := opts.resolveView(st, workspace)
	if err != nil {
		return err
	}
	// Check the addresses and the token first: a refused listener
	// fails before anything starts.
	lns := opts.listeners()
	tokenPath, err := a.serveListen(log, opts, lns)
	for _, l := range lns {
		if l.ln != nil {
			defer l.ln.Close()
		}
	}
	if err != nil {
		return err
	}
	sec, err := a.secrets()
	if err != nil {
		return err
	}
	p, err := pool.Open(ctx, st, workspace, &pool.Options{Secrets: secretLookup(sec), SignIns: sec, SignInClient: signinClients(st, sec), LegacyUpstream: legacyOnly(lns), AwaitUpstreamEra: len(lns) == 0, Profile: opts.Profile,
		TracerProvider: tel.tracer, MeterProvider: tel.meter, TelemetryContentUnsafe: opts.OTelUnsafeContent})
	if err != nil {
		return err
	}
	defer p.Close()
	if gcTarget {
		tctx, stopTrim := context.WithCancel(ctx)
		defer stopTrim()
		go trimMemory(tctx, p)
	}
	a.logServeStart(log, st, p.WorkspaceDir())
	srv := mcpexport.New(p, &mcpexport.Options{ApprovalTimeout: opts.ApprovalTimeout, Logger: log, MaxPendingPerSession: opts.MaxPendingPerSession, MaxPending: opts.MaxPending, Hints: serveHints, View: view, RecordSessions: true,
		OnWaiting:      a.approvalNotifier(st, log),
		TracerProvider: tel.tracer, MeterProvider: tel.meter, TelemetryContentUnsafe: opts.OTelUnsafeContent})
	defer srv.Close()
	if len(lns) == 0 {
		log.Info("berth serve: serving over stdio", "workspace", p.WorkspaceDir(), "profile", opts.Profile, "tools", mode)
		err := srv.ServeStdio(ctx)
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	return serveHTTP(ctx, log, opts, srv, p.WorkspaceDir(), lns, tokenPath)
}

// legacyOnly reports whether berth speaks the legacy era to plugin
// servers (docs/relay.md §"The protocol berth speaks to plugin servers"):
// when there are listeners and they all serve legacy clients only; over
// stdio the era is the one client's, named by its first message (the
// servers start then).
func legacyOnly(lns []*serveListener) bool {
	legacy := len(lns) > 0
	for _, l := range lns {
		legacy = legacy && !l.o.Stateless
	}
	return legacy
}

// serveListen checks the listeners' addresses, reads or makes the
// token, and listens on every address of lns (setting their ln; the
// caller closes them, on error too). It returns the file the token
// came from.
func (a *app) serveListen(log *slog.Logger, opts *serveOptions, lns []*serveListener) (tokenPath string, err error) {
	for _, l := range lns {
		if opts.UnsafeNoToken {
			if err := needLoopback(l.addr); err != nil {
				return "", err
			}
		}
	}
	token := ""
	tokenPath = opts.TokenFile
	if opts.listening() && !opts.UnsafeNoToken {
		if opts.TokenFile != "" {
			t, err := mcpexport.ReadTokenFile(opts.TokenFile)
			if err != nil {
				return "", err
			}
			token = t
		} else {
			paths, err := a.paths()
			if err != nil {
				return "", err
			}
			tokenPath = paths.ServeToken()
			t, created, err := mcpexport.LoadOrCreateToken(tokenPath)
			if err != nil {
				return "", err
			}
			if created {
				log.Info("berth serve: made a bearer token for the HTTP listeners", "token_file", tokenPath)
			}
			token = t
		}
	}
	for _, l := range lns {
		l.o.Token, l.o.UnsafeNoToken = token, opts.UnsafeNoToken
		l.o.TokenSource = "the token in " + tokenPath
		l.o.Logger = log
		ln, err := mcpexport.Listen(l.addr, l.o)
		var taken *mcpexport.PortTakenError
		if errors.As(err, &taken) {
			return "", portTaken(log, taken, opts, tokenPath)
		}
		if err != nil {
			return "", err
		}
		l.ln = ln
	}
	return tokenPath, nil
}

// portTaken reports, loudly, that another user's program holds the
// address serve was to listen on, or a program berth cannot name, and
// voids the token it may have received: the default token file gets a new
// token; a --token-file is the operator's to replace.
func portTaken(log *slog.Logger, taken *mcpexport.PortTakenError, opts *serveOptions, tokenPath string) error {
	_, port, _ := net.SplitHostPort(taken.Addr)
	find := fmt.Sprintf("find it with: ss -ltnpe 'sport = :%s'", port)
	if runtime.GOOS != "linux" {
		find = fmt.Sprintf("find it with: lsof -nP -iTCP:%s -sTCP:LISTEN", port)
	}
	move := "serve on a port of your own (--http 127.0.0.1:PORT) or on a Unix socket (--http unix:PATH), whose peers the OS identifies"
	holder, uid := "ANOTHER USER'S PROGRAM LISTENS ON THIS ADDRESS", any(taken.UID)
	if taken.UID < 0 {
		holder, uid = "THIS ADDRESS IS IN USE AND BERTH CANNOT TELL BY WHOM", "unknown"
		// A berth serve of the operator's own keeps the token it read.
		move += "; if it is a berth serve of yours, it still uses the old token: stop it and start it again"
	}
	if opts.UnsafeNoToken {
		log.Error("berth serve: "+holder, "addr", taken.Addr, "uid", uid)
		return fmt.Errorf("%v; %s; %s", taken, find, move)
	}
	if opts.TokenFile != "" {
		log.Error("berth serve: "+holder+"; THE TOKEN MAY HAVE LEAKED AND BERTH DOES NOT REPLACE IT: REPLACE IT YOURSELF", "addr", taken.Addr, "uid", uid, "token_file", tokenPath)
		return fmt.Errorf("%v; treat the token in %s as leaked and replace it (head -c 32 /dev/urandom | base64 > %s), then give clients the new one; %s; %s", taken, tokenPath, fsx.ShellQuote(tokenPath), find, move)
	}
	if _, err := mcpexport.RotateToken(tokenPath); err != nil {
		log.Error("berth serve: "+holder+"; THE TOKEN MAY HAVE LEAKED, AND COULD NOT BE REPLACED", "addr", taken.Addr, "uid", uid, "token_file", tokenPath, "error", err)
		return fmt.Errorf("%v; berth could not replace the token (%v): remove %s (berth serve makes a new one) and give clients the new one; %s; %s", taken, err, fsx.ShellQuote(tokenPath), find, move)
	}
	log.Error("berth serve: "+holder+"; THE TOKEN MAY HAVE LEAKED, SO BERTH REPLACED IT", "addr", taken.Addr, "uid", uid, "token_file", tokenPath)
	return fmt.Errorf("%v; berth replaced the token in %s with a new one (the old one is void): clients must read the file again (restart them; a client whose configuration holds a copy of the token needs the new one); %s; %s", taken, tokenPath, find, move)
}

// serveHTTP serves srv on every listener of lns until ctx ends or one
// fails.
func serveHTTP(ctx context.Context, log *slog.Logger, opts *serveOptions, srv *mcpexport.Server, ws string, lns []*serveListener, tokenPath string) error {
	unsafeNoToken := opts.UnsafeNoToken
	if unsafeNoToken {
		log.Warn("berth serve: serving WITHOUT a token (--unsafe-no-token): every local user can call this workspace's tools and answer its approval forms")
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, l := range lns {
		ln := l.ln
		path := "/mcp"
		if l.o.SSE {
			path = "/sse"
		}
		where := []any{"url", "http://" + ln.Addr().String() + path}
		if sock, ok := mcpexport.UnixPath(l.addr); ok {
			where = []any{"url", "http://localhost" + path, "socket", sock}
		}
		check := mcpexport.PeerCheck(ln)
		where = append(where, "profiles", "/profiles/NAME"+path, "workspace", ws, "stateless", l.o.Stateless, "peer_check", peerCheckText(check))
		switch {
		case unsafeNoToken:
			log.Info("berth serve: listening", append(where, "token", "none")...)
		case check == sockpeer.PeerCred:
			log.Info("berth serve: listening", append(where, "token_file", tokenPath, "clients_send", "no token needed on this socket (the OS names the peer); a token sent must be the one in "+tokenPath)...)
		default:
			log.Info("berth serve: listening", append(where, "token_file", tokenPath, "clients_send", "Authorization: Bearer $(cat "+tokenPath+")")...)
		}
		h := srv.Handler(l.o)
		o := l.o
		g.Go(func() error { return mcpexport.ServeHTTP(gctx, ln, h, o) })
	}
	return g.Wait()
}

// peerCheckText says how a listener identifies the user at the other
// end of each connection, for the start log.
func peerCheckText(m sockpeer.Method) string {
	switch m {
	case sockpeer.PeerCred:
		return "SO_PEERCRED: the OS names each peer; other users are refused"
	case sockpeer.SockDiag:
		return "sock_diag: the kernel names each loopback peer; other users are refused before the token is read"
	}
	return "none: clients are known by the token alone"
}

// serveListenersNote says, for berth status, which of berth serve's
// HTTP listeners name the user of each client on this system. It tries
// sock_diag on a loopback listener of its own.
func serveListenersNote() string {
	unix := "unix:PATH names each client's user (SO_PEERCRED) and refuses other users"
	if !sockpeer.Supported(sockpeer.PeerCred) {
		unix = "unix:PATH keeps other users out by its directory (mode 0700) and clients send the token"
	}
	tcp := "loopback TCP is token-only on this system (another user who holds the token gets in)"
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		_, gerr := sockpeer.Guard(ln, nil)
		ln.Close()
		switch {
		case gerr == nil:
			tcp = "loopback TCP names it too (sock_diag), so another user is refused before the token is read"
		case !errors.Is(gerr, sockpeer.ErrUnsupported):
			tcp = fmt.Sprintf("loopback TCP is token-only here, because sock_diag fails (%v)", gerr)
		}
	}
	return "berth serve --http on this system: " + unix + "; " + tcp + "."
}

// needLoopback refuses --unsafe-no-token on an address that is not a
// loopback one, before mcpexport.Listen would (in the words of its
// options).
func needLoopback(addr string) error {
	hostport, loopback, err := mcpexport.ListenAddr(addr)
	if err != nil || loopback {
		return nil // Listen reports a bad address
	}
	return &rendered{
		msg: fmt.Sprintf("%s is not a loopback address: --unsafe-no-token works on loopback addresses only, because it lets anyone who can reach the port call your tools; drop --unsafe-no-token (clients then send the token of $BERTH_HOME/serve.token or --token-file)", hostport),
		err: mcpexport.ErrUnsafeNoTokenNotLoopback,
	}
}

// logServeStart says, at start, which state root and workspace berth
// serves and how many plugins are enabled there: a client that starts
// berth with another environment than the user's shell would otherwise
// serve nothing without a word.
func (a *app) logServeStart(log *slog.Logger, st *store.Store, ws string) {
	n := 0
	if state, err := st.State(); err == nil {
		if w := state.Workspaces[ws]; w != nil {
			n = len(w.Plugins)
		}
	}
	log.Info("berth serve: starting", "berth_home", st.Paths().Root, "workspace", ws, "enabled_plugins", n)
	if n == 0 {
		log.Warn("berth serve: no plugin is enabled in this workspace, so there are no tools to offer; enable one with: berth enable NAME --workspace "+ws+" (with the same BERTH_HOME)", "berth_home", st.Paths().Root, "workspace", ws)
	}
}

// serveHints are the flags and the command that messages of berth serve
// cite where a limit is raised or waiting calls are settled.
var serveHints = mcpexport.Hints{
	MaxPendingPerSession: "berth serve --max-pending-per-session",
	MaxPending:           "berth serve --max-pending",
	MaxSessions:          "--max-sessions",
	Approvals:            "berth approvals",
}
