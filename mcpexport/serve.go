package mcpexport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/sockpeer"
	"github.com/berth-mcp/berth/internal/stdioframe"
)

// ServeStdio serves one client over the process's stdin and stdout until
// the client closes them or ctx ends. Nothing else may write to stdout.
// The client's first message names its protocol era, which the pool is
// told (pool.Pool.SetUpstreamEra: a pool opened with AwaitUpstreamEra
// speaks it to the plugin servers).
func (s *Server) ServeStdio(ctx context.Context) error {
	// berth's framing of stdio (internal/stdioframe): go-sdk's
	// StdioTransport, decoding each message once instead of three times.
	return s.serveOne(ctx, stdioframe.Stdio())
}

// serveOne serves the one client of t as ServeStdio does.
func (s *Server) serveOne(ctx context.Context, t mcp.Transport) error {
	ctx, _ = withLife(withOrigin(ctx, origin{Transport: TransportStdio, Authenticated: true}), errSessionGone)
	// The session's tasks (tasks_stdio.go) belong to it alone.
	owner := newStdioTaskOwner()
	ctx = context.WithValue(ctx, taskOwnerKey{}, owner)
	return s.ms.Run(ctx, &taskTransport{Transport: &eraTransport{Transport: s.checked(t), set: s.pool.SetUpstreamEra}, s: s, owner: owner, ctx: ctx})
}

// Connect serves one client over t, as ServeStdio does over stdio: every
// request's params are checked before go-sdk decodes them. (Connecting
// MCPServer directly skips that check; tool arguments are still checked.)
// When ctx ends, the calls of the session that wait for a human are
// withdrawn.
func (s *Server) Connect(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, error) {
	ctx, _ = withLife(ctx, errSessionGone)
	return s.ms.Connect(ctx, s.checked(t), nil)
}

func (s *Server) checked(t mcp.Transport) mcp.Transport {
	return &checkedTransport{Transport: t, log: s.logRefused}
}

func (s *Server) logRefused(method string, err error) {
	s.log.Warn("refused a request with ambiguous params", "method", method, "error", err)
}

// Defaults of HTTPOptions.
const (
	DefaultMaxSessions        = 256
	DefaultSessionIdleTimeout = 10 * time.Minute
	DefaultReadTimeout        = 30 * time.Second
	DefaultWriteIdleTimeout   = 30 * time.Second
	DefaultKeepAliveTimeout   = 60 * time.Second
)

// HTTPOptions configure an HTTP listener.
type HTTPOptions struct {
	// SSE serves the legacy HTTP+SSE transport at /sse instead of
	// Streamable HTTP at /mcp.
	SSE bool
	// Stateless serves Streamable HTTP without sessions (the 2026-07-28
	// era); legacy clients then lose their capabilities (no elicitation).
	Stateless bool
	// Token is required as "Authorization: Bearer <token>" on every
	// request but /healthz, on every address (MinTokenLen characters at
	// least). It must be set unless UnsafeNoToken is.
	Token string
	// UnsafeNoToken serves without a token. Any local user can then call
	// the workspace's tools and answer its approval forms; it is accepted
	// on a loopback address only.
	UnsafeNoToken bool
	// TokenSource names the token where a refused request is told to send
	// it ("Bearer <TokenSource>"); default "the token".
	TokenSource string
	// MaxSessions caps the sessions of the listener (Streamable HTTP and
	// SSE; stateless requests have none). When a new session would pass
	// it, the session idle the longest is closed; when none is idle, the
	// new one is refused (503). Default DefaultMaxSessions.
	MaxSessions int
	// SessionIdleTimeout closes a session that has had no request in
	// flight for this long. Default DefaultSessionIdleTimeout.
	SessionIdleTimeout time.Duration
	// ReadTimeout bounds reading a request's headers, and again its
	// body. Default DefaultReadTimeout.
	ReadTimeout time.Duration
	// WriteIdleTimeout cuts a response that cannot write for this long
	// (a client that stopped reading). Streams that are merely quiet are
	// not cut. Default DefaultWriteIdleTimeout.
	WriteIdleTimeout time.Duration
	// KeepAliveTimeout closes an idle keep-alive connection. Default
	// DefaultKeepAliveTimeout.
	KeepAliveTimeout time.Duration
	// Logger receives what Listen's peer check refuses, and why a
	// listener cannot check its peers. Default slog.Default().
	Logger *slog.Logger
}

func (o *HTTPOptions) withDefaults() *HTTPOptions {
	c := *o
	if c.TokenSource == "" {
		c.TokenSource = "the token"
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	if c.SessionIdleTimeout <= 0 {
		c.SessionIdleTimeout = DefaultSessionIdleTimeout
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.WriteIdleTimeout <= 0 {
		c.WriteIdleTimeout = DefaultWriteIdleTimeout
	}
	if c.KeepAliveTimeout <= 0 {
		c.KeepAliveTimeout = DefaultKeepAliveTimeout
	}
	return &c
}

// Handler returns the HTTP handler of one transport: /mcp (or /sse and
// its message endpoint) for the Server's own view, and /profiles/NAME/mcp
// (or /profiles/NAME/sse) for each profile of the workspace, served by a
// sibling of the Server made on first use (WithView), all behind the
// origin and token guard; and /healthz. Each path keeps its own
// sessions; MaxSessions counts those of every path. A NAME the state does
// not hold at the time of a request is refused (404), and so is every
// other profile when the Server's view is a profile. go-sdk's
// DNS-rebinding protection stays on. It panics when o sets neither Token
// nor UnsafeNoToken, or both.
func (s *Server) Handler(o *HTTPOptions) http.Handler {
	if o == nil {
		o = &HTTPOptions{}
	}
	if (o.Token == "") == !o.UnsafeNoToken {
		panic("mcpexport: HTTPOptions needs a Token, or UnsafeNoToken (loopback only), not both")
	}
	o = o.withDefaults()
	rt := &router{s: s, o: o, cap: &sessionCap{sessions: map[sessionAt]*sessionUse{}}, fronts: map[string]*front{}}
	transport, endpoint := TransportHTTP, "/mcp"
	switch {
	case o.SSE:
		transport, endpoint = TransportSSE, "/sse"
	case o.Stateless:
		transport = TransportStateless
	}
	rt.endpoint = endpoint
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", healthz)
	mux.Handle(endpoint, guard(rt.front(endpoint, s), o, transport, o.TokenSource))
	mux.Handle(profilesPrefix, guard(http.HandlerFunc(rt.serveProfile), o, transport, o.TokenSource))
	return mux
}

// newFront makes the front of one path, with a go-sdk handler of its own.
func (s *Server) newFront(o *HTTPOptions, path string, c *sessionCap) *front {
	get := func(*http.Request) *mcp.Server { return s.ms }
	f := &front{s: s, o: o, path: path, cap: c}
	if o.SSE {
		f.sdk = mcp.NewSSEHandler(get, &mcp.SSEOptions{})
		return f
	}
	f.sdk = mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Stateless:                    o.Stateless,
		SessionTimeout:               o.SessionIdleTimeout,
		Logger:                       s.log,
		PropagateRequestCancellation: true,
	})
	return f
}

// ErrTokenRequired refuses a listener without a token.
var ErrTokenRequired = errors.New("an HTTP listener needs a bearer token (HTTPOptions.Token)")

// ErrUnsafeNoTokenNotLoopback refuses HTTPOptions.UnsafeNoToken on an
// address that is not a loopback one.
var ErrUnsafeNoTokenNotLoopback = errors.New("serving without a token is allowed on a loopback address only (HTTPOptions.UnsafeNoToken)")

// Listen opens addr for Handler(o). It refuses a listener without a token
// unless o.UnsafeNoToken is set and the address is a loopback one or a
// Unix-domain socket.
//
// addr "unix:PATH" listens on a Unix-domain socket (listenUnix: its
// directory the user's alone). Where the system identifies the peers of
// a listener (PeerCheck: a Unix-domain socket by SO_PEERCRED, loopback
// TCP on Linux by sock_diag), a connection of another user is closed as
// soon as it is accepted, before any HTTP is read, and logged; on a Unix
// socket so identified the owner's requests need no token (a token sent
// must still be the right one).
//
// When a TCP address is taken by another user's socket, the error is a
// *PortTakenError.
func Listen(addr string, o *HTTPOptions) (net.Listener, error) {
	if o == nil {
		o = &HTTPOptions{}
	}
	if path, ok := UnixPath(addr); ok {
		if o.Token == "" && !o.UnsafeNoToken {
			return nil, fmt.Errorf("%s: %w, so that only clients holding it can connect (make one with: head -c 32 /dev/urandom | base64 > token && chmod 600 token)", addr, ErrTokenRequired)
		}
		return listenUnix(path, o)
	}
	hostport, loopback, err := ListenAddr(addr)
	if err != nil {
		return nil, err
	}
	switch {
	case o.Token == "" && !o.UnsafeNoToken:
		return nil, fmt.Errorf("%s: %w, so that only clients holding it can connect (make one with: head -c 32 /dev/urandom | base64 > token && chmod 600 token)", hostport, ErrTokenRequired)
	case o.Token == "" && !loopback:
		return nil, fmt.Errorf("%s is not a loopback address: %w", hostport, ErrUnsafeNoTokenNotLoopback)
	}
	ln, err := net.Listen("tcp", hostport)
	if err != nil {
		return nil, portTaken(hostport, err)
	}
	if !loopback {
		return ln, nil
	}
	return guardPeers(ln, o), nil
}

// ServeHTTP serves h on ln until ctx ends, then shuts down gracefully.
// The header read timeout and the keep-alive timeout come from o (nil:
// the defaults); the handler of Handler bounds bodies and writes itself.
func ServeHTTP(ctx context.Context, ln net.Listener, h http.Handler, o *HTTPOptions) error {
	if o == nil {
		o = &HTTPOptions{}
	}
	o = o.withDefaults()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: o.ReadTimeout, IdleTimeout: o.KeepAliveTimeout, ConnContext: sockpeer.ConnContext}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// Long-lived streams (SSE, a Streamable HTTP GET) never go idle, so
		// Shutdown cuts them at its deadline and reports that; it is how
		// serving ends, not a failure.
		_ = srv.Shutdown(sctx)
		return nil
	}
}
