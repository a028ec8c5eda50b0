package pool

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/publicaddr"
)

// The egress proxy is berth's side of a server's limited network
// (sandbox.NetworkHosts, docs/sandbox.md §Network proxy): the server runs
// in a network namespace with only loopback, and the launcher's listener
// there (sandbox.Launch.Started) is the one way out. The proxy serves HTTP
// CONNECT host:port and plain-HTTP requests with an absolute URI, allows
// only the declared host:port pairs, and resolves each name itself with
// the remotes' rules: private, loopback, link-local and metadata addresses
// are refused unless the declared host is that literal address or
// "localhost", and the connection goes to the address checked (no DNS
// rebinding between check and connect). No ambient proxy variable is
// read; an upstream proxy is used only when the operator set
// sandbox-upstream-proxy.

// Limits of the egress proxy.
const (
	egressMaxHeader   = 32 << 10 // bytes of a request's head
	egressHeadTimeout = 30 * time.Second
	egressDialTimeout = 10 * time.Second
	egressIdleTimeout = 5 * time.Minute // a tunnel with no traffic either way
)

// hostRule is one declared host:port: an exact host (a name, normalized,
// or an IP literal), or "*.suffix" for one or more leading labels.
type hostRule struct {
	host     string // normalized; for a wildcard, the suffix without "*."
	wildcard bool
	port     string
}

// parseHostRule parses a declared "host:port" ("[v6]:port" for an IPv6
// literal; "*.example.com:443" for every name below example.com).
// Whether an entry is allowed at all is bundle.ParseSandboxHost's to say
// (validation at trust, and buildPolicy at each start); this parse stays
// the pool's because the proxy needs the normalized form it matches
// requests against (bundle.NormalizeHost, the wildcard as a suffix).
func parseHostRule(s string) (hostRule, error) {
	h, port, err := net.SplitHostPort(s)
	if err != nil {
		return hostRule{}, fmt.Errorf("not host:port: %v", err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return hostRule{}, fmt.Errorf("the port %q is not a number from 1 to 65535", port)
	}
	r := hostRule{port: port}
	if suffix, ok := strings.CutPrefix(h, "*."); ok {
		r.wildcard = true
		h = suffix
	}
	n, err := bundle.NormalizeHost(h)
	if err != nil {
		return hostRule{}, fmt.Errorf("the host %q: %v", h, err)
	}
	if r.wildcard {
		if _, err := netip.ParseAddr(n); err == nil || !strings.Contains(n, ".") {
			return hostRule{}, fmt.Errorf("a wildcard needs a name with at least two labels after \"*.\"")
		}
	}
	r.host = n
	return r, nil
}

// match reports whether host (normalized) and port are allowed by r.
func (r hostRule) match(host, port string) bool {
	if port != r.port {
		return false
	}
	if r.wildcard {
		return strings.HasSuffix(host, "."+r.host)
	}
	return host == r.host
}

// literal reports whether r names host exactly as an IP literal or
// "localhost": the only way a declaration allows a non-public address.
func (r hostRule) literal() bool {
	if r.wildcard {
		return false
	}
	_, err := netip.ParseAddr(r.host)
	return err == nil || r.host == "localhost"
}

// egressProxy serves one server's egress listener. It is safe for
// concurrent use; close ends the listener and every connection.
type egressProxy struct {
	id       string
	rules    []hostRule
	upstream *url.URL // sandbox-upstream-proxy, nil for none
	tn       *testNetwork
	logf     func(format string, args ...any)

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	ln     net.Listener
	wg     sync.WaitGroup
}

// newEgressProxy makes the proxy of server id for its declared hosts.
// upstream is the operator's sandbox-upstream-proxy ("" for none).
func newEgressProxy(id string, hosts []string, upstream string, logf func(string, ...any)) (*egressProxy, error) {
	e := &egressProxy{id: id, conns: map[net.Conn]struct{}{}, logf: logf}
	if e.logf == nil {
		e.logf = func(string, ...any) {}
	}
	for _, h := range hosts {
		r, err := parseHostRule(h)
		if err != nil {
			return nil, fmt.Errorf("server %s: the declared host %q: %v", id, h, err)
		}
		e.rules = append(e.rules, r)
	}
	if upstream != "" {
		u, err := parseUpstreamProxy(upstream)
		if err != nil {
			return nil, err
		}
		e.upstream = u
	}
	return e, nil
}

// parseUpstreamProxy checks sandbox-upstream-proxy: http://HOST:PORT and
// nothing else (no user, path, query).
func parseUpstreamProxy(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.Port() == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("sandbox-upstream-proxy %q is not http://HOST:PORT; set it with berth config set sandbox-upstream-proxy http://HOST:PORT, or \"\" for none", s)
	}
	return &url.URL{Scheme: "http", Host: u.Host}, nil
}

// serve accepts connections on ln until close. It returns at once.
func (e *egressProxy) serve(ln net.Listener) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		ln.Close()
		return
	}
	e.ln = ln
	e.mu.Unlock()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !e.track(c) {
				c.Close()
				return
			}
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				defer e.untrack(c)
				e.handle(c)
			}()
		}
	}()
}

func (e *egressProxy) track(c net.Conn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.conns[c] = struct{}{}
	return true
}

func (e *egressProxy) untrack(c net.Conn) {
	c.Close()
	e.mu.Lock()
	delete(e.conns, c)
	e.mu.Unlock()
}

// close stops the listener and every connection, and waits for them.
func (e *egressProxy) close() {
	e.mu.Lock()
	e.closed = true
	if e.ln != nil {
		e.ln.Close()
	}
	for c := range e.conns {
		c.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

// handle serves one client connection: one CONNECT (then a tunnel), or
// plain-HTTP requests until the connection ends. Each request's head is
// bounded by egressMaxHeader, as net/http's server bounds it.
func (e *egressProxy) handle(c net.Conn) {
	lr := &io.LimitedReader{R: c, N: egressMaxHeader}
	br := bufio.NewReaderSize(lr, 4096)
	for {
		lr.N = egressMaxHeader
		c.SetReadDeadline(time.Now().Add(egressHeadTimeout))
		req, err := http.ReadRequest(br)
		if err != nil {
			if lr.N <= 0 {
				e.reply(c, http.StatusRequestHeaderFieldsTooLarge, "berth: the request's head is larger than berth's egress proxy accepts")
			}
			return
		}
		lr.N = math.MaxInt64
		c.SetReadDeadline(time.Time{})
		if req.Method == http.MethodConnect {
			e.connect(c, br, req)
			return
		}
		if !e.plain(c, req) {
			return
		}
	}
}

// target checks host:port against the declaration and returns the
// normalized host, or an error for the server's client.
func (e *egressProxy) target(hostport string) (host, port string, rule hostRule, err error) {
	h, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", "", hostRule{}, fmt.Errorf("%q is not host:port", hostport)
	}
	host, err = bundle.NormalizeHost(h)
	if err != nil {
		return "", "", hostRule{}, fmt.Errorf("%q is not a host name", h)
	}
	for _, r := range e.rules {
		if r.match(host, port) {
			return host, port, r, nil
		}
	}
	return "", "", hostRule{}, &egressDenied{id: e.id, host: net.JoinHostPort(host, port)}
}

// egressDenied is a request for a host:port the server did not declare.
type egressDenied struct{ id, host string }

func (d *egressDenied) Error() string {
	return fmt.Sprintf("berth: server %s may not reach %s: its sandbox does not declare it. The bundle's publisher can add %q to the server's sandbox.network.hosts (then trust the new version), or the operator can run it unconfined with berth config set sandbox-unconfined %s", d.id, d.host, d.host, d.id)
}

// dial resolves host itself and connects to a checked address (or, with
// an upstream proxy, asks it for a tunnel to that address).
func (e *egressProxy) dial(ctx context.Context, host, port string, rule hostRule) (net.Conn, error) {
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		resolve := func(ctx context.Context, h string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", h)
		}
		if e.tn != nil && e.tn.resolve != nil {
			resolve = e.tn.resolve
		}
		var err error
		if addrs, err = resolve(ctx, host); err != nil {
			return nil, fmt.Errorf("resolving %s: %w", host, err)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("%s has no address", host)
		}
	}
	for _, a := range addrs {
		a = a.Unmap()
		if host == "localhost" && rule.literal() {
			if !a.IsLoopback() {
				return nil, fmt.Errorf("localhost resolves to %s, not a loopback address", a)
			}
			continue
		}
		if why := publicaddr.Refused(a); why != "" && !rule.literal() {
			return nil, fmt.Errorf("%s resolves to %s, a %s address; berth's egress proxy refuses those unless the server declares that address literally", host, a, why)
		}
	}
	dial := (&net.Dialer{Timeout: egressDialTimeout, KeepAlive: 30 * time.Second}).DialContext
	if e.tn != nil && e.tn.dial != nil {
		dial = e.tn.dial
	}
	var errs []error
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a.Unmap(), mustPort(port)).String()
		var c net.Conn
		var err error
		if e.upstream != nil {
			c, err = e.viaUpstream(ctx, dial, ap)
		} else {
			c, err = dial(ctx, "tcp", ap)
		}
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("connecting to %s: %w", net.JoinHostPort(host, port), errors.Join(errs...))
}

// viaUpstream opens a CONNECT tunnel to addr through the operator's
// upstream proxy.
func (e *egressProxy) viaUpstream(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), addr string) (net.Conn, error) {
	c, err := dial(ctx, "tcp", e.upstream.Host)
	if err != nil {
		return nil, fmt.Errorf("the upstream proxy %s: %w", e.upstream.Host, err)
	}
	c.SetDeadline(time.Now().Add(egressHeadTimeout))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
	br := bufio.NewReader(io.LimitReader(c, egressMaxHeader))
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("the upstream proxy %s: %w", e.upstream.Host, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, fmt.Errorf("the upstream proxy %s answered %s to CONNECT %s", e.upstream.Host, resp.Status, addr)
	}
	if br.Buffered() > 0 {
		c.Close()
		return nil, fmt.Errorf("the upstream proxy %s sent data before the tunnel opened", e.upstream.Host)
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// connect serves CONNECT host:port: checked, dialled, then a tunnel.
func (e *egressProxy) connect(c net.Conn, br *bufio.Reader, req *http.Request) {
	host, port, rule, err := e.target(req.Host)
	if err != nil {
		e.deny(c, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), egressDialTimeout+5*time.Second)
	up, err := e.dial(ctx, host, port, rule)
	cancel()
	if err != nil {
		e.logf("egress proxy: CONNECT %s refused: %v", req.Host, err)
		e.reply(c, http.StatusBadGateway, fmt.Sprintf("berth: server %s: %v", e.id, err))
		return
	}
	if !e.track(up) {
		up.Close()
		return
	}
	defer e.untrack(up)
	io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	e.logf("egress proxy: tunnel to %s", net.JoinHostPort(host, port))
	pipeIdle(c, br, up)
}

// plain serves one absolute-URI HTTP request; it reports whether the
// connection may serve another.
func (e *egressProxy) plain(c net.Conn, req *http.Request) bool {
	if req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" {
		e.reply(c, http.StatusBadRequest, "berth's egress proxy serves CONNECT host:port and plain http requests with an absolute URI (http://host/path)")
		return false
	}
	hp := req.URL.Host
	if req.URL.Port() == "" {
		hp = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	host, port, rule, err := e.target(hp)
	if err != nil {
		e.deny(c, err)
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	up, err := e.dial(ctx, host, port, rule)
	if err != nil {
		e.logf("egress proxy: %s %s refused: %v", req.Method, redact(req.URL), err)
		e.reply(c, http.StatusBadGateway, fmt.Sprintf("berth: server %s: %v", e.id, err))
		return false
	}
	if !e.track(up) {
		up.Close()
		return false
	}
	defer e.untrack(up)
	req.RequestURI = ""
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	req.Close = true
	if e.upstream == nil {
		// Origin form to the server itself.
		req.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
		if req.URL.Path == "" {
			req.URL.Path = "/"
		}
	}
	up.SetDeadline(time.Now().Add(2 * time.Minute))
	if err := req.Write(up); err != nil {
		e.reply(c, http.StatusBadGateway, fmt.Sprintf("berth: server %s: writing to %s: %v", e.id, hp, err))
		return false
	}
	resp, err := http.ReadResponse(bufio.NewReader(up), req)
	if err != nil {
		e.reply(c, http.StatusBadGateway, fmt.Sprintf("berth: server %s: reading from %s: %v", e.id, hp, err))
		return false
	}
	defer resp.Body.Close()
	resp.Close = true
	resp.Write(c)
	return false
}

// deny answers 403 with the refusal, naming the server, the host and how
// to allow it.
func (e *egressProxy) deny(c net.Conn, err error) {
	e.logf("egress proxy: %v", err)
	e.reply(c, http.StatusForbidden, err.Error())
}

func (e *egressProxy) reply(c net.Conn, code int, body string) {
	body += "\n"
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", code, http.StatusText(code), len(body), body)
}

// pipeIdle copies both ways until either side ends or nothing moves for
// egressIdleTimeout. br holds bytes the client sent after its CONNECT.
func pipeIdle(c net.Conn, br *bufio.Reader, up net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst net.Conn, src io.Reader, srcConn net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			srcConn.SetReadDeadline(time.Now().Add(egressIdleTimeout))
			n, err := src.Read(buf)
			if n > 0 {
				dst.SetWriteDeadline(time.Now().Add(egressIdleTimeout))
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		if tc, ok := dst.(interface{ CloseWrite() error }); ok {
			tc.CloseWrite()
		} else {
			dst.Close()
		}
		done <- struct{}{}
	}
	go cp(up, br, c)
	go cp(c, up, up)
	<-done
	<-done
}
