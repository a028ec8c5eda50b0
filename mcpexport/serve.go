package mcpexport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves one client over the process's stdin and stdout until
// the client closes them or ctx ends. Nothing else may write to stdout.
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.ms.Run(ctx, &mcp.StdioTransport{})
}

// HTTPOptions configure an HTTP listener.
type HTTPOptions struct {
	// SSE serves the legacy HTTP+SSE transport at /sse instead of
	// Streamable HTTP at /mcp.
	SSE bool
	// Stateless serves Streamable HTTP without sessions (the 2026-07-28
	// era); legacy clients then lose their capabilities (no elicitation).
	Stateless bool
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every request but /healthz. It must be set for a non-loopback
	// listener.
	Token string
	// TokenSource names the token where a refused request is told to send
	// it ("Bearer <TokenSource>"); default "the token".
	TokenSource string
}

// Handler returns the HTTP handler of one transport: /mcp (or /sse and
// its message endpoint) behind the origin and token guard, and /healthz.
// go-sdk's DNS-rebinding protection stays on.
func (s *Server) Handler(o *HTTPOptions) http.Handler {
	if o == nil {
		o = &HTTPOptions{}
	}
	source := o.TokenSource
	if source == "" {
		source = "the token"
	}
	get := func(*http.Request) *mcp.Server { return s.ms }
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", healthz)
	if o.SSE {
		mux.Handle("/sse", guard(mcp.NewSSEHandler(get, &mcp.SSEOptions{}), o.Token, source))
	} else {
		mux.Handle("/mcp", guard(mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
			Stateless:      o.Stateless,
			SessionTimeout: time.Hour,
			Logger:         s.log,
		}), o.Token, source))
	}
	return mux
}

// ErrTokenRequired refuses a non-loopback listener without a token.
var ErrTokenRequired = errors.New("a non-loopback address needs a bearer token (HTTPOptions.Token)")

// Listen opens addr for Handler. A non-loopback address is refused unless
// a token is set.
func Listen(addr string, token string) (net.Listener, error) {
	hostport, loopback, err := ListenAddr(addr)
	if err != nil {
		return nil, err
	}
	if !loopback && token == "" {
		return nil, fmt.Errorf("%s is not a loopback address: %w, so that only clients holding the token can connect (make one with: head -c 32 /dev/urandom | base64 > token && chmod 600 token)", hostport, ErrTokenRequired)
	}
	return net.Listen("tcp", hostport)
}

// ServeHTTP serves h on ln until ctx ends, then shuts down gracefully.
func ServeHTTP(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
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
