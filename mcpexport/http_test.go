package mcpexport

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// post sends an initialize request to the handler on a real loopback
// listener, so go-sdk's DNS-rebinding protection sees a loopback address.
func post(t *testing.T, h http.Handler, path string, header map[string]string) (int, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	return res.StatusCode, string(body)
}

const testToken = "test-token-0123456789-0123456789-abcdef"

func TestHTTPSecurity(t *testing.T) {
	e := newEnv(t, nil)
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	with := func(kv ...string) map[string]string {
		m := map[string]string{"Authorization": "Bearer " + testToken}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	h := e.srv.Handler(&HTTPOptions{Token: testToken})
	if code, body := post(t, h, "/mcp", auth); code != http.StatusOK {
		t.Fatalf("loopback request with the token: %d %s", code, body)
	}
	if code, body := post(t, h, "/mcp", with("Origin", "https://evil.example")); code != http.StatusForbidden || !strings.Contains(body, "cross-origin") {
		t.Fatalf("cross-origin request: %d %s", code, body)
	}
	if code, _ := post(t, h, "/mcp", with("Origin", "http://localhost:6274")); code != http.StatusOK {
		t.Fatalf("loopback origin refused: %d", code)
	}
	if code, body := post(t, h, "/mcp", with("Host", "evil.example:8931")); code != http.StatusForbidden || !strings.Contains(body, "Host") {
		t.Fatalf("DNS-rebinding Host: %d %s", code, body)
	}

	sse := e.srv.Handler(&HTTPOptions{SSE: true, Token: testToken})
	if code, _ := post(t, sse, "/sse", with("Origin", "https://evil.example")); code != http.StatusForbidden {
		t.Fatalf("cross-origin SSE request: %d", code)
	}
	if code, _ := post(t, sse, "/sse", with("Host", "evil.example:8931")); code != http.StatusForbidden {
		t.Fatalf("DNS-rebinding Host on SSE: %d", code)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	res, err := http.Get(srv.URL + "/healthz")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("healthz without auth: %v %v", res, err)
	}

	// --unsafe-no-token serves loopback requests without one.
	open := e.srv.Handler(&HTTPOptions{UnsafeNoToken: true})
	if code, body := post(t, open, "/mcp", nil); code != http.StatusOK {
		t.Fatalf("unsafe-no-token loopback request: %d %s", code, body)
	}
	mustPanic(t, "neither Token nor UnsafeNoToken", func() { e.srv.Handler(&HTTPOptions{}) })
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", what)
		}
	}()
	f()
}

// TestLoopbackNeedsTheToken: every request to both HTTP transports, on a
// loopback address too, needs "Authorization: Bearer <token>"; without it,
// or with a wrong one, 401 with WWW-Authenticate: Bearer.
func TestLoopbackNeedsTheToken(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct {
		o    HTTPOptions
		path string
	}{{HTTPOptions{Token: testToken}, "/mcp"}, {HTTPOptions{Token: testToken, Stateless: true}, "/mcp"}, {HTTPOptions{Token: testToken, SSE: true}, "/sse"}} {
		h := e.srv.Handler(&tc.o)
		srv := httptest.NewServer(h)
		for _, authz := range []string{"", "Bearer wrong", "Bearer " + testToken + "x", "Basic " + testToken, "Bearer"} {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+tc.path, strings.NewReader(initBody))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if authz != "" {
				req.Header.Set("Authorization", authz)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s %+v with %q: %d, WWW-Authenticate %q; want 401 and Bearer", tc.path, tc.o, authz, res.StatusCode, res.Header.Get("WWW-Authenticate"))
			}
		}
		for _, authz := range []string{"Bearer " + testToken, "bearer " + testToken} {
			if code, body := post(t, h, tc.path, map[string]string{"Authorization": authz}); code != http.StatusOK && !(tc.o.SSE && code == http.StatusBadRequest) {
				t.Errorf("%s %+v with the token: %d %s", tc.path, tc.o, code, body)
			}
		}
		srv.Close()
	}
}

func TestListenRefusesWithoutToken(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "0.0.0.0:0"} {
		_, err := Listen(addr, &HTTPOptions{})
		if !errors.Is(err, ErrTokenRequired) || !strings.Contains(err.Error(), "HTTPOptions.Token") {
			t.Fatalf("%s without a token: %v", addr, err)
		}
	}
	if _, err := Listen("0.0.0.0:0", &HTTPOptions{UnsafeNoToken: true}); !errors.Is(err, ErrUnsafeNoTokenNotLoopback) {
		t.Fatalf("UnsafeNoToken on a non-loopback address: %v", err)
	}
	ln, err := Listen(":0", &HTTPOptions{UnsafeNoToken: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); host != "127.0.0.1" {
		t.Fatalf("an address without a host listened on %s, not loopback", host)
	}
	ln2, err := Listen("0.0.0.0:0", &HTTPOptions{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	ln2.Close()
}

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "token")
	os.WriteFile(p, []byte(strings.Repeat("a", 40)+"\n"), 0o644)
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o620} {
		os.Chmod(p, mode)
		if _, err := ReadTokenFile(p); err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Fatalf("a token file of mode %v was accepted: %v", mode, err)
		}
	}
	os.Chmod(p, 0o600)
	if tok, err := ReadTokenFile(p); err != nil || tok != strings.Repeat("a", 40) {
		t.Fatalf("%q %v", tok, err)
	}
	os.WriteFile(p, []byte("short"), 0o600)
	if _, err := ReadTokenFile(p); err == nil {
		t.Fatal("a short token was accepted")
	}
	if _, err := ReadTokenFile(dir); err == nil {
		t.Fatal("a directory was accepted as a token file")
	}
}

// TestLoadOrCreateToken: the default token is made once (32 random
// bytes, mode 0600) and reused; a symbolic link in its place is refused.
func TestLoadOrCreateToken(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "home", "serve.token")
	tok, created, err := LoadOrCreateToken(p)
	if err != nil || !created || len(tok) != 43 {
		t.Fatalf("first use: %q %v %v", tok, created, err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the token file: %v %v", fi, err)
	}
	again, created, err := LoadOrCreateToken(p)
	if err != nil || created || again != tok {
		t.Fatalf("second use: %q %v %v, want the same token", again, created, err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(p)); len(entries) != 1 {
		t.Fatalf("left behind: %v", entries)
	}
	link := filepath.Join(dir, "link.token")
	os.Symlink(p, link)
	if _, _, err := LoadOrCreateToken(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("a symlinked token file: %v", err)
	}
	os.Chmod(p, 0o644)
	if _, _, err := LoadOrCreateToken(p); err == nil {
		t.Fatal("a world-readable default token file was accepted")
	}
}

// TestStreamableAndSSEOverTheWire serves both HTTP transports on loopback
// and calls an allowed tool through each with go-sdk clients.
func TestStreamableAndSSEOverTheWire(t *testing.T) {
	e := newEnv(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, o := range []HTTPOptions{{}, {Stateless: true}, {SSE: true}} {
		o.Token = testToken
		ln, err := Listen("127.0.0.1:0", &o)
		if err != nil {
			t.Fatal(err)
		}
		serveOn(t, ln, e.srv.Handler(&o), &o)
		var tr mcp.Transport
		base := "http://" + ln.Addr().String()
		switch {
		case o.SSE:
			tr = &mcp.SSEClientTransport{Endpoint: base + "/sse", HTTPClient: bearerClient(testToken)}
		default:
			tr = &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: bearerClient(testToken)}
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "wire", Version: "1"}, nil)
		cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
		cs, err := c.Connect(cctx, tr, nil)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		// The echo tool is not allowed and this client cannot elicit: the
		// call waits in the queue; approve it from "another terminal". The
		// entry says how the client came and that it had the token.
		want := TransportHTTP
		switch {
		case o.SSE:
			want = TransportSSE
		case o.Stateless:
			want = TransportStateless
		}
		go func() {
			p := nextPending(t, e.srv.queue)
			if p == nil {
				return
			}
			if p.Transport != want || !p.Authenticated || p.Client != "wire 1" || p.Session == "" {
				t.Errorf("%+v: pending %+v, want transport %s, authenticated", o, p, want)
			}
			if _, err := e.srv.queue.Decide(p.ID, true, false, "test"); err != nil {
				t.Error(err)
			}
		}()
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: echoTool, Arguments: map[string]any{"text": "wire"}})
		if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "echo: wire" {
			t.Fatalf("%+v: %+v %v", o, res, err)
		}
		cs.Close()
		ccancel()
	}
}

// bearerClient sends "Authorization: Bearer token" with every request.
func bearerClient(token string) *http.Client {
	return &http.Client{Transport: bearer{token, http.DefaultTransport}}
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
