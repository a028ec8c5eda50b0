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
		stateless                               bool
		approvalTimeout                         time.Duration
	)
	cmd := &cobra.Command{
		Use: "serve [--workspace DIR] [--sse ADDR | --http ADDR [--stateless]] [--token-file FILE]",
		Example: `  berth serve --workspace ~/src/project
  berth serve --http :8931
  berth serve --http 0.0.0.0:8931 --token-file ~/.config/berth/token`,
		Short: "Serve the workspace's tools to MCP clients, with approval by default",
		Long: `Serve is an MCP server that offers the tools, prompts and resources of the
plugins enabled in a workspace (default: the current directory). Without
--sse or --http it serves one client over stdio: the way Claude Desktop and
other clients launch it (berth connect writes that entry for you).

--http ADDR serves Streamable HTTP at /mcp (stateful; --stateless for the
2026-07-28 era); --sse ADDR serves the legacy HTTP+SSE transport at /sse.
An ADDR without a host (":8931") listens on 127.0.0.1. A non-loopback ADDR
needs --token-file: every request must then carry "Authorization: Bearer
<token>". Requests from non-loopback web origins are refused; /healthz
answers without auth.

A call runs only if the policy allows it (berth policy set TOOL allow) or a
human approves it: in the client (elicitation or input requests), or with
'berth approve ID' while it waits in the queue (--approval-timeout, then it
is refused). Decisions go to $BERTH_HOME/audit.log. Logs go to stderr.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if stateless && httpAddr == "" {
				return usagef("--stateless applies to --http only")
			}
			if approvalTimeout <= 0 {
				return usagef("--approval-timeout must be positive")
			}
			token := ""
			if tokenFile != "" {
				t, err := mcpexport.ReadTokenFile(tokenFile)
				if err != nil {
					return err
				}
				token = t
			}
			if a.getenv("GOGC") == "" {
				// Every relayed call decodes JSON twice through go-sdk, which
				// allocates generously; a larger GC target cuts berth's CPU
				// per call by about a fifth (bench/README.md). GOGC overrides.
				debug.SetGCPercent(400)
			}
			ctx := cmd.Context()
			// Listen first: a refused address fails before anything starts.
			type listener struct {
				o    *mcpexport.HTTPOptions
				addr string
				ln   net.Listener
			}
			var lns []*listener
			const tokenSource = "the token of --token-file"
			if sseAddr != "" {
				lns = append(lns, &listener{o: &mcpexport.HTTPOptions{SSE: true, Token: token, TokenSource: tokenSource}, addr: sseAddr})
			}
			if httpAddr != "" {
				lns = append(lns, &listener{o: &mcpexport.HTTPOptions{Stateless: stateless, Token: token, TokenSource: tokenSource}, addr: httpAddr})
			}
			for _, l := range lns {
				if err := needToken(l.addr, token); err != nil {
					return err
				}
				ln, err := mcpexport.Listen(l.addr, token)
				if err != nil {
					return err
				}
				defer ln.Close()
				l.ln = ln
			}
			log := slog.New(slog.NewTextHandler(a.stderr, nil))
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
			p, err := pool.Open(ctx, st, workspace, &pool.Options{Secrets: secretLookup(sec)})
			if err != nil {
				return err
			}
			defer p.Close()
			a.logServeStart(log, st, p.WorkspaceDir())
			srv := mcpexport.New(p, &mcpexport.Options{ApprovalTimeout: approvalTimeout, Logger: log})
			defer srv.Close()
			if len(lns) == 0 {
				log.Info("berth serve: serving over stdio", "workspace", p.WorkspaceDir())
				err := srv.ServeStdio(ctx)
				if errors.Is(err, context.Canceled) {
					return nil
				}
				return err
			}
			g, gctx := errgroup.WithContext(ctx)
			for _, l := range lns {
				ln := l.ln
				path := "/mcp"
				if l.o.SSE {
					path = "/sse"
				}
				log.Info("berth serve: listening", "url", "http://"+ln.Addr().String()+path, "workspace", p.WorkspaceDir(), "stateless", l.o.Stateless, "token", token != "")
				h := srv.Handler(l.o)
				g.Go(func() error { return mcpexport.ServeHTTP(gctx, ln, h) })
			}
			return g.Wait()
		},
	}
	f := cmd.Flags()
	f.StringVar(&workspace, "workspace", "", "the workspace whose enabled plugins to serve (default: the current directory)")
	f.StringVar(&sseAddr, "sse", "", "serve the legacy HTTP+SSE transport at ADDR (/sse)")
	f.StringVar(&httpAddr, "http", "", "serve Streamable HTTP at ADDR (/mcp)")
	f.BoolVar(&stateless, "stateless", false, "serve Streamable HTTP without sessions (the 2026-07-28 era)")
	f.StringVar(&tokenFile, "token-file", "", "require this bearer token (needed for a non-loopback ADDR)")
	f.DurationVar(&approvalTimeout, "approval-timeout", mcpexport.DefaultApprovalTimeout, "how long a call waits in the approval queue before it is refused")
	return cmd
}

// needToken refuses a non-loopback address without --token-file, before
// mcpexport.Listen would (in the words of its options).
func needToken(addr, token string) error {
	hostport, loopback, err := mcpexport.ListenAddr(addr)
	if err != nil || loopback || token != "" {
		return nil // Listen reports a bad address
	}
	return &rendered{
		msg: fmt.Sprintf("%s is not a loopback address: a non-loopback address needs --token-file, so that only clients holding the token can connect (make one with: head -c 32 /dev/urandom | base64 > token && chmod 600 token)", hostport),
		err: mcpexport.ErrTokenRequired,
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
