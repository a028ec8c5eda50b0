package stdioframe

import (
	"context"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

var seeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
	`{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"hi"}]}}`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no","data":{"x":1}}}`,
	`{"jsonrpc":"2.0","id":null,"result":{}}`,
	`{"JSONRPC":"2.0","ID":1,"Method":"x"}`,
	`{"jsonrpc":"2.0","id":1.5,"method":null}`,
	`{"jsonrpc":"2.0","id":1,"method":""}`,
	`{"jsonrpc":"1.0","id":1,"method":"x"}`,
	`{"jsonrpc":"2.0","id":{},"method":"x"}`,
	`{"jsonrpc":"2.0","id":1,"method":"x"} trailing`,
	`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]`,
	`[]`, `null`, `[1]`, `"x"`, ``, `{`, `{"jsonrpc":"2.0","id":1,"method":"\u00e9\ud800"}`,
	strings.Repeat("[", 1001) + strings.Repeat("]", 1001),
}

// FuzzDecodeMessage holds the decoder to go-sdk's own: the same message
// for every input go-sdk accepts, an error for every input it refuses.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, werr := jsonrpc.DecodeMessage(data)
		got, gerr := DecodeMessage(data)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: go-sdk err %v, berth err %v", data, werr, gerr)
		}
		if werr == nil && !reflect.DeepEqual(want, got) {
			t.Fatalf("%q: go-sdk %#v, berth %#v", data, want, got)
		}
	})
}

func TestDecodeBatch(t *testing.T) {
	msgs, isBatch, err := DecodeBatch([]byte(` [{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]`))
	if err != nil || !isBatch || len(msgs) != 2 {
		t.Fatalf("got %v %v %v", msgs, isBatch, err)
	}
	if _, _, err := DecodeBatch([]byte(`[]`)); err == nil {
		t.Fatal("an empty batch was accepted")
	}
	if _, _, err := DecodeBatch([]byte(`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"1.0","id":2,"method":"a"}]`)); err == nil {
		t.Fatal("a batch with a bad message was accepted")
	}
}

// pipeConn connects a conn to the test's ends of two pipes.
func pipeConn(t *testing.T, maxLine int) (c *conn, toConn io.WriteCloser, fromConn io.ReadCloser) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c = newConn(inR, outW, maxLine)
	t.Cleanup(func() { c.Close(); inW.Close(); outR.Close() })
	return c, inW, outR
}

func readLine(t *testing.T, r io.Reader) string {
	t.Helper()
	var b []byte
	one := make([]byte, 1)
	for {
		if _, err := r.Read(one); err != nil {
			t.Fatalf("read: %v (so far %q)", err, b)
		}
		if one[0] == '\n' {
			return string(b)
		}
		b = append(b, one[0])
	}
}

func TestConnReadWrite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, in, out := pipeConn(t, 0)
	go io.WriteString(in, `{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}`+"\r\n")
	m, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := m.(*jsonrpc.Response); !ok || string(r.Result) != `{"ok":true}` {
		t.Fatalf("first message %#v", m)
	}
	m, err = c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := m.(*jsonrpc.Request); !ok || r.Method != "notifications/message" || r.IsCall() {
		t.Fatalf("second message %#v", m)
	}
	id, _ := jsonrpc.MakeID(float64(3))
	go c.Write(ctx, &jsonrpc.Request{ID: id, Method: "ping"})
	if got := readLine(t, out); got != `{"jsonrpc":"2.0","id":3,"method":"ping"}` {
		t.Fatalf("wrote %s", got)
	}
}

// A batch of calls is answered with one array once every call has its
// response; a notification in it awaits none.
func TestConnBatchAnswered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, in, out := pipeConn(t, 0)
	go io.WriteString(in, `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":2,"method":"b"}]`+"\n")
	var ids []jsonrpc.ID
	for range 3 {
		m, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r := m.(*jsonrpc.Request); r.IsCall() {
			ids = append(ids, r.ID)
		}
	}
	lines := make(chan string, 1)
	go func() { lines <- readLine(t, out) }()
	if err := c.Write(ctx, &jsonrpc.Response{ID: ids[1], Result: json.RawMessage(`2`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-lines:
		t.Fatalf("wrote %s before the batch was complete", l)
	case <-time.After(50 * time.Millisecond):
	}
	if err := c.Write(ctx, &jsonrpc.Response{ID: ids[0], Result: json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	if got, want := <-lines, `[{"jsonrpc":"2.0","id":1,"result":1},{"jsonrpc":"2.0","id":2,"result":2}]`; got != want {
		t.Fatalf("wrote %s, want %s", got, want)
	}
}

func TestConnRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		input string
		max   int
		want  string
	}{
		"trailing data":   {`{"jsonrpc":"2.0","id":1,"result":{}} x` + "\n", 0, "trailing data"},
		"frame too large": {`{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("a", 100) + `"}` + "\n", 64, "maximum line length"},
		"bad version":     {`{"jsonrpc":"1.0","id":1,"result":{}}` + "\n", 0, "version tag"},
		"too deep":        {`{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + "}\n", 0, "nesting depth"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, in, _ := pipeConn(t, tc.max)
			go io.WriteString(in, tc.input)
			_, err := c.Read(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one with %q", err, tc.want)
			}
		})
	}
}

func TestConnClose(t *testing.T) {
	c, _, _ := pipeConn(t, 0)
	done := make(chan error, 1)
	go func() { _, err := c.Read(context.Background()); done <- err }()
	c.Close()
	select {
	case err := <-done:
		if err != io.EOF {
			t.Fatalf("Read after Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read did not return after Close")
	}
}

// BenchmarkDecode compares one tools/call message decoded by go-sdk's
// jsonrpc.DecodeMessage and by this package.
func BenchmarkDecode(b *testing.B) {
	msg := []byte(seeds[0])
	b.Run("go-sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jsonrpc.DecodeMessage(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stdioframe", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeMessage(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Once this end answered an initialize with 2025-06-18 or later, a batch
// is refused, as go-sdk's ioConn refuses it; before that (or at an older
// version) it is read.
func TestConnBatchRefusedAfterInitialize(t *testing.T) {
	for _, tc := range []struct {
		version string
		refused bool
	}{{"2025-03-26", false}, {"2025-06-18", true}, {"2025-11-25", true}} {
		t.Run(tc.version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, in, out := pipeConn(t, 0)
			go io.WriteString(in, `{"jsonrpc":"2.0","id":"i","method":"initialize","params":{}}`+"\n")
			m, err := c.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			go io.Copy(io.Discard, out)
			res := json.RawMessage(`{"protocolVersion":"` + tc.version + `"}`)
			if err := c.Write(ctx, &jsonrpc.Response{ID: m.(*jsonrpc.Request).ID, Result: res}); err != nil {
				t.Fatal(err)
			}
			go io.WriteString(in, `[{"jsonrpc":"2.0","method":"a"}]`+"\n")
			_, err = c.Read(ctx)
			if refused := err != nil && strings.Contains(err.Error(), "batching is not supported"); refused != tc.refused {
				t.Fatalf("err %v, want refused=%v", err, tc.refused)
			}
		})
	}
}
