package mcpexport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/testkit"
)

// rawPost posts one JSON-RPC message to url with the test token and
// returns the response; ctx ends the request (the client going away).
func rawPost(ctx context.Context, url, session, proto, body string) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testToken)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if proto != "" {
		req.Header.Set("Mcp-Protocol-Version", proto)
	}
	return http.DefaultClient.Do(req)
}

// rawInit opens a stateful session by hand and returns its ID.
func rawInit(t *testing.T, url string) string {
	t.Helper()
	res, err := rawPost(context.Background(), url, "", "", initBody)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	sid := res.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("no session: %d", res.StatusCode)
	}
	res, err = rawPost(context.Background(), url, sid, legacy, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return sid
}

const callBody = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"demo__up__echo","arguments":{"text":"hi"}}}`

// TestApprovalDiesWithItsRequest: a call waiting in the queue is withdrawn
// within 2 s when its request is cancelled, its session ends or its
// connection goes away, over every transport: it leaves the queue, it
// cannot be approved any more (ErrWithdrawn, "nobody is waiting"), and the
// audit log says withdrawn.
func TestApprovalDiesWithItsRequest(t *testing.T) {
	type run struct {
		name string
		// start makes the call wait in the queue; gone makes its client
		// go away.
		start func(t *testing.T, e *env, base string) (gone func())
	}
	runs := []run{
		{"stateful HTTP, connection dropped", func(t *testing.T, e *env, base string) func() {
			sid := rawInit(t, base+"/mcp")
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				if res, err := rawPost(ctx, base+"/mcp", sid, legacy, callBody); err == nil {
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
			}()
			return cancel
		}},
		{"stateful HTTP, session deleted", func(t *testing.T, e *env, base string) func() {
			sid := rawInit(t, base+"/mcp")
			go func() {
				if res, err := rawPost(context.Background(), base+"/mcp", sid, legacy, callBody); err == nil {
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
			}()
			return func() {
				req, _ := http.NewRequest(http.MethodDelete, base+"/mcp", nil)
				req.Header.Set("Authorization", "Bearer "+testToken)
				req.Header.Set("Mcp-Session-Id", sid)
				if res, err := http.DefaultClient.Do(req); err == nil {
					res.Body.Close()
				}
			}
		}},
		{"stateful HTTP, request cancelled", func(t *testing.T, e *env, base string) func() {
			c := mcp.NewClient(&mcp.Implementation{Name: "quitter", Version: "1"}, nil)
			cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: bearerClient(testToken)}, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			ctx, cancel := context.WithCancel(context.Background())
			go cs.CallTool(ctx, &mcp.CallToolParams{Name: echoTool, Arguments: map[string]any{"text": "hi"}})
			return cancel
		}},
		{"stateless HTTP, connection dropped", func(t *testing.T, e *env, base string) func() {
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				if res, err := rawPost(ctx, base+"/mcp", "", legacy, callBody); err == nil {
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
			}()
			return cancel
		}},
		{"SSE, connection dropped", func(t *testing.T, e *env, base string) func() {
			hc, kill := killableClient()
			c := mcp.NewClient(&mcp.Implementation{Name: "quitter", Version: "1"}, nil)
			cs, err := c.Connect(context.Background(), &mcp.SSEClientTransport{Endpoint: base + "/sse", HTTPClient: hc}, nil)
			if err != nil {
				t.Fatal(err)
			}
			go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: echoTool, Arguments: map[string]any{"text": "hi"}})
			return kill
		}},
		{"stdio-like session, request cancelled", func(t *testing.T, e *env, base string) func() {
			cs := e.client(legacy, nil)
			ctx, cancel := context.WithCancel(context.Background())
			go cs.CallTool(ctx, &mcp.CallToolParams{Name: echoTool, Arguments: map[string]any{"text": "hi"}})
			return cancel
		}},
		{"stdio, pipes closed", func(t *testing.T, e *env, base string) func() {
			// What a client's stdio looks like to berth serve: two pipes,
			// closed when the client dies.
			sr, cw := io.Pipe()
			cr, sw := io.Pipe()
			if _, err := e.srv.Connect(context.Background(), &mcp.IOTransport{Reader: sr, Writer: sw}); err != nil {
				t.Fatal(err)
			}
			c := mcp.NewClient(&mcp.Implementation{Name: "quitter", Version: "1"}, nil)
			cs, err := c.Connect(context.Background(), &mcp.IOTransport{Reader: cr, Writer: cw}, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
			if err != nil {
				t.Fatal(err)
			}
			go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: echoTool, Arguments: map[string]any{"text": "hi"}})
			return func() { cw.Close(); sw.Close(); sr.Close(); cr.Close() }
		}},
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			e := newEnv(t, &Options{ApprovalTimeout: time.Minute})
			o := &HTTPOptions{Token: testToken, SSE: strings.HasPrefix(r.name, "SSE"), Stateless: strings.HasPrefix(r.name, "stateless")}
			gone := r.start(t, e, "http://"+serveEnv(t, e, o))
			p := nextPending(t, e.srv.queue)
			if p == nil {
				t.FailNow()
			}
			gone()
			testkit.Eventually(t, 2*time.Second, "the approval "+p.ID+" to leave the queue after its client went away", func() bool {
				list, _ := e.srv.queue.List()
				return len(list) == 0
			})
			_, err := e.srv.queue.Decide(p.ID, true, false, "late")
			if !errors.Is(err, ErrWithdrawn) || !strings.Contains(err.Error(), "nobody is waiting") || !strings.Contains(err.Error(), "nothing was run") {
				t.Fatalf("approving the withdrawn call: %v", err)
			}
			var a []AuditEntry
			testkit.Within(5*time.Second, func() bool { a = readAudit(t, e.paths); return len(a) > 0 })
			if len(a) != 1 || a[0].Outcome != OutcomeWithdrawn || a[0].Approval != p.ID || a[0].Decision != VerdictNone {
				t.Fatalf("audit %+v, want one withdrawn entry", a)
			}
			t.Logf("withdrawn: %s", a[0].Reason)
		})
	}
}

// TestPendingApprovalsAreBounded: beyond the calls one session (and the
// server) may have waiting, a call is refused at once, saying why.
func TestPendingApprovalsAreBounded(t *testing.T) {
	e := newEnv(t, &Options{ApprovalTimeout: time.Minute, MaxPendingPerSession: 2, MaxPending: 3, Hints: Hints{MaxPendingPerSession: "raise-per-session", MaxPending: "raise-total", Approvals: "settle-here"}})
	one, two, three := e.client(legacy, nil), e.client(legacy, nil), e.client(legacy, nil)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); wg.Wait() }()
	wait := func(cs *mcp.ClientSession) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs.CallTool(ctx, &mcp.CallToolParams{Name: echoTool, Arguments: map[string]any{"text": "hi"}})
		}()
	}
	waitFor := func(n int) {
		t.Helper()
		testkit.Eventually(t, 20*time.Second, fmt.Sprintf("the queue to hold %d calls", n), func() bool {
			list, _ := e.srv.queue.List()
			return len(list) == n
		})
	}
	wait(one)
	wait(one)
	waitFor(2)
	start := time.Now()
	// The library names no flag; the Hints of the Options are cited.
	want := (&PendingLimitError{PerSession: true, Max: 2, Raise: "raise-per-session", Settle: "settle-here"}).Error()
	if text, isErr := callTool(t, one, echoTool, "third"); !isErr || !strings.Contains(text, "this session already has 2 calls waiting for approval") || !strings.Contains(text, want) {
		t.Fatalf("a third call of one session: %q, want %q", text, want)
	}
	wait(two)
	waitFor(3)
	want = (&PendingLimitError{Max: 3, Raise: "raise-total", Settle: "settle-here"}).Error()
	if text, isErr := callTool(t, three, echoTool, "fourth"); !isErr || !strings.Contains(text, "3 calls already wait for approval") || !strings.Contains(text, want) {
		t.Fatalf("a call beyond the total: %q, want %q", text, want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the refusals took %v; they must be at once", d)
	}
}

// TestPendingLimitError: the refusal is a *PendingLimitError that wraps
// ErrTooManyPending, and with no Hints its text names no flag or command.
func TestPendingLimitError(t *testing.T) {
	l := &pendingLimits{maxSession: 1, maxTotal: 2}
	one, two, three := &mcp.ServerSession{}, &mcp.ServerSession{}, &mcp.ServerSession{}
	if _, err := l.acquire(one); err != nil {
		t.Fatal(err)
	}
	_, err := l.acquire(one)
	var pe *PendingLimitError
	if !errors.As(err, &pe) || !pe.PerSession || pe.Max != 1 || !errors.Is(err, ErrTooManyPending) {
		t.Fatalf("a second call of a session with room for one: %v", err)
	}
	if _, err := l.acquire(two); err != nil {
		t.Fatal(err)
	}
	_, err = l.acquire(three)
	if !errors.As(err, &pe) || pe.PerSession || pe.Max != 2 || !errors.Is(err, ErrTooManyPending) {
		t.Fatalf("a call beyond the total: %v", err)
	}
	if text := err.Error(); strings.Contains(text, "--") || strings.Contains(text, "(") {
		t.Errorf("with no hints the text cites something: %q", text)
	}
}

// TestQueueWithdraw: a withdrawn call leaves the queue, and approving or
// denying it says nobody is waiting any more.
func TestQueueWithdraw(t *testing.T) {
	q := NewQueue(t.TempDir())
	now := time.Now()
	p, err := q.Add(Pending{Tool: echoTool, Arguments: json.RawMessage(`{}`), Client: "c", CreatedAt: now, Deadline: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	q.Withdraw(p, "the client cancelled the request")
	if list, _ := q.List(); len(list) != 0 {
		t.Fatalf("listed after withdrawal: %+v", list)
	}
	for _, allow := range []bool{true, false} {
		if _, err := q.Decide(p.ID, allow, false, "late"); !errors.Is(err, ErrWithdrawn) || !strings.Contains(err.Error(), "the client cancelled the request") {
			t.Fatalf("deciding a withdrawn call: %v", err)
		}
	}
	if _, err := q.Get(p.ID); !errors.Is(err, ErrWithdrawn) {
		t.Fatalf("Get of a withdrawn call: %v", err)
	}
}

// killableClient is an HTTP client with the test token whose kill closes
// every connection it opened, as a client process that dies would.
func killableClient() (*http.Client, func()) {
	var mu sync.Mutex
	var conns []net.Conn
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
		return c, err
	}}
	kill := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}
	return &http.Client{Transport: bearer{testToken, tr}}, kill
}

// A pending call carries the tool's annotations as MCP's fields (a hint
// the server did not give is absent) and the workspace; a pending file an
// older berth serve wrote, with the annotations as a sentence, is still
// listed, shown and settled.
func TestPendingAnnotationsAndWorkspace(t *testing.T) {
	q := NewQueue(t.TempDir())
	now := time.Now()
	no := false
	p, err := q.Add(Pending{Tool: echoTool, Arguments: json.RawMessage(`{}`), Client: "c", Workspace: "/w", CreatedAt: now, Deadline: now.Add(time.Minute),
		Annotations: annotationsOf(&mcp.ToolAnnotations{Title: "Wipe", ReadOnlyHint: false, DestructiveHint: &no})})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(q.pendingPath(p.ID))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Annotations map[string]any `json:"annotations"`
		Workspace   string         `json:"workspace"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"title": "Wipe", "destructiveHint": false}; !reflect.DeepEqual(raw.Annotations, want) || raw.Workspace != "/w" {
		t.Fatalf("pending file: annotations %v (want %v), workspace %q", raw.Annotations, want, raw.Workspace)
	}
	got, err := q.Get(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d := got.DescribeAnnotations(); d != `title "Wipe" (as the server claims)` || got.Workspace != "/w" {
		t.Errorf("read back: annotations %q, workspace %q", d, got.Workspace)
	}
	if d := (&Pending{}).DescribeAnnotations(); !strings.HasPrefix(d, "none") {
		t.Errorf("DescribeAnnotations of none = %q", d)
	}

	// What berth serve before this change wrote.
	old := bytes.Replace(data, []byte(`"annotations": {
    "title": "Wipe",
    "destructiveHint": false
  },`), []byte(`"annotations": "DESTRUCTIVE (as the server claims)",`), 1)
	if bytes.Equal(old, data) {
		t.Fatalf("the pending file is not laid out as the test expects:\n%s", data)
	}
	if err := os.WriteFile(q.pendingPath(p.ID), old, 0o600); err != nil {
		t.Fatal(err)
	}
	list, err := q.List()
	if err != nil || len(list) != 1 || list[0].DescribeAnnotations() != "DESTRUCTIVE (as the server claims)" || list[0].Annotations != nil {
		t.Fatalf("List of an older pending file: %v %+v", err, list)
	}
	if _, err := q.Decide(p.ID, false, false, "test"); err != nil {
		t.Fatalf("Decide of an older pending file: %v", err)
	}
}
