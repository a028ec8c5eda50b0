//go:build unix

//lint:file-ignore SA1019 the sampling transcript relays a SEP-2577 feature during its deprecation window

package mcpexport

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/berth-mcp/berth/internal/testrelay"
)

var updateTranscripts = flag.Bool("update", false, "rewrite the golden JSON-RPC transcripts in testdata/transcripts")

// The normalization rules of the transcripts, applied in this order. They
// are the only bytes of a transcript allowed to differ from run to run;
// every other byte on the wire must match the golden file. Each rule is
// named in the golden file's comment.
var transcriptRules = []struct{ name, what string }{
	{"request-id", `a JSON-RPC request's "id" (and the "id" of its response, and a notifications/cancelled "requestId") becomes "c<n>" for the n-th request of the client, "b<n>" of berth, "p<n>" of the plugin's server`},
	{"session-id", `the MCP session ID, wherever it occurs, becomes "<session>"`},
	{"approval-id", `an approval's ID becomes "<approval-n>" (n-th distinct one): the queue entry's ID, and an input request's "requestState" token (a nonce, an expiry and a MAC)`},
	{"timestamp", `an RFC 3339 time becomes "<timestamp>"`},
}

// transcriptHeader is the comment of every golden transcript, after the
// scenario's own description.
func transcriptHeader() string {
	var b strings.Builder
	b.WriteString("\nThe file wire holds the exact JSON-RPC messages between a client and\n")
	b.WriteString("berth's MCP server (newline-delimited, as over `berth serve`'s stdio),\n")
	b.WriteString("one a line: \"> \" sent by the client, \"< \" sent by berth, in the order\n")
	b.WriteString("written. The file plugin, where there is one, holds those between berth\n")
	b.WriteString("and the plugin's server for the call, as the server read and wrote them:\n")
	b.WriteString("berth's tools/call, the server's requests during it and their answers,\n")
	b.WriteString("and the server's answer (not the pool's own list requests on that\n")
	b.WriteString("connection, which it sends at any time); \"> \" sent by berth, \"< \" by\n")
	b.WriteString("the plugin's server.\n")
	b.WriteString("Regenerate with: go test ./mcpexport -run TestTranscripts -update\n\n")
	b.WriteString("Normalization rules (nothing else is changed):\n")
	for _, r := range transcriptRules {
		fmt.Fprintf(&b, "  %s: %s\n", r.name, r.what)
	}
	return b.String()
}

// transcriptWorkspace is the workspace of a transcript's server. berth's
// instructions name it, and a path is no byte the rules may normalize, so
// it is a fixed directory; a lock serializes the test processes that use
// it (go test runs packages, and people run go test, concurrently).
func transcriptWorkspace(t *testing.T) string {
	t.Helper()
	const dir = "/tmp/berth-transcript/workspace"
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatalf("the transcripts need the directory %s: %v", filepath.Dir(dir), err)
	}
	lock, err := os.OpenFile(filepath.Join(filepath.Dir(dir), "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("the transcripts need the lock file in %s: %v", filepath.Dir(dir), err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close() }) // releases the lock, after the removal below
	os.RemoveAll(dir)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if real, err := filepath.EvalSymlinks(dir); err != nil || real != dir {
		t.Skipf("%s resolves to %s here (%v); the golden transcripts name it as it is", dir, real, err)
	}
	return dir
}

// wire records what two ends of a connection write, line by line, in the
// order the lines are written. A line is recorded before it is handed to
// the connection, so an answer never precedes its question.
type wire struct {
	mu    sync.Mutex
	lines []wireLine
}

type wireLine struct {
	fromClient bool
	data       []byte
}

// recordingConn is one end of the connection: what it writes is recorded.
type recordingConn struct {
	net.Conn
	w          *wire
	fromClient bool
	partial    []byte
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.w.mu.Lock()
	c.partial = append(c.partial, p...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		c.w.lines = append(c.w.lines, wireLine{c.fromClient, bytes.Clone(c.partial[:i])})
		c.partial = c.partial[i+1:]
	}
	c.w.mu.Unlock()
	return c.Conn.Write(p)
}

// recordedClient connects a go-sdk client with opts to srv over a
// recorded in-memory connection framed as stdio is.
func recordedClient(t *testing.T, srv *Server, proto string, opts *mcp.ClientOptions) (*mcp.ClientSession, *mcp.ServerSession, *wire) {
	t.Helper()
	ctx := context.Background()
	w := &wire{}
	cEnd, sEnd := net.Pipe()
	ss, err := srv.Connect(ctx, &mcp.IOTransport{Reader: sEnd, Writer: &recordingConn{Conn: sEnd, w: w}})
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "transcript-client", Version: "1"}, opts)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: cEnd, Writer: &recordingConn{Conn: cEnd, w: w, fromClient: true}}, &mcp.ClientSessionOptions{ProtocolVersion: proto})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, ss, w
}

// transcript is the normalized text of what w recorded. approvals are the
// queue IDs the test saw; sessionID is the server session's ID.
func (w *wire) transcript(t *testing.T, sessionID string, approvals []string) string {
	t.Helper()
	w.mu.Lock()
	lines := slices.Clone(w.lines)
	w.mu.Unlock()
	return normalize(t, lines, "c", "b", sessionID, approvals)
}

// normalize applies the rules to lines: client and server are the
// request-id prefixes of the requests of the two sides.
func normalize(t *testing.T, lines []wireLine, client, server, sessionID string, approvals []string) string {
	t.Helper()

	// approval-id: the queue IDs, then every requestState token, in order
	// of appearance.
	approvalN := map[string]string{}
	approval := func(v string) {
		if v != "" && approvalN[v] == "" {
			approvalN[v] = fmt.Sprintf("<approval-%d>", len(approvalN)+1)
		}
	}
	for _, a := range approvals {
		approval(a)
	}
	for _, l := range lines {
		var m struct {
			Params struct {
				RequestState string `json:"requestState"`
			} `json:"params"`
			Result struct {
				RequestState string `json:"requestState"`
			} `json:"result"`
		}
		if err := json.Unmarshal(l.data, &m); err != nil {
			t.Fatalf("not a JSON-RPC message on the wire: %s", l.data)
		}
		approval(m.Params.RequestState)
		approval(m.Result.RequestState)
	}

	var b strings.Builder
	ids := map[string]string{} // originator and raw id → label
	next := map[bool]int{}
	label := func(fromClient bool, raw json.RawMessage) string {
		key := fmt.Sprint(fromClient) + string(raw)
		if ids[key] == "" {
			next[fromClient]++
			prefix := server
			if fromClient {
				prefix = client
			}
			ids[key] = fmt.Sprintf(`"%s%d"`, prefix, next[fromClient])
		}
		return ids[key]
	}
	for _, l := range lines {
		line := string(l.data)
		// request-id
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		json.Unmarshal(l.data, &m)
		if m.ID != nil {
			// A request's ID is its sender's; a response's, its receiver's.
			origin := l.fromClient == (m.Method != "")
			line = strings.Replace(line, `"id":`+string(m.ID), `"id":`+label(origin, m.ID), 1)
		}
		if m.Method == "notifications/cancelled" && m.Params.RequestID != nil {
			line = strings.Replace(line, `"requestId":`+string(m.Params.RequestID), `"requestId":`+label(l.fromClient, m.Params.RequestID), 1)
		}
		// session-id
		if sessionID != "" {
			line = strings.ReplaceAll(line, sessionID, "<session>")
		}
		// approval-id
		for v, n := range approvalN {
			line = strings.ReplaceAll(line, v, n)
		}
		// timestamp
		line = rfc3339.ReplaceAllString(line, "<timestamp>")
		if l.fromClient {
			b.WriteString("> ")
		} else {
			b.WriteString("< ")
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

var rfc3339 = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)

// checkTranscript compares the files got (wire, and plugin if there is
// one) with the golden transcript name (or rewrites it under -update).
func checkTranscript(t *testing.T, name, about string, got ...txtar.File) {
	t.Helper()
	path := filepath.Join("testdata", "transcripts", name+".txtar")
	if *updateTranscripts {
		a := &txtar.Archive{Comment: []byte(about + "\n" + transcriptHeader()), Files: got}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, txtar.Format(a), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	a, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !strings.HasSuffix(string(a.Comment), transcriptHeader()) {
		t.Errorf("%s: the comment does not list the current normalization rules; run with -update", path)
	}
	if len(a.Files) != len(got) {
		t.Fatalf("%s has %d files, the test made %d; run with -update", path, len(a.Files), len(got))
	}
	for i, f := range got {
		if a.Files[i].Name != f.Name {
			t.Fatalf("%s: file %d is %s, want %s", path, i+1, a.Files[i].Name, f.Name)
		}
		if want := string(a.Files[i].Data); string(f.Data) != want {
			t.Errorf("%s: the messages in %s changed (run with -update if that is intended):\n%s", path, f.Name, lineDiff(want, string(f.Data)))
		}
	}
}

func wireFile(s string) txtar.File { return txtar.File{Name: "wire", Data: []byte(s)} }

// pluginSide is the normalized plugin side of berth's call of tool, from
// the plugin server's wire log at path: berth's tools/call, the requests
// the server sent while it ran and their answers, and the server's
// answer to the call. The rest of the connection's traffic (the pool's
// own list requests, which it may send at any time) is left out.
func pluginSide(t *testing.T, path, tool string) txtar.File {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var span []wireLine
	var callID json.RawMessage
	asked := map[string]bool{} // the IDs of the server's requests during the call
	for l := range strings.Lines(string(data)) {
		fromBerth := strings.HasPrefix(l, "> ")
		msg := []byte(strings.TrimSuffix(l[2:], "\n"))
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if err := json.Unmarshal(msg, &m); err != nil {
			t.Fatalf("not a JSON-RPC message on the plugin's wire: %s", l)
		}
		if callID == nil && fromBerth && m.Method == "tools/call" && m.Params.Name == tool {
			callID = m.ID
		}
		if callID == nil {
			continue
		}
		switch {
		case fromBerth && bytes.Equal(m.ID, callID) && m.Method == "tools/call":
		case !fromBerth && m.ID != nil && m.Method != "":
			asked[string(m.ID)] = true
		case fromBerth && m.ID != nil && m.Method == "" && asked[string(m.ID)]:
		case !fromBerth && m.Method == "" && bytes.Equal(m.ID, callID):
		default:
			continue
		}
		span = append(span, wireLine{fromClient: fromBerth, data: msg})
		if !fromBerth && m.Method == "" && bytes.Equal(m.ID, callID) {
			break
		}
	}
	if callID == nil {
		t.Fatalf("the plugin's server never read a call of %s:\n%s", tool, data)
	}
	return txtar.File{Name: "plugin", Data: []byte(normalize(t, span, "b", "p", "", nil))}
}

// lineDiff shows the lines of want and got that differ, by position.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			at := 0
			for at < min(len(wl), len(gl)) && wl[at] == gl[at] {
				at++
			}
			fmt.Fprintf(&b, "line %d, from byte %d:\n  want %s\n  got  %s\n", i+1, at, wl[min(at, len(wl)):], gl[min(at, len(gl)):])
		}
	}
	return b.String()
}

// TestTranscripts checks the exact messages of each kind of approval, and
// of a relayed sampling request, against the golden transcripts.
func TestTranscripts(t *testing.T) {
	ctx := context.Background()
	args := map[string]any{"text": "hi"}
	allowOnce := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow-once"}}, nil
	}
	t.Run("approval-elicitation", func(t *testing.T) {
		e := newEnvIn(t, transcriptWorkspace(t), nil)
		cs, ss, w := recordedClient(t, e.srv, legacy, &mcp.ClientOptions{ElicitationHandler: allowOnce})
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: echoTool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%+v %v", res, err)
		}
		cs.Close()
		checkTranscript(t, "approval-elicitation", "A call approved over elicitation: a 2025-11-25 client that can elicit forms answers allow-once.", wireFile(w.transcript(t, ss.ID(), nil)))
	})
	t.Run("approval-input-requests", func(t *testing.T) {
		e := newEnvIn(t, transcriptWorkspace(t), nil)
		cs, ss, w := recordedClient(t, e.srv, "", &mcp.ClientOptions{ElicitationHandler: allowOnce})
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: echoTool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%+v %v", res, err)
		}
		cs.Close()
		checkTranscript(t, "approval-input-requests", "A call approved over input requests: a 2026-07-28 client answers berth's input request with allow-once on its retry.", wireFile(w.transcript(t, ss.ID(), nil)))
	})
	t.Run("approval-queue", func(t *testing.T) {
		e := newEnvIn(t, transcriptWorkspace(t), &Options{ApprovalTimeout: 20 * time.Second})
		cs, ss, w := recordedClient(t, e.srv, legacy, nil)
		approved := make(chan string, 1)
		go func() {
			p := nextPending(t, e.srv.queue)
			if p == nil {
				approved <- ""
				return
			}
			if _, err := e.srv.queue.Decide(p.ID, true, false, "test"); err != nil {
				t.Error(err)
			}
			approved <- p.ID
		}()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: echoTool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%+v %v", res, err)
		}
		id := <-approved
		cs.Close()
		checkTranscript(t, "approval-queue", "A call approved in the queue: a 2025-11-25 client that cannot elicit waits while `berth approve` allows the call.", wireFile(w.transcript(t, ss.ID(), []string{id})))
	})
	t.Run("relayed-sampling", func(t *testing.T) {
		// In the workspace: the confined plugin server may write there.
		ws := transcriptWorkspace(t)
		pluginWire := filepath.Join(ws, "plugin-wire")
		e := newRelayEnvIn(t, ws, []string{testrelay.WireEnv + "=" + pluginWire}, true)
		cs, ss, w := recordedClient(t, e.srv, legacy, &mcp.ClientOptions{
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "Paris"}}, nil
			},
		})
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "rly__up__sample"})
		if err != nil || res.IsError {
			t.Fatalf("%+v %v", res, err)
		}
		cs.Close()
		checkTranscript(t, "relayed-sampling", "A plugin server's sampling request relayed to a 2025-11-25 client that can sample, during an allowed call.",
			wireFile(w.transcript(t, ss.ID(), nil)), pluginSide(t, pluginWire, "sample"))
	})
}
