package mcpexport

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/store"
)

// putProfile writes the profile name of e's workspace to the state, as
// berth profile create does.
func (e *env) putProfile(name string, p *store.Profile) {
	e.t.Helper()
	ws := e.pool.WorkspaceDir()
	if _, err := e.store.Update(context.Background(), func(st *store.State) error {
		w := st.Workspaces[ws]
		if w.Profiles == nil {
			w.Profiles = map[string]*store.Profile{}
		}
		if p == nil {
			delete(w.Profiles, name)
			return nil
		}
		w.Profiles[name] = p
		return nil
	}); err != nil {
		e.t.Fatal(err)
	}
}

// twoProfiles sets the profiles "a" (the echo tool only) and "b" (the
// wipe tool only).
func (e *env) twoProfiles() {
	e.putProfile("a", &store.Profile{Tools: []string{echoTool}, Mode: store.ToolsFull, CreatedAt: time.Now().UTC()})
	e.putProfile("b", &store.Profile{Tools: []string{wipeTool}, Mode: store.ToolsFull, CreatedAt: time.Now().UTC()})
}

// listen serves e's Handler(o) on a loopback listener and returns its
// base URL.
func (e *env) listen(o *HTTPOptions) string {
	e.t.Helper()
	if o.Token == "" && !o.UnsafeNoToken {
		o.Token = testToken
	}
	ln, err := Listen("127.0.0.1:0", o)
	if err != nil {
		e.t.Fatal(err)
	}
	serveOn(e.t, ln, e.srv.Handler(o), o)
	return "http://" + ln.Addr().String()
}

// connectAt connects a go-sdk client named name to url with the token.
func connectAt(t *testing.T, url, name string, sse bool) *mcp.ClientSession {
	t.Helper()
	var tr mcp.Transport = &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: bearerClient(testToken)}
	if sse {
		tr = &mcp.SSEClientTransport{Endpoint: url, HTTPClient: bearerClient(testToken)}
	}
	// The SSE stream lives as long as the context of Connect.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestProfilesOverHTTP: two clients of one listener, at two profiles'
// paths, are offered two tool sets, and /mcp the whole workspace; over
// Streamable HTTP and SSE. A call at a profile's path is audited with the
// profile.
func TestProfilesOverHTTP(t *testing.T) {
	e := newEnv(t, nil, store.PolicyRule{Pattern: echoTool, Action: "allow"})
	e.twoProfiles()
	for _, sse := range []bool{true, false} {
		base := e.listen(&HTTPOptions{SSE: sse})
		end := "/mcp"
		if sse {
			end = "/sse"
		}
		a := connectAt(t, base+"/profiles/a"+end, "client-a", sse)
		b := connectAt(t, base+"/profiles/b"+end, "client-b", sse)
		all := connectAt(t, base+end, "client-all", sse)
		if got := toolNames(t, a); !slices.Equal(got, []string{echoTool}) {
			t.Errorf("sse %v: profile a lists %v, want only %s", sse, got, echoTool)
		}
		if got := toolNames(t, b); !slices.Equal(got, []string{wipeTool}) {
			t.Errorf("sse %v: profile b lists %v, want only %s", sse, got, wipeTool)
		}
		if got := toolNames(t, all); !slices.Contains(got, echoTool) || !slices.Contains(got, wipeTool) {
			t.Errorf("sse %v: /mcp lists %v, want the whole workspace", sse, got)
		}
		if text, isErr := callTool(t, a, echoTool, "from a"); isErr || text != "echo: from a" {
			t.Fatalf("sse %v: call at profile a: %q (error %v)", sse, text, isErr)
		}
	}
	var profiles []string
	for _, en := range readAudit(t, e.paths) {
		profiles = append(profiles, en.Profile)
	}
	if !slices.Equal(profiles, []string{"a", "a"}) {
		t.Fatalf("audit profiles %q, want the profile of each call", profiles)
	}
}

// rawStatus posts body to url in session sid (with the token unless
// noToken) and returns the status and the start of the body.
func rawStatus(t *testing.T, url, sid, body string, header map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testToken)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", legacy)
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	return res.StatusCode, string(data)
}

const listBody = `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`

// TestProfileSessionsAreIsolated: a session made at one path is unknown
// at every other path of the listener.
func TestProfileSessionsAreIsolated(t *testing.T) {
	e := newEnv(t, nil)
	e.twoProfiles()
	base := e.listen(&HTTPOptions{})
	sid := rawInit(t, base+"/profiles/a/mcp")
	if code, body := rawStatus(t, base+"/profiles/a/mcp", sid, listBody, nil); code != http.StatusOK {
		t.Fatalf("the session at its own path: %d %s", code, body)
	}
	for _, other := range []string{"/profiles/b/mcp", "/mcp"} {
		if code, body := rawStatus(t, base+other, sid, listBody, nil); code != http.StatusNotFound {
			t.Errorf("profile a's session at %s: %d %s, want 404", other, code, body)
		}
	}
	sid = rawInit(t, base+"/mcp")
	if code, body := rawStatus(t, base+"/profiles/a/mcp", sid, listBody, nil); code != http.StatusNotFound {
		t.Errorf("the workspace's session at profile a: %d %s, want 404", code, body)
	}
}

// TestProfilePathsAreGuarded: a profile's path needs the token and a
// loopback origin, as /mcp does; an unknown profile is 404 with a
// JSON-RPC error naming berth profile list, and the 404 is only said to
// a client holding the token.
func TestProfilePathsAreGuarded(t *testing.T) {
	e := newEnv(t, nil)
	e.twoProfiles()
	base := e.listen(&HTTPOptions{})
	for _, path := range []string{"/profiles/a/mcp", "/profiles/nope/mcp"} {
		if code, body := rawStatus(t, base+path, "", initBody, map[string]string{"Authorization": ""}); code != http.StatusUnauthorized {
			t.Errorf("%s without the token: %d %s, want 401", path, code, body)
		}
		if code, body := rawStatus(t, base+path, "", initBody, map[string]string{"Authorization": "Bearer wrong-token-0123456789-0123456789"}); code != http.StatusUnauthorized {
			t.Errorf("%s with a wrong token: %d %s, want 401", path, code, body)
		}
		if code, body := rawStatus(t, base+path, "", initBody, map[string]string{"Origin": "https://evil.example"}); code != http.StatusForbidden {
			t.Errorf("%s from a web page: %d %s, want 403", path, code, body)
		}
	}
	code, body := rawStatus(t, base+"/profiles/nope/mcp", "", initBody, nil)
	var msg struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if code != http.StatusNotFound || json.Unmarshal([]byte(body), &msg) != nil || !strings.Contains(msg.Error.Message, `no profile "nope"`) || !strings.Contains(msg.Error.Message, "berth profile list") {
		t.Fatalf("unknown profile: %d %s", code, body)
	}
	for _, path := range []string{"/profiles/a/sse", "/profiles/a/mcp/x", "/profiles//mcp"} {
		if code, body := rawStatus(t, base+path, "", initBody, nil); code != http.StatusNotFound {
			t.Errorf("%s: %d %s, want 404", path, code, body)
		}
	}
	// A profile removed while serving: its path is refused from the next
	// request, its session included; one created is served.
	sid := rawInit(t, base+"/profiles/a/mcp")
	e.putProfile("a", nil)
	if code, body := rawStatus(t, base+"/profiles/a/mcp", sid, listBody, nil); code != http.StatusNotFound || !strings.Contains(body, "berth profile list") {
		t.Errorf("a removed profile's session: %d %s, want 404", code, body)
	}
	e.putProfile("c", &store.Profile{Mode: store.ToolsFull})
	if code, body := rawStatus(t, base+"/profiles/c/mcp", "", initBody, nil); code != http.StatusOK {
		t.Errorf("a profile made while serving: %d %s", code, body)
	}
}

// TestServedProfileRefusesOthers: a Server whose view is a profile (berth
// serve --profile) serves it at /mcp and at its own path, and refuses
// every other profile naming the one it serves.
func TestServedProfileRefusesOthers(t *testing.T) {
	e := newEnv(t, &Options{View: &View{Profile: "a"}})
	e.twoProfiles()
	base := e.listen(&HTTPOptions{})
	code, body := rawStatus(t, base+"/profiles/b/mcp", "", initBody, nil)
	if code != http.StatusNotFound || !strings.Contains(body, `offers the profile \"a\" only`) {
		t.Fatalf("another profile: %d %s", code, body)
	}
	for _, path := range []string{"/mcp", "/profiles/a/mcp"} {
		if code, body := rawStatus(t, base+path, "", initBody, nil); code != http.StatusOK {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	if n := len(e.srv.fam.servers()); n != 1 {
		t.Fatalf("%d servers, want the one of the served profile only", n)
	}
}

// TestMaxSessionsCountsEveryPath: the listener's session cap counts the
// sessions of every path: a new session at one profile's path closes the
// session idle the longest at another's.
func TestMaxSessionsCountsEveryPath(t *testing.T) {
	e := newEnv(t, nil)
	e.twoProfiles()
	base := e.listen(&HTTPOptions{MaxSessions: 2})
	first := rawInit(t, base+"/profiles/a/mcp")
	time.Sleep(10 * time.Millisecond)
	rawInit(t, base+"/mcp")
	time.Sleep(10 * time.Millisecond)
	rawInit(t, base+"/profiles/b/mcp")
	if code, body := rawStatus(t, base+"/profiles/a/mcp", first, listBody, nil); code != http.StatusNotFound {
		t.Fatalf("the oldest session, at profile a, after a third one at two other paths under a cap of 2: %d %s, want it closed (404)", code, body)
	}
}

// TestSiblingsShareQueueAndClose: a sibling's waiting call is in the
// family's one queue with its profile, MaxPending counts every view's
// calls, and closing the root closes the siblings.
func TestSiblingsShareQueueAndClose(t *testing.T) {
	e := newEnv(t, &Options{MaxPending: 1, ApprovalTimeout: 20 * time.Second})
	e.twoProfiles()
	b, err := e.srv.WithView(&View{Profile: "b"})
	if err != nil {
		t.Fatal(err)
	}
	connect := func(s *Server) *mcp.ClientSession {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := s.Connect(context.Background(), st); err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "sib", Version: "1"}, nil).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	csB, csRoot := connect(b), connect(e.srv)
	done := make(chan string, 1)
	go func() {
		text, _ := callTool(t, csB, wipeTool, "x")
		done <- text
	}()
	p := nextPending(t, e.srv.queue)
	if p == nil || p.Profile != "b" {
		t.Fatalf("pending %+v, want the profile b", p)
	}
	// The root's call is beyond MaxPending, which counts the sibling's.
	if text, isErr := callTool(t, csRoot, wipeTool, "y"); !isErr || !strings.Contains(text, "already wait for approval on this berth serve") {
		t.Fatalf("a second waiting call in the family: %q (error %v), want refused", text, isErr)
	}
	if _, err := e.srv.queue.Decide(p.ID, false, false, "test"); err != nil {
		t.Fatal(err)
	}
	<-done
	e.waitHandlers()
	var got []string
	for _, en := range readAudit(t, e.paths) {
		got = append(got, en.Tool+"@"+en.Profile)
	}
	if !slices.Contains(got, wipeTool+"@b") || !slices.Contains(got, wipeTool+"@") {
		t.Fatalf("audit %q, want the sibling's call with profile b and the root's without", got)
	}
	e.srv.Close()
	select {
	case <-b.syncDone:
	default:
		t.Fatal("closing the root left its sibling's sync worker running")
	}
	if _, err := e.srv.WithView(nil); err == nil {
		t.Fatal("a sibling of a closed server")
	}
}

// TestRegistryShowsSessions: with RecordSessions, the registry file lists
// each session with its profile, transport and client, forgets a session
// that ends, and is removed at Close; a dead process's file is pruned.
func TestRegistryShowsSessions(t *testing.T) {
	e := newEnv(t, &Options{RecordSessions: true})
	e.twoProfiles()
	dir := e.paths.Serving()
	stale := filepath.Join(dir, "2147483646.json")
	if err := os.WriteFile(stale, []byte(`{"pid":2147483646,"workspace":"x","sessions":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	base := e.listen(&HTTPOptions{})
	a := connectAt(t, base+"/profiles/a/mcp", "client-a", false)
	connectAt(t, base+"/mcp", "client-all", false)
	sessions := func() []ServeSession {
		recs, err := ReadServing(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []ServeSession
		for _, r := range recs {
			if r.Workspace != e.pool.WorkspaceDir() || r.PID != os.Getpid() {
				t.Fatalf("record %+v", r)
			}
			out = append(out, r.Sessions...)
		}
		return out
	}
	var got []string
	testkit.Eventually(t, 10*time.Second, "two sessions in the registry", func() bool {
		got = nil
		for _, s := range sessions() {
			got = append(got, s.Profile+"|"+string(s.Mode)+"|"+s.Transport+"|"+s.Client)
		}
		slices.Sort(got)
		return len(got) == 2
	})
	want := []string{"a|full|streamable-http|client-a 1", "workspace|full|streamable-http|client-all 1"}
	if !slices.Equal(got, want) {
		t.Fatalf("registry %q, want %q", got, want)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Fatal("the file of a process that no longer runs was kept")
	}
	if fi, err := os.Stat(filepath.Join(dir, strconv.Itoa(os.Getpid())+".json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("registry file: %v %v", fi, err)
	}
	a.Close()
	testkit.Eventually(t, 10*time.Second, "the ended session to leave the registry", func() bool { return len(sessions()) == 1 })
	e.waitHandlers()
	e.srv.Close()
	if _, err := os.Stat(filepath.Join(dir, strconv.Itoa(os.Getpid())+".json")); err == nil {
		t.Fatal("the registry file outlived Close")
	}
}
