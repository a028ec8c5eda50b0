package pool

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

// startEgress serves an egress proxy for hosts on a loopback listener and
// returns its address.
func startEgress(t *testing.T, hosts []string, tn *testNetwork, upstream string) string {
	t.Helper()
	e, err := newEgressProxy("demo__api", hosts, upstream, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	e.tn = tn
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.serve(ln)
	t.Cleanup(e.close)
	return ln.Addr().String()
}

// proxyGet fetches u through the proxy at addr as a plain-HTTP proxy
// request.
func proxyGet(t *testing.T, proxy, u string) (int, string) {
	t.Helper()
	pu, _ := url.Parse("http://" + proxy)
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}, Timeout: 10 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s through the proxy: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// proxyConnect asks the proxy for a tunnel to hostport; on 200 it sends a
// GET through the tunnel and returns the origin's answer.
func proxyConnect(t *testing.T, proxy, hostport string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", hostport)
	r2, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r2.Body)
	return r2.StatusCode, string(b)
}

func origin(t *testing.T, body string) (*httptest.Server, string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return srv, u.Host
}

func TestEgressAllowsDeclaredHost(t *testing.T) {
	_, hp := origin(t, "hello from the API")
	proxy := startEgress(t, []string{hp}, nil, "")
	if code, body := proxyGet(t, proxy, "http://"+hp+"/v1"); code != 200 || body != "hello from the API" {
		t.Fatalf("plain GET: %d %q", code, body)
	}
	if code, body := proxyConnect(t, proxy, hp); code != 200 || body != "hello from the API" {
		t.Fatalf("CONNECT: %d %q", code, body)
	}
}

func TestEgressRefusesUndeclaredHost(t *testing.T) {
	_, declared := origin(t, "declared")
	_, other := origin(t, "secret")
	proxy := startEgress(t, []string{declared}, nil, "")
	for name, get := range map[string]func() (int, string){
		"plain":   func() (int, string) { return proxyGet(t, proxy, "http://"+other+"/") },
		"connect": func() (int, string) { return proxyConnect(t, proxy, other) },
	} {
		code, body := get()
		if code != http.StatusForbidden || strings.Contains(body, "secret") {
			t.Fatalf("%s to an undeclared host: %d %q, want 403", name, code, body)
		}
		for _, want := range []string{"demo__api", other, "sandbox.network.hosts", "sandbox-unconfined"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: the refusal %q does not name %q", name, body, want)
			}
		}
	}
}

func TestEgressRefusesDeclaredHostsOtherPort(t *testing.T) {
	_, declared := origin(t, "declared")
	_, other := origin(t, "other port")
	_, otherPort, _ := net.SplitHostPort(other)
	proxy := startEgress(t, []string{declared}, nil, "")
	if code, body := proxyConnect(t, proxy, net.JoinHostPort("127.0.0.1", otherPort)); code != http.StatusForbidden {
		t.Fatalf("CONNECT to the declared host's other port: %d %q, want 403", code, body)
	}
}

// fakeDNS resolves every name of names to its address and dials the
// loopback origin at to instead (so that no test reaches a real address).
func fakeDNS(names map[string]string, to string) *testNetwork {
	return &testNetwork{
		resolve: func(_ context.Context, h string) ([]netip.Addr, error) {
			a, ok := names[h]
			if !ok {
				return nil, fmt.Errorf("no such host %s", h)
			}
			return []netip.Addr{netip.MustParseAddr(a)}, nil
		},
		dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, to)
		},
	}
}

func TestEgressRefusesPrivateAddress(t *testing.T) {
	_, hp := origin(t, "internal")
	tn := fakeDNS(map[string]string{"api.example.com": "10.1.2.3", "meta.example.com": "169.254.169.254"}, hp)
	proxy := startEgress(t, []string{"api.example.com:443", "meta.example.com:80"}, tn, "")
	if code, body := proxyConnect(t, proxy, "api.example.com:443"); code != http.StatusBadGateway || !strings.Contains(body, "private") {
		t.Fatalf("CONNECT to a name resolving to a private address: %d %q, want 502 naming it", code, body)
	}
	if code, body := proxyGet(t, proxy, "http://meta.example.com/latest/meta-data/"); code != http.StatusBadGateway || strings.Contains(body, "internal") {
		t.Fatalf("GET of a metadata address: %d %q, want 502", code, body)
	}
}

func TestEgressLoopbackOnlyWhenDeclaredLiterally(t *testing.T) {
	_, hp := origin(t, "loopback origin")
	_, port, _ := net.SplitHostPort(hp)
	tn := fakeDNS(map[string]string{"api.example.com": "127.0.0.1", "localhost": "127.0.0.1"}, hp)
	proxy := startEgress(t, []string{"api.example.com:" + port, "localhost:" + port}, tn, "")
	if code, body := proxyConnect(t, proxy, "api.example.com:"+port); code != http.StatusBadGateway || !strings.Contains(body, "loopback") {
		t.Fatalf("a name that resolves to loopback: %d %q, want 502", code, body)
	}
	if code, body := proxyConnect(t, proxy, "localhost:"+port); code != 200 || body != "loopback origin" {
		t.Fatalf("localhost declared: %d %q, want 200", code, body)
	}
}

func TestEgressWildcard(t *testing.T) {
	r, err := parseHostRule("*.example.com:443")
	if err != nil {
		t.Fatal(err)
	}
	for h, want := range map[string]bool{"api.example.com": true, "a.b.example.com": true, "example.com": false, "evilexample.com": false} {
		if got := r.match(h, "443"); got != want {
			t.Errorf("*.example.com:443 matches %s: %v, want %v", h, got, want)
		}
	}
	for _, bad := range []string{"example.com", "example.com:0", "*.com:443", "*.10.0.0.1:80", "a b:80", "example.com:08"} {
		if _, err := parseHostRule(bad); err == nil {
			t.Errorf("parseHostRule(%q) accepted it", bad)
		}
	}
}

func TestEgressHeadLimit(t *testing.T) {
	_, hp := origin(t, "x")
	proxy := startEgress(t, []string{hp}, nil, "")
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	go fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nX-Big: %s\r\n\r\n", hp, strings.Repeat("a", egressMaxHeader))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("a huge head: %d, want 431", resp.StatusCode)
	}
}

func TestEgressUpstreamProxy(t *testing.T) {
	_, hp := origin(t, "via upstream")
	seen := make(chan string, 1)
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	go func() {
		c, err := up.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		seen <- req.Method + " " + req.Host
		o, err := net.Dial("tcp", req.Host)
		if err != nil {
			return
		}
		defer o.Close()
		io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\n")
		go io.Copy(o, br)
		io.Copy(c, o)
	}()
	proxy := startEgress(t, []string{hp}, nil, "http://"+up.Addr().String())
	if code, body := proxyConnect(t, proxy, hp); code != 200 || body != "via upstream" {
		t.Fatalf("CONNECT through the upstream: %d %q", code, body)
	}
	if got := <-seen; got != "CONNECT "+hp {
		t.Fatalf("the upstream saw %q", got)
	}
	for _, bad := range []string{"https://p:1", "http://u:p@h:1", "http://h", "socks5://h:1", "http://h:1/x"} {
		if _, err := parseUpstreamProxy(bad); err == nil {
			t.Errorf("parseUpstreamProxy(%q) accepted it", bad)
		}
	}
}

func FuzzEgressHostRule(f *testing.F) {
	for _, s := range []string{"api.example.com:443", "*.example.com:443", "[::1]:80", "127.0.0.1:8080", "localhost:1"} {
		f.Add(s, "api.example.com", "443")
	}
	f.Fuzz(func(t *testing.T, rule, host, port string) {
		r, err := parseHostRule(rule)
		if err != nil {
			return
		}
		if r.match(host, port) && port != r.port {
			t.Fatalf("%q matched port %q", rule, port)
		}
	})
}
