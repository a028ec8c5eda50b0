package mcpexport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/store"
)

// serveBounded serves e's Streamable HTTP (or SSE) handler with o and
// the test token, and returns the listener's address.
func serveBounded(t *testing.T, e *env, o *HTTPOptions) string {
	t.Helper()
	o.Token = testToken
	return serveEnv(t, e, o)
}

// serveEnv serves e's HTTP handler with o until the test ends, and
// returns the listener's address.
func serveEnv(t *testing.T, e *env, o *HTTPOptions) string {
	t.Helper()
	ln, err := Listen("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, ln, e.srv.Handler(o), o)
	return ln.Addr().String()
}

// serveOn runs ServeHTTP on ln until the test ends, and waits for it to
// return. (ServeHTTP returns after its connections' handlers; newEnv's
// cleanup, which runs after this one, then waits for the MCP handlers.)
func serveOn(t *testing.T, ln net.Listener, h http.Handler, o *HTTPOptions) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ServeHTTP(ctx, ln, h, o)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func sessionAlive(t *testing.T, url, sid string) bool {
	t.Helper()
	res, err := rawPost(context.Background(), url, sid, legacy, `{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// TestSessionsAreCapped: a listener holds at most MaxSessions sessions; a
// new one closes the session idle the longest; when every session is busy
// a new one is refused (503).
func TestSessionsAreCapped(t *testing.T) {
	e := newEnv(t, &Options{ApprovalTimeout: time.Minute, Hints: Hints{MaxSessions: "raise-sessions"}})
	url := "http://" + serveBounded(t, e, &HTTPOptions{MaxSessions: 3}) + "/mcp"
	var ids []string
	for range 10 {
		ids = append(ids, rawInit(t, url))
		time.Sleep(5 * time.Millisecond)
	}
	n := 0
	for range e.srv.MCPServer().Sessions() {
		n++
	}
	if n != 3 {
		t.Fatalf("%d sessions live, want 3", n)
	}
	if sessionAlive(t, url, ids[0]) || !sessionAlive(t, url, ids[9]) {
		t.Fatal("the oldest idle session was not the one closed")
	}
	// Make the three sessions busy: a call of each waits for approval.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, sid := range ids[7:] {
		go func() {
			if res, err := rawPost(ctx, url, sid, legacy, callBody); err == nil {
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		}()
	}
	testkit.Eventually(t, 20*time.Second, "the three calls to reach the queue", func() bool {
		list, _ := e.srv.queue.List()
		return len(list) == 3
	})
	res, err := rawPost(context.Background(), url, "", "", initBody)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), (&SessionLimitError{Max: 3, Raise: "raise-sessions"}).Error()) {
		t.Fatalf("a session beyond the cap, all busy: %d %s", res.StatusCode, body)
	}
}

// TestIdleSessionsEnd: a session with no request for SessionIdleTimeout
// is closed, over Streamable HTTP and over SSE.
func TestIdleSessionsEnd(t *testing.T) {
	e := newEnv(t, nil)
	url := "http://" + serveBounded(t, e, &HTTPOptions{SessionIdleTimeout: 300 * time.Millisecond}) + "/mcp"
	sid := rawInit(t, url)
	time.Sleep(time.Second)
	if sessionAlive(t, url, sid) {
		t.Fatal("an idle Streamable HTTP session outlived its idle timeout")
	}
	sse := "http://" + serveBounded(t, e, &HTTPOptions{SSE: true, SessionIdleTimeout: 300 * time.Millisecond}) + "/sse"
	req, _ := http.NewRequest(http.MethodGet, sse, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body) // returns when the stream ends
	res.Body.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("an idle SSE session lasted %v", d)
	}
}

// TestTrickledBodyIsCut: a body sent at 1 byte/s is cut off at the read
// timeout (408), and an idle keep-alive connection is closed.
func TestTrickledBodyIsCut(t *testing.T) {
	e := newEnv(t, nil)
	addr := serveBounded(t, e, &HTTPOptions{ReadTimeout: 500 * time.Millisecond, KeepAliveTimeout: 500 * time.Millisecond})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", addr, testToken, len(initBody))
	start := time.Now()
	done := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(conn).ReadString('\n')
		done <- line
	}()
	var status string
trickle:
	for i := 0; i < len(initBody); i++ {
		select {
		case status = <-done:
			break trickle
		case <-time.After(time.Second):
		}
		if _, err := conn.Write([]byte{initBody[i]}); err != nil {
			status = <-done
			break
		}
	}
	if d := time.Since(start); !strings.Contains(status, "408") || d > 5*time.Second {
		t.Fatalf("a trickled body got %q after %v, want 408 at the read timeout", status, d)
	}

	// Keep-alive: one request, then silence; the server hangs up.
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	fmt.Fprintf(idle, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	r := bufio.NewReader(idle)
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	start = time.Now()
	idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.ReadByte(); err != io.EOF || time.Since(start) > 5*time.Second {
		t.Fatalf("an idle keep-alive connection: %v after %v, want EOF at the keep-alive timeout", err, time.Since(start))
	}
}

// smallBuffers accepts connections whose kernel send buffer is small, so
// that a response to a client that does not read blocks within a few KiB.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	inner := c
	if pc, ok := c.(interface{ NetConn() net.Conn }); ok {
		inner = pc.NetConn()
	}
	if tc, ok := inner.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4096)
	}
	return c, err
}

// TestStalledReaderIsCut: a client that stops reading a response is
// disconnected once the response could not be written for
// WriteIdleTimeout; without the timeout the response would wait for it
// for ever, and the rest arrive when it read again.
func TestStalledReaderIsCut(t *testing.T) {
	e := newEnv(t, nil, store.PolicyRule{Pattern: "demo__*", Action: "allow"})
	o := &HTTPOptions{Token: testToken, WriteIdleTimeout: 300 * time.Millisecond}
	ln, err := Listen("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, smallBuffers{ln}, e.srv.Handler(o), o)
	addr := ln.Addr().String()
	sid := rawInit(t, "http://"+addr+"/mcp")

	// echo answers with its text: 2 MiB of it, far more than the socket
	// buffers hold.
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":%q,"arguments":{"text":"%s"}}}`, echoTool, strings.Repeat("x", 2<<20))
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: %s\r\nContent-Length: %d\r\n\r\n%s",
		addr, testToken, sid, legacy, len(body), body)
	// Read the response's header, then stop reading for many times the
	// timeout.
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReaderSize(conn, 16)
	status, err := r.ReadString('\n')
	if err != nil || !strings.Contains(status, "200") {
		t.Fatalf("the call answered %q (%v)", status, err)
	}
	time.Sleep(3 * time.Second)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the connection stayed open (read %d bytes, then waited): a client that stopped reading was not cut", len(got))
	}
	if len(got) > len(body) {
		t.Fatalf("the whole response (%d bytes) arrived: the write idle timeout did not cut it", len(got))
	}
}
