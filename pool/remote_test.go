//go:build unix

package pool

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/pool/internal/testserver"
)

// mcpHandler serves the test server over streamable HTTP or SSE, and
// records every request's headers.
type recorder struct {
	mu      sync.Mutex
	headers []http.Header
	hits    atomic.Int32
}

func (r *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		r.mu.Lock()
		r.headers = append(r.headers, req.Header.Clone())
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	})
}

func (r *recorder) all() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.headers...)
}

func mcpHandler(kind string) http.Handler {
	srv := testserver.NewServer(&testserver.Config{Tools: []string{"echo"}})
	get := func(*http.Request) *mcp.Server { return srv }
	if kind == "sse" {
		return mcp.NewSSEHandler(get, &mcp.SSEOptions{DisableLocalhostProtection: true})
	}
	return mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{DisableLocalhostProtection: true})
}

func remoteServer(url, transport string, extra map[string]any) map[string]any {
	host := "127.0.0.1"
	if i := strings.Index(url, "://"); i >= 0 {
		h := url[i+3:]
		h = h[:strings.IndexAny(h+"/", "/")]
		if hh, _, err := net.SplitHostPort(h); err == nil {
			h = hh
		}
		host = strings.Trim(h, "[]")
	}
	r := map[string]any{"transport": transport, "url": url, "network": map[string]any{"hosts": []string{host}}}
	for k, v := range extra {
		r[k] = v
	}
	return map[string]any{"remote": r}
}

// Over a loopback literal, both transports work; the bearer token and the
// declared headers come from their environment sources, and nothing else
// of the host's is sent (no cookies, no proxy credentials).
func TestRemoteLoopbackLiteral(t *testing.T) {
	for _, kind := range []string{"streamable-http", "sse"} {
		t.Run(kind, func(t *testing.T) {
			rec := &recorder{}
			mux := http.NewServeMux()
			mux.Handle("/mcp", mcpHandler(kind))
			h := rec.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.SetCookie(w, &http.Cookie{Name: "track", Value: "me"})
				mux.ServeHTTP(w, r)
			}))
			ts := httptest.NewServer(h)
			t.Cleanup(ts.Close)
			f := newFixture(t)
			f.plugin("web", map[string]any{"api": remoteServer(ts.URL+"/mcp", kind, map[string]any{
				"headers": map[string]any{"X-Team": map[string]string{"fromEnv": "TEAM"}},
				"auth":    map[string]any{"bearerFromEnv": "API_TOKEN"},
			})})
			p := f.open(func(o *Options) {
				o.LookupEnv = func(k string) (string, bool) {
					v, ok := map[string]string{"TEAM": "blue", "API_TOKEN": "tok-123", "HTTP_PROXY": "http://127.0.0.1:1"}[k]
					return v, ok
				}
			})
			if got := callText(t, p, "web__api__echo", `{"text":"remote"}`); got != "echo: remote" {
				t.Fatalf("%q %+v", got, status(t, p, "web__api"))
			}
			hs := rec.all()
			if len(hs) < 2 {
				t.Fatalf("%d requests", len(hs))
			}
			for _, h := range hs {
				if h.Get("Authorization") != "Bearer tok-123" || h.Get("X-Team") != "blue" || h.Get("Cookie") != "" || h.Get("Proxy-Authorization") != "" {
					t.Fatalf("request headers %v", h)
				}
			}
			if st := status(t, p, "web__api"); st.Transport != Transport(kind) || st.State != StateRunning {
				t.Fatalf("status %+v", st)
			}
		})
	}
}

func TestRemoteMissingCredential(t *testing.T) {
	f := newFixture(t)
	f.plugin("web", map[string]any{"api": remoteServer("http://127.0.0.1:1/mcp", "streamable-http", map[string]any{
		"auth": map[string]any{"bearerFromEnv": "API_TOKEN"}})})
	p := f.open(nil)
	st := status(t, p, "web__api")
	if st.State != StateFailed || !st.GaveUp || !strings.Contains(st.LastError, "API_TOKEN (for the bearer token)") {
		t.Fatalf("status %+v", st)
	}
}

// tlsNet makes a public-looking name resolve (through the test resolver)
// to addrs and maps every dial to the test TLS server, recording what was
// dialed.
type tlsNet struct {
	ts     *httptest.Server
	mu     sync.Mutex
	dialed []string
	lookup func(n int) []netip.Addr
	n      int
}

func (n *tlsNet) testNetwork() *testNetwork {
	roots := x509.NewCertPool()
	roots.AddCert(n.ts.Certificate())
	return &testNetwork{
		roots: roots,
		resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
			n.mu.Lock()
			defer n.mu.Unlock()
			n.n++
			return n.lookup(n.n), nil
		},
		dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			n.mu.Lock()
			n.dialed = append(n.dialed, addr)
			n.mu.Unlock()
			return (&net.Dialer{}).DialContext(ctx, network, n.ts.Listener.Addr().String())
		},
	}
}

func (n *tlsNet) dials() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.dialed...)
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, x := range s {
		out = append(out, netip.MustParseAddr(x))
	}
	return out
}

// No ambient proxy: with HTTPS_PROXY and HTTP_PROXY pointing at a
// listener, a remote with a public name is reached directly, at the
// checked address.
func TestRemoteIgnoresAmbientProxy(t *testing.T) {
	proxy := &recorder{}
	px := httptest.NewServer(proxy.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "proxy", http.StatusBadGateway) })))
	t.Cleanup(px.Close)
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY"} {
		t.Setenv(k, px.URL)
	}
	t.Setenv("NO_PROXY", "")
	rec := &recorder{}
	ts := httptest.NewTLSServer(rec.wrap(mcpHandler("streamable-http")))
	t.Cleanup(ts.Close)
	tn := &tlsNet{ts: ts, lookup: func(int) []netip.Addr { return addrs("203.0.113.7") }}
	f := newFixture(t)
	f.plugin("web", map[string]any{"api": remoteServer("https://example.com/mcp", "streamable-http", nil)})
	p := f.open(func(o *Options) { o.testNet = tn.testNetwork() })
	if got := callText(t, p, "web__api__echo", `{"text":"direct"}`); got != "echo: direct" {
		t.Fatal(got)
	}
	if proxy.hits.Load() != 0 || rec.hits.Load() == 0 {
		t.Fatalf("proxy saw %d requests, server %d", proxy.hits.Load(), rec.hits.Load())
	}
	for _, d := range tn.dials() {
		if d != "203.0.113.7:443" {
			t.Fatalf("dialed %s, not the checked address", d)
		}
	}
}

// A public name that resolves to a private, loopback, link-local or
// metadata address is refused, and nothing is sent.
func TestRemoteRefusesPrivateAddresses(t *testing.T) {
	rec := &recorder{}
	ts := httptest.NewTLSServer(rec.wrap(mcpHandler("streamable-http")))
	t.Cleanup(ts.Close)
	for _, a := range []string{"127.0.0.1", "::1", "10.0.0.8", "192.168.1.20", "169.254.169.254", "100.100.100.200", "fd00:ec2::254", "fe80::1", "::ffff:127.0.0.1", "fe80::1%eth0", "::1%lo"} {
		t.Run(a, func(t *testing.T) {
			// A mixed answer is refused as a whole.
			tn := &tlsNet{ts: ts, lookup: func(int) []netip.Addr { return addrs("203.0.113.7", a) }}
			f := newFixture(t)
			f.plugin("web", map[string]any{"api": remoteServer("https://example.com/mcp", "streamable-http", nil)})
			p := f.open(func(o *Options) { o.testNet = tn.testNetwork() })
			st := status(t, p, "web__api")
			if st.State != StateFailed || !st.GaveUp || !strings.Contains(st.LastError, "["+RuleRemoteAddress+"]") || !strings.Contains(st.LastError, netip.MustParseAddr(a).Unmap().String()) {
				t.Fatalf("status %+v", st)
			}
			if len(tn.dials()) != 0 || rec.hits.Load() != 0 {
				t.Fatalf("dialed %v, %d requests", tn.dials(), rec.hits.Load())
			}
		})
	}
	t.Run("literal", func(t *testing.T) {
		f := newFixture(t)
		f.plugin("web", map[string]any{"api": remoteServer("https://169.254.169.254/mcp", "streamable-http", nil)})
		p := f.open(nil)
		if st := status(t, p, "web__api"); !strings.Contains(st.LastError, "["+RuleRemoteAddress+"]") {
			t.Fatalf("status %+v", st)
		}
	})
}

// DNS rebinding: every connection resolves and checks again, and dials
// the address it checked; a name that turns into 127.0.0.1 between two
// connections is refused then.
func TestRemoteDNSRebinding(t *testing.T) {
	rec := &recorder{}
	ts := httptest.NewUnstartedServer(rec.wrap(mcpHandler("streamable-http")))
	ts.Config.SetKeepAlivesEnabled(false) // one connection per request
	ts.StartTLS()
	t.Cleanup(ts.Close)
	tn := &tlsNet{ts: ts, lookup: func(n int) []netip.Addr {
		if n == 1 {
			return addrs("203.0.113.7")
		}
		return addrs("127.0.0.1")
	}}
	f := newFixture(t)
	f.plugin("web", map[string]any{"api": remoteServer("https://example.com/mcp", "streamable-http", nil)})
	p := f.open(func(o *Options) { o.testNet = tn.testNetwork() })
	st := status(t, p, "web__api")
	if st.State != StateFailed || !strings.Contains(st.LastError, "127.0.0.1") || !strings.Contains(st.LastError, RuleRemoteAddress) {
		t.Fatalf("status %+v", st)
	}
	d := tn.dials()
	if len(d) != 1 || d[0] != "203.0.113.7:443" {
		t.Fatalf("dials %v", d)
	}
	if rec.hits.Load() != 1 {
		t.Fatalf("%d requests reached the server", rec.hits.Load())
	}
}

// Redirects stay within the reviewed origin: one to another port is
// refused before anything (and no token) reaches it; one within the origin
// is followed.
func TestRemoteRedirects(t *testing.T) {
	other := &recorder{}
	b := httptest.NewServer(other.wrap(mcpHandler("streamable-http")))
	t.Cleanup(b.Close)
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpHandler("streamable-http"))
	mux.Handle("/away", http.RedirectHandler(b.URL+"/mcp", http.StatusTemporaryRedirect))
	mux.Handle("/moved", http.RedirectHandler("/mcp", http.StatusPermanentRedirect))
	a := httptest.NewServer(mux)
	t.Cleanup(a.Close)

	f := newFixture(t)
	f.plugin("web", map[string]any{
		"away":  remoteServer(a.URL+"/away", "streamable-http", map[string]any{"auth": map[string]any{"bearerFromEnv": "TOKEN"}}),
		"moved": remoteServer(a.URL+"/moved", "streamable-http", nil),
	})
	p := f.open(func(o *Options) {
		o.LookupEnv = func(k string) (string, bool) { return "tok", k == "TOKEN" }
	})
	st := status(t, p, "web__away")
	if st.State != StateFailed || !strings.Contains(st.LastError, "["+RuleRemoteRedirect+"]") || !strings.Contains(st.LastError, b.URL) {
		t.Fatalf("status %+v", st)
	}
	if other.hits.Load() != 0 {
		t.Fatalf("the other origin got %d requests", other.hits.Load())
	}
	if got := callText(t, p, "web__moved__echo", `{"text":"same origin"}`); got != "echo: same origin" {
		t.Fatal(got)
	}
}

// An SSE server whose endpoint event names another origin: the POST is
// refused and never sent.
func TestRemoteSSEEndpointOtherOrigin(t *testing.T) {
	other := &recorder{}
	b := httptest.NewServer(other.wrap(http.NotFoundHandler()))
	t.Cleanup(b.Close)
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s/message?sessionid=x\n\n", b.URL)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(a.Close)
	f := newFixture(t)
	f.plugin("web", map[string]any{"events": remoteServer(a.URL+"/sse", "sse", nil)})
	p := f.open(func(o *Options) { o.TerminateGrace = 50e6 })
	st := status(t, p, "web__events")
	if st.State != StateFailed || !st.GaveUp || !strings.Contains(st.LastError, "["+RuleRemoteOrigin+"]") {
		t.Fatalf("status %+v", st)
	}
	if other.hits.Load() != 0 {
		t.Fatalf("the other origin got %d requests", other.hits.Load())
	}
}
