package pool

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func sseEvent(data string) string { return "event: message\ndata: " + data + "\n\n" }

// The tap reads a request's event stream however it is cut: progress of
// the call's token is relayed in order, others' are not, and the answer
// closes the call (a progress after it is never relayed).
func TestSSETap(t *testing.T) {
	for _, crlf := range []bool{false, true} {
		rec := &recordRelay{}
		oc := &openCall{req: &RelayRequest{Relay: rec}, token: "berth-t"}
		stream := sseEvent(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"berth-t","progress":1}}`) +
			": a comment\n" +
			sseEvent(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"berth-other","progress":5}}`) +
			"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\n" + "data: \"params\":{\"progressToken\":\"berth-t\",\"progress\":2}}\n\n" +
			"data: " + strings.Repeat("x", maxTapLine+10) + "\n\n" +
			sseEvent(`{"jsonrpc":"2.0","id":3,"result":{"content":[]}}`) +
			sseEvent(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"berth-t","progress":3}}`)
		if crlf {
			stream = strings.ReplaceAll(stream, "\n", "\r\n")
		}
		tap := &sseTap{ReadCloser: io.NopCloser(iotest.OneByteReader(strings.NewReader(stream))), oc: oc}
		b, err := io.ReadAll(tap)
		if err != nil || string(b) != stream {
			t.Fatalf("the tap changed the stream (%v)", err)
		}
		if got := rec.progress(); !slices.Equal(got, []float64{1, 2}) {
			t.Errorf("crlf=%v: relayed %v, want [1 2]", crlf, got)
		}
		if !oc.isClosed() {
			t.Errorf("crlf=%v: the answer did not close the call", crlf)
		}
	}
}

// FuzzSSETap: whatever a remote server streams, cut however, the tap
// passes it on unchanged, never panics and keeps at most maxTapLine of a
// line.
func FuzzSSETap(f *testing.F) {
	f.Add([]byte(sseEvent(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"berth-t","progress":1}}`)+sseEvent(`{"id":1,"result":{}}`)), uint8(3))
	f.Add([]byte("data: x\r\n\r\ndata:\ndata:{\n\n"), uint8(1))
	f.Fuzz(func(t *testing.T, stream []byte, cut uint8) {
		oc := &openCall{req: &RelayRequest{Relay: &recordRelay{}}, token: "berth-t"}
		tap := &sseTap{ReadCloser: io.NopCloser(strings.NewReader(string(stream))), oc: oc}
		var out []byte
		buf := make([]byte, int(cut)+1)
		for {
			n, err := tap.Read(buf)
			out = append(out, buf[:n]...)
			if len(tap.line) > maxTapLine || len(tap.data) > maxTapLine {
				t.Fatalf("the tap kept %d/%d bytes", len(tap.line), len(tap.data))
			}
			if err != nil {
				break
			}
		}
		if string(out) != string(stream) {
			t.Fatal("the tap changed the stream")
		}
	})
}

// Over Streamable HTTP (go-sdk's server and client, the client's HTTP
// answers through tapStream as berth's guard passes them), the progress a
// server streams before its answer has been relayed when the call
// returns, with no notification handler of go-sdk's involved.
func TestStreamableProgressBeforeAnswer(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "work"}, func(ctx context.Context, r *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		for i := 1; i <= 3; i++ {
			_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: r.Params.GetProgressToken(), Progress: float64(i), Message: fmt.Sprint("step ", i)})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()

	ctx := context.Background()
	s := &server{pl: &plugin{name: "p"}, name: "s", id: "p__s"}
	c := &conn{ctx: ctx, srv: s}
	tr := &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: tapTransport{http.DefaultTransport}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "berth", Version: "test"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for round := range 20 {
		rec := &recordRelay{}
		rctx, done := s.openRelay(WithRelay(ctx, &RelayRequest{Relay: rec, Progress: true}), c)
		if _, err := (mcpSession{cs}).callTool(rctx, "work", nil); err != nil {
			t.Fatal(err)
		}
		got := rec.progress()
		done()
		if !slices.Equal(got, []float64{1, 2, 3}) {
			t.Fatalf("round %d: relayed %v by the time the call returned, want [1 2 3]", round, got)
		}
	}
}

// tapTransport taps answers as guard.send does.
type tapTransport struct{ base http.RoundTripper }

func (t tapTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err == nil {
		tapStream(r, resp)
	}
	return resp, err
}
