package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/berth-mcp/berth/mcpexport"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

func (a *app) serveCommand() *cobra.Command {
	var (
		workspace, sseAddr, httpAddr, tokenFile string
		stateless, unsafeNoToken                bool
		approvalTimeout                         time.Duration
		maxPendingPerSession, maxPending        int
		hopts                                   mcpexport.HTTPOptions
	)
	cmd := &cobra.Command{
		Use: "serve [--workspace DIR] [--sse ADDR | --http ADDR [--stateless]] [--token-file FILE | --unsafe-no-token]",
		Example: `  berth serve --workspace ~/src/project
  berth serve --http 127.0.0.1:8931
  berth serve --http 0.0.0.0:8931 --token-file ~/.config/berth/token`,
		Short: "Serve the workspace's tools to MCP clients, with approval by default",
		Long: `Serve is an MCP server that offers the tools, prompts and resources of the
plugins enabled in a workspace (default: the current directory). Without
--sse or --http it serves one client over stdio: the way Claude Desktop and
other clients launch it (berth connect writes that entry for you).

--http ADDR serves Streamable HTTP at /mcp (stateful; --stateless for the
2026-07-28 era); --sse ADDR serves the legacy HTTP+SSE transport at /sse.
An ADDR without a host (":8931") listens on 127.0.0.1. Every request, on
every address, loopback included, must carry "Authorization: Bearer
<token>": the token of --token-file, else of $BERTH_HOME/serve.token (made
on first use, mode 0600, and kept). /healthz answers without it.
--unsafe-no-token lets any local user in; it works on loopback only.
Requests from non-loopback web origins are refused.

A call runs only if the policy allows it (berth policy set TOOL allow) or a
human approves it: in the client (elicitation or input requests), or with
'berth approve ID' while it waits in the queue (--approval-timeout, then it
is refused). A call whose client gives up, ends its session or goes away is
withdrawn from the queue. Decisions go to $BERTH_HOME/audit.log. Logs go to
stderr. docs/serve.md has the details.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if stateless && httpAddr == "" {
				return usagef("--stateless applies to --http only")
			}
			if approvalTimeout <= 0 {
				return usagef("--approval-timeout must be positive")
			}
			if maxPendingPerSession <= 0 || maxPending <= 0 || hopts.MaxSessions <= 0 {
				return usagef("--max-pending-per-session, --max-pending and --max-sessions must be positive")
			}
			for name, d := range map[string]time.Duration{"--session-idle-timeout": hopts.SessionIdleTimeout, "--read-timeout": hopts.ReadTimeout, "--write-idle-timeout": hopts.WriteIdleTimeout, "--keepalive-timeout": hopts.KeepAliveTimeout} {
				if d <= 0 {
					return usagef("%s must be positive", name)
				}
			}
			listening := sseAddr != "" || httpAddr != ""
			if tokenFile != "" && unsafeNoToken {
				return usagef("--token-file and --unsafe-no-token contradict each other; choose one")
			}
			if (tokenFile != "" || unsafeNoToken) && !listening {
				return usagef("--token-file and --unsafe-no-token apply to --http and --sse only")
			}
			gcTarget := a.getenv("GOGC") == ""
			if gcTarget {
				// Every relayed call decodes JSON twice through go-sdk, which
				// allocates generously; a larger GC target cuts berth's CPU
				// per call by about a fifth (bench/README.md). GOGC overrides.
				// What it leaves resident is returned (trimMemory).
				debug.SetGCPercent(400)
			}
			ctx := cmd.Context()
			log := slog.New(slog.NewTextHandler(a.stderr, nil))
			// Check the addresses and the token first: a refused listener
			// fails before anything starts.
			type listener struct {
				o    *mcpexport.HTTPOptions
				addr string
				ln   net.Listener
			}
			var lns []*listener
			if sseAddr != "" {
				o := hopts
				o.SSE = true
				lns = append(lns, &listener{o: &o, addr: sseAddr})
			}
			if httpAddr != "" {
				o := hopts
				o.Stateless = stateless
				lns = append(lns, &listener{o: &o, addr: httpAddr})
			}
			for _, l := range lns {
				if unsafeNoToken {
					if err := needLoopback(l.addr); err != nil {
						return err
					}
				}
			}
			token, tokenPath := "", tokenFile
			if listening && !unsafeNoToken {
				if tokenFile != "" {
					t, err := mcpexport.ReadTokenFile(tokenFile)
					if err != nil {
						return err
					}
					token = t
				} else {
					paths, err := a.paths()
					if err != nil {
						return err
					}
					tokenPath = paths.ServeToken()
					t, created, err := mcpexport.LoadOrCreateToken(tokenPath)
					if err != nil {
						return err
					}
					if created {
						log.Info("berth serve: made a bearer token for the HTTP listeners", "token_file", tokenPath)
					}
					token = t
				}
			}
			for _, l := range lns {
				l.o.Token, l.o.UnsafeNoToken = token, unsafeNoToken
				l.o.TokenSource = "the token in " + tokenPath
				ln, err := mcpexport.Listen(l.addr, l.o)
				if err != nil {
					return err
				}
				defer ln.Close()
				l.ln = ln
			}
			st, err := a.store()
			if err != nil {
				return err
			}
			if workspace == "" {
				workspace = "."
			}
			sec, err := a.secrets()
			if err != nil {
				return err
			}
			// Every listener legacy-only: speak legacy to the plugin
			// servers too, so their own requests during a call can be
			// relayed (docs/relay.md).
			legacyOnly := len(lns) > 0
			for _, l := range lns {
				legacyOnly = legacyOnly && !l.o.Stateless
			}
			p, err := pool.Open(ctx, st, workspace, &pool.Options{Secrets: secretLookup(sec), LegacyUpstream: legacyOnly})
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
			srv := mcpexport.New(p, &mcpexport.Options{ApprovalTimeout: approvalTimeout, Logger: log, MaxPendingPerSession: maxPendingPerSession, MaxPending: maxPending, Hints: serveHints})
			defer srv.Close()
			if len(lns) == 0 {
				log.Info("berth serve: serving over stdio", "workspace", p.WorkspaceDir())
				err := srv.ServeStdio(ctx)
				if errors.Is(err, context.Canceled) {
					return nil
				}
				return err
			}
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
				if unsafeNoToken {
					log.Info("berth serve: listening", "url", "http://"+ln.Addr().String()+path, "workspace", p.WorkspaceDir(), "stateless", l.o.Stateless, "token", "none")
				} else {
					log.Info("berth serve: listening", "url", "http://"+ln.Addr().String()+path, "workspace", p.WorkspaceDir(), "stateless", l.o.Stateless,
						"token_file", tokenPath, "clients_send", "Authorization: Bearer $(cat "+tokenPath+")")
				}
				h := srv.Handler(l.o)
				o := l.o
				g.Go(func() error { return mcpexport.ServeHTTP(gctx, ln, h, o) })
			}
			return g.Wait()
		},
	}
	f := cmd.Flags()
	f.StringVar(&workspace, "workspace", "", "the workspace whose enabled plugins to serve (default: the current directory)")
	f.StringVar(&sseAddr, "sse", "", "serve the legacy HTTP+SSE transport at ADDR (/sse)")
	f.StringVar(&httpAddr, "http", "", "serve Streamable HTTP at ADDR (/mcp)")
	f.BoolVar(&stateless, "stateless", false, "serve Streamable HTTP without sessions (the 2026-07-28 era)")
	f.StringVar(&tokenFile, "token-file", "", "the bearer token HTTP clients must send (a file of mode 0600; default: $BERTH_HOME/serve.token, made on first use)")
	f.BoolVar(&unsafeNoToken, "unsafe-no-token", false, "serve HTTP without a token: any local user can call the tools (loopback addresses only)")
	f.DurationVar(&approvalTimeout, "approval-timeout", mcpexport.DefaultApprovalTimeout, "how long a call waits in the approval queue before it is refused (keep it below the client's request timeout)")
	f.IntVar(&maxPendingPerSession, "max-pending-per-session", mcpexport.DefaultMaxPendingPerSession, "calls of one session that may wait for approval at once; more are refused at once")
	f.IntVar(&maxPending, "max-pending", mcpexport.DefaultMaxPending, "calls that may wait for approval at once, in all")
	f.IntVar(&hopts.MaxSessions, "max-sessions", mcpexport.DefaultMaxSessions, "sessions per HTTP listener; a new one closes the session idle the longest")
	f.DurationVar(&hopts.SessionIdleTimeout, "session-idle-timeout", mcpexport.DefaultSessionIdleTimeout, "close an HTTP session with no request in flight for this long")
	f.DurationVar(&hopts.ReadTimeout, "read-timeout", mcpexport.DefaultReadTimeout, "time a client has to send a request's headers, and again its body")
	f.DurationVar(&hopts.WriteIdleTimeout, "write-idle-timeout", mcpexport.DefaultWriteIdleTimeout, "cut a response the client has not read for this long")
	f.DurationVar(&hopts.KeepAliveTimeout, "keepalive-timeout", mcpexport.DefaultKeepAliveTimeout, "close an idle keep-alive connection after this long")
	return cmd
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
