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

func TestHTTPSecurity(t *testing.T) {
	e := newEnv(t, nil)
	h := e.srv.Handler(&HTTPOptions{})
	if code, body := post(t, h, "/mcp", nil); code != http.StatusOK {
		t.Fatalf("plain loopback request: %d %s", code, body)
	}
	if code, body := post(t, h, "/mcp", map[string]string{"Origin": "https://evil.example"}); code != http.StatusForbidden || !strings.Contains(body, "cross-origin") {
		t.Fatalf("cross-origin request: %d %s", code, body)
	}
	if code, _ := post(t, h, "/mcp", map[string]string{"Origin": "http://localhost:6274"}); code != http.StatusOK {
		t.Fatalf("loopback origin refused: %d", code)
	}
	if code, body := post(t, h, "/mcp", map[string]string{"Host": "evil.example:8931"}); code != http.StatusForbidden || !strings.Contains(body, "Host") {
		t.Fatalf("DNS-rebinding Host: %d %s", code, body)
	}

	sse := e.srv.Handler(&HTTPOptions{SSE: true})
	if code, _ := post(t, sse, "/sse", map[string]string{"Origin": "https://evil.example"}); code != http.StatusForbidden {
		t.Fatalf("cross-origin SSE request: %d", code)
	}
	if code, _ := post(t, sse, "/sse", map[string]string{"Host": "evil.example:8931"}); code != http.StatusForbidden {
		t.Fatalf("DNS-rebinding Host on SSE: %d", code)
	}

	token := strings.Repeat("k", 40)
	locked := e.srv.Handler(&HTTPOptions{Token: token})
	if code, _ := post(t, locked, "/mcp", nil); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d", code)
	}
	if code, _ := post(t, locked, "/mcp", map[string]string{"Authorization": "Bearer wrong"}); code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", code)
	}
	if code, body := post(t, locked, "/mcp", map[string]string{"Authorization": "Bearer " + token}); code != http.StatusOK {
		t.Fatalf("right token: %d %s", code, body)
	}
	srv := httptest.NewServer(locked)
	defer srv.Close()
	res, err := http.Get(srv.URL + "/healthz")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("healthz without auth: %v %v", res, err)
	}
}

func TestListenRefusesNonLoopbackWithoutToken(t *testing.T) {
	_, err := Listen("0.0.0.0:0", "")
	if !errors.Is(err, ErrTokenRequired) || !strings.Contains(err.Error(), "HTTPOptions.Token") {
		t.Fatalf("err %v", err)
	}
	ln, err := Listen(":0", "")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); host != "127.0.0.1" {
		t.Fatalf("an address without a host listened on %s, not loopback", host)
	}
	ln2, err := Listen("0.0.0.0:0", strings.Repeat("k", 40))
	if err != nil {
		t.Fatal(err)
	}
	ln2.Close()
}

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "token")
	os.WriteFile(p, []byte(strings.Repeat("a", 40)+"\n"), 0o644)
	if _, err := ReadTokenFile(p); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a world-readable token file was accepted: %v", err)
	}
	os.Chmod(p, 0o600)
	if tok, err := ReadTokenFile(p); err != nil || tok != strings.Repeat("a", 40) {
		t.Fatalf("%q %v", tok, err)
	}
	os.WriteFile(p, []byte("short"), 0o600)
	if _, err := ReadTokenFile(p); err == nil {
		t.Fatal("a short token was accepted")
	}
}

// TestStreamableAndSSEOverTheWire serves both HTTP transports on loopback
// and calls an allowed tool through each with go-sdk clients.
func TestStreamableAndSSEOverTheWire(t *testing.T) {
	e := newEnv(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, o := range []HTTPOptions{{}, {Stateless: true}, {SSE: true}} {
		ln, err := Listen("127.0.0.1:0", "")
		if err != nil {
			t.Fatal(err)
		}
		go ServeHTTP(ctx, ln, e.srv.Handler(&o))
		var tr mcp.Transport
		base := "http://" + ln.Addr().String()
		switch {
		case o.SSE:
			tr = &mcp.SSEClientTransport{Endpoint: base + "/sse"}
		default:
			tr = &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "wire", Version: "1"}, nil)
		cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
		cs, err := c.Connect(cctx, tr, nil)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		// The echo tool is not allowed and this client cannot elicit: the
		// call waits in the queue; approve it from "another terminal".
		go approveNext(t, e.srv.queue, true, false)
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: echoTool, Arguments: map[string]any{"text": "wire"}})
		if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "echo: wire" {
			t.Fatalf("%+v: %+v %v", o, res, err)
		}
		cs.Close()
		ccancel()
	}
}
