package pool

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/publicaddr"
	"github.com/berth-mcp/berth/signin"
)

// Rules of the remote guard, named in its errors and in docs/pool.md.
const (
	RuleRemoteAddress  = "remote-address"  // private, loopback, link-local, metadata addresses refused
	RuleRemoteOrigin   = "remote-origin"   // requests only to the reviewed origin
	RuleRemoteRedirect = "remote-redirect" // redirects only within the reviewed origin
)

// guardError is a refusal of the remote guard. It is permanent: the
// server stays failed.
type guardError struct {
	id, rule, msg string
}

func (e *guardError) Error() string {
	return fmt.Sprintf("server %s: %s [%s]", e.id, e.msg, e.rule)
}

// testNetwork replaces name resolution, the final dial and the TLS roots,
// for the guard's tests only (they make "mcp.test" resolve to an address
// of their choosing and map it to a loopback listener). No exported
// option reaches it.
type testNetwork struct {
	resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	roots   *x509.CertPool
}

// guard is the HTTP client side of one reviewed remote: it talks only to
// the endpoint's origin, over no proxy, to addresses it checked and pinned,
// with credentials only from the declared environment sources.
type guard struct {
	refused atomic.Pointer[guardError] // the first refusal, for the status

	id     string
	ep     *bundle.Endpoint
	header http.Header
	tn     *testNetwork
	base   *http.Transport

	// oauth signs the remote in (auth.oauth): on Streamable HTTP it is the
	// transport's OAuthHandler; the SSE transport has none, so the guard
	// itself sends the handler's token and, on a 401, asks the handler
	// once and retries (sseAuth).
	oauth   *signin.Handler
	sseAuth bool

	// c is the Streamable HTTP connection the guard carries, whose
	// tools/call POSTs and answers it reads for tasks (tasks_http.go);
	// session is the Mcp-Session-Id go-sdk last sent, for berth's own
	// requests.
	c       *conn
	session atomic.Value
}

// newGuard checks the remote's endpoint and reads its credentials.
func newGuard(id string, r *bundle.Remote, src *sources, tn *testNetwork) (*guard, error) {
	ep, err := bundle.ParseEndpoint(r.URL)
	if err != nil {
		return nil, permanent("server %s: %v", id, err)
	}
	g := &guard{id: id, ep: ep, header: http.Header{}, tn: tn}
	for _, k := range slices.Sorted(maps.Keys(r.Headers)) {
		if v, ok := src.lookup(r.Headers[k].FromEnv, "the header "+k); ok {
			g.header.Set(k, v)
		}
	}
	if r.Auth != nil && r.Auth.BearerFromEnv != "" {
		if v, ok := src.lookup(r.Auth.BearerFromEnv, "the bearer token"); ok {
			g.header.Set("Authorization", "Bearer "+v)
		}
	}
	if err := src.missing(id); err != nil {
		return nil, err
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if tn != nil && tn.roots != nil {
		tlsConf.RootCAs = tn.roots
	}
	g.base = &http.Transport{
		Proxy:                 nil, // never an ambient proxy
		DialContext:           g.dial,
		TLSClientConfig:       tlsConf,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		MaxIdleConnsPerHost:   4,
	}
	return g, nil
}

func (g *guard) refuse(rule, format string, args ...any) error {
	e := &guardError{id: g.id, rule: rule, msg: fmt.Sprintf(format, args...)}
	g.refused.CompareAndSwap(nil, e)
	return e
}

// refusal returns the first refusal of the guard; go-sdk flattens some
// transport errors to text, so the pool asks the guard directly.
func (g *guard) refusal() error {
	if e := g.refused.Load(); e != nil {
		return e
	}
	return nil
}

// client returns the guarded HTTP client.
func (g *guard) client() *http.Client {
	return &http.Client{Transport: g, CheckRedirect: g.checkRedirect}
}

// transport returns the MCP client transport of the remote.
func (g *guard) transport(kind Transport) mcp.Transport {
	if kind == TransportSSE {
		g.sseAuth = g.oauth != nil
		return &mcp.SSEClientTransport{Endpoint: g.ep.URL.String(), HTTPClient: g.client()}
	}
	t := &mcp.StreamableClientTransport{Endpoint: g.ep.URL.String(), HTTPClient: g.client()}
	if g.oauth != nil {
		t.OAuthHandler = g.oauth
	}
	return t
}

func (g *guard) close() { g.base.CloseIdleConnections() }

// sameOrigin reports whether u is within the reviewed origin.
func (g *guard) sameOrigin(u *url.URL) bool {
	if u.Scheme != g.ep.URL.Scheme || u.User != nil {
		return false
	}
	h, err := bundle.NormalizeHost(u.Hostname())
	if err != nil || h != g.ep.Host {
		return false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	return port == g.ep.Port
}

// RoundTrip sends a request only to the reviewed origin, with the declared
// headers and bearer token, and nothing else of the host's.
func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if !g.sameOrigin(req.URL) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, g.refuse(RuleRemoteOrigin, "refused a request to %s: the server may be reached only at its reviewed origin %s", redact(req.URL), g.ep.Origin())
	}
	r := req.Clone(req.Context())
	r.Header.Del("Cookie")
	r.Header.Del("Proxy-Authorization")
	for k, v := range g.header {
		if g.oauth != nil && http.CanonicalHeaderKey(k) == "Authorization" {
			continue // the sign-in's token, set by the transport, wins
		}
		r.Header[k] = v
	}
	var resp *http.Response
	var err error
	if g.sseAuth {
		resp, err = g.roundTripSSEAuth(r)
	} else {
		resp, err = g.send(r)
	}
	return resp, rejectSignIn(err)
}

// rejectSignIn marks a request refused for want of a sign-in as rejected
// by the transport (go-sdk's ErrRejected, code -32005, matched through the
// public jsonrpc.Error): go-sdk then returns the error to the call and
// keeps the connection. Without the mark go-sdk takes the failed write of
// an SSE server's POST for a broken connection whenever it looks before
// the call's context ends (TestRemoteSecond401NeedsSignIn/sse failed about
// one run in twenty), and the next call finds the connection gone.
func rejectSignIn(err error) error {
	var ne *signin.NeedSignInError
	if err != nil && errors.As(err, &ne) {
		return &signInRejected{err}
	}
	return err
}

// errTransportRejected is go-sdk's jsonrpc2.ErrRejected, by its code.
var errTransportRejected = &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}

type signInRejected struct{ err error }

func (e *signInRejected) Error() string   { return e.err.Error() }
func (e *signInRejected) Unwrap() []error { return []error{e.err, errTransportRejected} }

// send sends r on the base transport. With a sign-in, the handler sees
// every answer: a 401 right after it renewed the token (a second 401 in
// a row) becomes its *signin.NeedSignInError, the request not run and
// the connection sound, rather than a 401 go-sdk takes for a broken
// connection.
func (g *guard) send(r *http.Request) (*http.Response, error) {
	noteRequestID(r)
	var taskAnswer bool
	if g.c != nil {
		if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
			g.session.Store(sid)
		}
		var err error
		if taskAnswer, err = g.c.tasksOnPost(r); err != nil {
			return nil, err
		}
	}
	var resp *http.Response
	var err error
	if taskAnswer && taskCallFrom(r.Context()) != nil {
		resp, err = g.c.taskRoundTrip(g.base, r) // tasks_http.go
	} else {
		resp, err = g.base.RoundTrip(r)
		if err == nil {
			tapStream(r, resp)
			if taskAnswer {
				if err := g.c.tasksOnAnswer(resp); err != nil {
					resp.Body.Close()
					return nil, err
				}
			}
		}
	}
	if err != nil || g.oauth == nil {
		return resp, err
	}
	if err := g.oauth.Answered(r, resp.StatusCode); err != nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

// roundTripSSEAuth is the OAuth handling the SSE transport lacks: the
// handler's token on every request, and on a 401 (or a 403 for more
// scopes) one Authorize (a refresh, a sign-in through an asker, or a
// *signin.NeedSignInError) and one retry. A request with a body is
// retried only when its body can be replayed (GetBody).
func (g *guard) roundTripSSEAuth(r *http.Request) (*http.Response, error) {
	setToken := func(r *http.Request) error {
		ts, err := g.oauth.TokenSource(r.Context())
		if err != nil || ts == nil {
			r.Header.Del("Authorization")
			return err
		}
		tok, err := ts.Token()
		if err != nil {
			r.Header.Del("Authorization")
			return nil // no token: the server's 401 leads to Authorize
		}
		tok.SetAuthHeader(r)
		return nil
	}
	if err := setToken(r); err != nil {
		return nil, err
	}
	resp, err := g.send(r)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	if err := g.oauth.Authorize(r.Context(), r, resp); err != nil {
		return nil, err
	}
	r2 := r.Clone(r.Context())
	if r.Body != nil && r.Body != http.NoBody {
		if r.GetBody == nil {
			return nil, fmt.Errorf("server %s: signed in, but the request cannot be sent again; try again", g.id)
		}
		b, err := r.GetBody()
		if err != nil {
			return nil, err
		}
		r2.Body = b
	}
	if err := setToken(r2); err != nil {
		return nil, err
	}
	return g.send(r2)
}

func (g *guard) checkRedirect(req *http.Request, via []*http.Request) error {
	if !g.sameOrigin(req.URL) {
		return g.refuse(RuleRemoteRedirect, "refused a redirect from %s to %s: redirects may stay only within the reviewed origin %s", redact(via[len(via)-1].URL), redact(req.URL), g.ep.Origin())
	}
	if len(via) >= 10 {
		return g.refuse(RuleRemoteRedirect, "stopped after 10 redirects")
	}
	return nil
}

// redact drops the query of a URL for messages.
func redact(u *url.URL) string {
	c := *u
	c.RawQuery, c.Fragment, c.User = "", "", nil
	return c.String()
}

// dial resolves the reviewed host, checks every address, and connects to
// a checked address (never to the name again, so a second resolution
// cannot swap the address between the check and the connect).
func (g *guard) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if h, err := bundle.NormalizeHost(host); err != nil || h != g.ep.Host || port != g.ep.Port {
		return nil, g.refuse(RuleRemoteOrigin, "refused to connect to %s: the server may be reached only at %s", addr, net.JoinHostPort(g.ep.Host, g.ep.Port))
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(g.ep.Host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		resolve := func(ctx context.Context, h string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", h)
		}
		if g.tn != nil && g.tn.resolve != nil {
			resolve = g.tn.resolve
		}
		addrs, err = resolve(ctx, g.ep.Host)
		if err != nil {
			return nil, fmt.Errorf("server %s: resolving %s: %w", g.id, g.ep.Host, err)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("server %s: %s has no address", g.id, g.ep.Host)
		}
	}
	for _, a := range addrs {
		a = a.Unmap()
		if g.ep.Loopback {
			if !a.IsLoopback() {
				return nil, g.refuse(RuleRemoteAddress, "%s resolves to %s, which is not a loopback address; a loopback endpoint may reach only 127.0.0.1 or ::1", g.ep.Host, a)
			}
			continue
		}
		if why := refusedAddr(a); why != "" {
			return nil, g.refuse(RuleRemoteAddress, "%s resolves to %s, a %s address; berth refuses those for a remote whose endpoint is not a loopback literal (a public name must not lead into this machine or its network)", g.ep.Host, a, why)
		}
	}
	dial := (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	if g.tn != nil && g.tn.dial != nil {
		dial = g.tn.dial
	}
	var errs []error
	for _, a := range addrs {
		c, err := dial(ctx, network, netip.AddrPortFrom(a.Unmap(), mustPort(port)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("server %s: connecting to %s: %w", g.id, g.ep.Host, errors.Join(errs...))
}

func mustPort(p string) uint16 {
	var n uint16
	for _, c := range p {
		n = n*10 + uint16(c-'0')
	}
	return n
}

// refusedAddr returns why a remote may not be reached at a, or "" when a
// is a public address: publicaddr.Refused, the one list berth's remote
// client and catalog downloads share.
func refusedAddr(a netip.Addr) string { return publicaddr.Refused(a) }
