//lint:file-ignore SA1019 the recording Relay implements the SEP-2577 sampling method of the interface

package pool

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/store"
)

// recordRelay records the progress relayed to it.
type recordRelay struct {
	mu  sync.Mutex
	got []float64
}

func (r *recordRelay) Progress(_ context.Context, _ Origin, p *mcp.ProgressNotificationParams) {
	r.mu.Lock()
	r.got = append(r.got, p.Progress)
	r.mu.Unlock()
}
func (r *recordRelay) CreateMessage(context.Context, Origin, store.PolicyMatch, *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	return nil, nil
}
func (r *recordRelay) Elicit(context.Context, Origin, store.PolicyMatch, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return nil, nil
}
func (r *recordRelay) Client() any { return r }

func (r *recordRelay) progress() []float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// wireServer plays a plugin server on a stdio pipe, writing exactly the
// lines a test gives it: for a tools/call of the tool named in lines, it
// writes each line in order, with TOKEN and ID replaced by the request's.
func wireServer(t *testing.T, r io.Reader, w io.WriteCloser, calls map[string][]string) {
	defer w.Close()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
				Meta struct {
					Token string `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Errorf("the fake server read %q: %v", sc.Text(), err)
			return
		}
		var out []string
		switch m.Method {
		case "initialize":
			out = []string{`{"jsonrpc":"2.0","id":ID,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}}`}
		case "ping":
			out = []string{`{"jsonrpc":"2.0","id":ID,"result":{}}`}
		case "tools/call":
			out = calls[m.Params.Name]
		}
		for _, l := range out {
			l = strings.ReplaceAll(l, "TOKEN", m.Params.Meta.Token)
			l = strings.ReplaceAll(l, "ID", string(m.ID))
			if _, err := io.WriteString(w, l+"\n"); err != nil {
				return
			}
		}
	}
}

func progressLine(v int, total int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"TOKEN","progress":%d,"total":%d}}`, v, total)
}

const resultLine = `{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"done"}]}}`

// A call with a progress token is closed the moment its answer is read off
// the wire, with no timer: the progress the server sent before its answer
// has reached the Relay, in order, by the time the call returns; the call
// returns (and is done) at once, though the server never said its
// progress was complete; and progress the server sends after its answer
// is never relayed. The clock is synctest's: any wait for progress that
// might still come (the drain this replaced waited 50 ms for it) would
// show as time passed.
func TestWireProgressBeforeAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		toClient, fromServer := io.Pipe()
		toServer, fromClient := io.Pipe()
		go wireServer(t, toServer, fromServer, map[string][]string{
			// Progress of unknown total, then the answer.
			"quiet": {progressLine(1, 0), progressLine(2, 0), resultLine},
			// Progress after the answer: never relayed.
			"late": {progressLine(1, 3), resultLine, progressLine(2, 3), progressLine(3, 3)},
		})
		s := &server{pl: &plugin{name: "p"}, name: "s", id: "p__s"}
		c := &conn{ctx: ctx, srv: s}
		opts := &mcp.ClientOptions{}
		s.relayOptions(c, opts)
		client := mcp.NewClient(&mcp.Implementation{Name: "berth", Version: "test"}, opts)
		cs, err := client.Connect(ctx, &wireTransport{Transport: &mcp.IOTransport{Reader: toClient, Writer: fromClient}, c: c}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()

		for _, tc := range []struct {
			tool string
			want []float64
		}{
			{"quiet", []float64{1, 2}},
			{"late", []float64{1}},
		} {
			rec := &recordRelay{}
			rctx, done := s.openRelay(WithRelay(ctx, &RelayRequest{Relay: rec, Progress: true}), c)
			start := time.Now()
			if _, err := (mcpSession{cs}).callTool(rctx, tc.tool, nil); err != nil {
				t.Fatalf("%s: %v", tc.tool, err)
			}
			if got := rec.progress(); !slices.Equal(got, tc.want) {
				t.Errorf("%s: relayed %v by the time the call returned, want %v", tc.tool, got, tc.want)
			}
			done()
			if d := time.Since(start); d != 0 {
				t.Errorf("%s: the call was open %v after its answer (a timer); want no wait at all", tc.tool, d)
			}
			// Everything the server wrote before the ping's answer has
			// been read when the ping returns.
			if err := cs.Ping(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if got := rec.progress(); !slices.Equal(got, tc.want) {
				t.Errorf("%s: relayed %v in all, want %v (nothing sent after the answer)", tc.tool, got, tc.want)
			}
		}
	})
}
