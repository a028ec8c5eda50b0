package mcpexport

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const rawTool = "demo__up__raw"

// ambiguous are arguments berth must refuse before any decision, with
// the words that name the problem.
var ambiguous = []struct{ name, args, want string }{
	{"duplicate key", `{"path":"/home/me/notes.txt","note":"x","path":"/home/me/.ssh/id_ed25519"}`, `the key "path" appears more than once`},
	{"duplicate key after unescaping", `{"path":"a","p\u0061th":"b"}`, `the key "path" appears more than once`},
	{"nested duplicate key", `{"opts":{"list":[{"k":1,"k":2}]}}`, `the key "k" appears more than once`},
	{"invalid UTF-8", "{\"text\":\"a\xffb\"}", "not valid UTF-8"},
	{"lone surrogate", `{"text":"\ud800x"}`, `\ud800, half of a UTF-16 surrogate pair`},
	{"lone low surrogate", `{"text":"\udc00"}`, `\udc00, half of a UTF-16 surrogate pair`},
	{"too deep", `{"a":` + strings.Repeat("[", 32) + strings.Repeat("]", 32) + `}`, "nest deeper than 32 levels"},
}

func TestCanonicalArguments(t *testing.T) {
	for _, tc := range ambiguous {
		_, err := CanonicalArguments(json.RawMessage(tc.args))
		if !errors.Is(err, ErrAmbiguousArguments) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	for in, want := range map[string]string{
		``: `{}`,
		`{ "b" : 1e3, "a": ["\u0041", 12345678901234567890] }`:            `{"a":["A",12345678901234567890],"b":1e3}`,
		`{"t":"gpj.` + "\u202e" + `exe` + "\x7f" + `\t"}`:                 `{"t":"gpj.\u202eexe\u007f\t"}`,
		`{"emoji":"\ud83d\ude00 é"}`:                                      `{"emoji":"😀 é"}`,
		`{"a":` + strings.Repeat("[", 31) + strings.Repeat("]", 31) + `}`: `{"a":` + strings.Repeat("[", 31) + strings.Repeat("]", 31) + `}`,
	} {
		got, err := CanonicalArguments(json.RawMessage(in))
		if err != nil || string(got) != want {
			t.Errorf("CanonicalArguments(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{`[1]`, `"x"`, `{"a":}`} {
		if _, err := CanonicalArguments(json.RawMessage(bad)); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}

// TestAmbiguousArgumentsRefusedOnTheWire sends raw JSON-RPC requests, as a
// hostile client would: tools/call and prompts/get with ambiguous
// arguments are refused with an error naming the problem, before any
// decision (nothing waits in the queue, nothing runs), over Streamable
// HTTP and over a stdio-like connection; go-sdk never decodes them.
func TestAmbiguousArgumentsRefusedOnTheWire(t *testing.T) {
	e := newEnv(t, &Options{ApprovalTimeout: time.Minute})
	o := &HTTPOptions{Token: testToken}
	ctx := context.Background()
	url := "http://" + serveEnv(t, e, o) + "/mcp"
	sid := rawInit(t, url)
	for _, method := range []string{"tools/call", "prompts/get"} {
		for _, tc := range ambiguous {
			body := `{"jsonrpc":"2.0","id":9,"method":"` + method + `","params":{"name":"` + echoTool + `","arguments":` + tc.args + `}}`
			res, err := rawPost(ctx, url, sid, legacy, body)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(res.Body)
			res.Body.Close()
			var resp struct {
				ID    int
				Error *struct {
					Code    int
					Message string
				}
			}
			if json.Unmarshal(data, &resp) != nil || resp.Error == nil || resp.ID != 9 || resp.Error.Code != -32602 || !strings.Contains(resp.Error.Message, tc.want) {
				t.Errorf("%s %s over HTTP: %d %s; want a -32602 error saying %q", method, tc.name, res.StatusCode, data, tc.want)
			}
		}
	}
	// A duplicate key at the envelope level is refused as well.
	res, _ := rawPost(ctx, url, sid, legacy, `{"jsonrpc":"2.0","id":3,"method":"ping","method":"tools/call","params":{"name":"`+echoTool+`","arguments":{}}}`)
	if data, _ := io.ReadAll(res.Body); !strings.Contains(errorMessage(data), `the key "method" appears more than once`) {
		t.Errorf("a duplicate method: %s", data)
	}
	res.Body.Close()

	// The same over a stdio-like connection: raw lines on a pipe.
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	if _, err := e.srv.Connect(ctx, &mcp.IOTransport{Reader: sr, Writer: sw}); err != nil {
		t.Fatal(err)
	}
	defer cw.Close()
	lines := make(chan string, 100)
	go func() {
		buf := make([]byte, 1<<16)
		var acc []byte
		for {
			n, err := cr.Read(buf)
			acc = append(acc, buf[:n]...)
			for {
				i := strings.IndexByte(string(acc), '\n')
				if i < 0 {
					break
				}
				lines <- string(acc[:i])
				acc = acc[i+1:]
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	send := func(s string) { cw.Write([]byte(s + "\n")) }
	send(initBody)
	<-lines
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, tc := range ambiguous {
		send(`{"jsonrpc":"2.0","id":` + "1" + strings.Repeat("0", i) + `,"method":"tools/call","params":{"name":"` + echoTool + `","arguments":` + tc.args + `}}`)
		select {
		case line := <-lines:
			if !strings.Contains(line, "-32602") || !strings.Contains(errorMessage([]byte(line)), tc.want) {
				t.Errorf("%s over stdio: %s", tc.name, line)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s over stdio: no answer", tc.name)
		}
	}
	if list, _ := e.srv.queue.List(); len(list) != 0 {
		t.Fatalf("an ambiguous call reached the queue: %+v", list)
	}
}

// TestServerReceivesWhatWasShown: the plugin's server receives exactly
// the arguments the approver was shown, byte for byte: the canonical
// encoding, bound to the approval (queue entry, audit digest), whatever
// the client's spelling. A connection that skips the wire check
// (MCPServer directly) still has ambiguous tool arguments refused.
func TestServerReceivesWhatWasShown(t *testing.T) {
	e := newEnv(t, &Options{ApprovalTimeout: time.Minute})
	cs := e.client(legacy, nil)
	sent := json.RawMessage(`{ "z": "last", "path" : "/home/me/notes.txt", "n": 1.50, "nested": {"b": true, "a": "\u0041\u202e"} }`)
	shown := make(chan *Pending, 1)
	go func() {
		p := nextPending(t, e.srv.queue)
		shown <- p
		if p != nil {
			e.srv.queue.Decide(p.ID, true, false, "test")
		}
	}()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: rawTool, Arguments: sent})
	if err != nil || res.IsError {
		t.Fatalf("%+v %v", res, err)
	}
	got := res.Content[0].(*mcp.TextContent).Text
	p := <-shown
	if p == nil {
		t.FailNow()
	}
	want := `{"n":1.50,"nested":{"a":"A\u202e","b":true},"path":"/home/me/notes.txt","z":"last"}`
	if string(p.Arguments) != want || got != want {
		t.Fatalf("shown %s, received %s; want both %s", p.Arguments, got, want)
	}
	if a := readAudit(t, e.paths); len(a) != 1 || a[0].ArgumentsDigest != p.ArgumentsDigest || a[0].Outcome != OutcomeRan {
		t.Fatalf("audit %+v, want the digest %s", a, p.ArgumentsDigest)
	}

	// Straight to go-sdk's server, no wire check: the handler refuses.
	ct, st := mcp.NewInMemoryTransports()
	if _, err := e.srv.MCPServer().Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil)
	direct, err := c.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	_, err = direct.CallTool(context.Background(), &mcp.CallToolParams{Name: rawTool, Arguments: json.RawMessage(ambiguous[0].args)})
	if err == nil || !strings.Contains(err.Error(), ambiguous[0].want) {
		t.Fatalf("a duplicate key straight to go-sdk: %v", err)
	}
}

// TestLongArgumentsAreNotCutSilently: arguments too long for a form are
// shown key by key with their sizes, naming the command that shows all.
func TestLongArgumentsAreNotCutSilently(t *testing.T) {
	args := json.RawMessage(`{"note":"` + strings.Repeat("x", 5000) + `","path":"/home/me/notes.txt"}`)
	text, whole := ShowArguments(args, maxFormArgs, "k7f3-9q2x")
	if whole || !strings.Contains(text, "berth approvals --full k7f3-9q2x") || !strings.Contains(text, "note  string, 5002 bytes (not shown)") || !strings.Contains(text, `path  string, 20 bytes: "/home/me/notes.txt"`) {
		t.Fatalf("summary:\n%s", text)
	}
	if text, whole := ShowArguments(json.RawMessage(`{"a":1}`), maxFormArgs, ""); !whole || text != "{\n  \"a\": 1\n}" {
		t.Fatalf("short arguments: %q", text)
	}
}

// errorMessage is the message of a JSON-RPC error response.
func errorMessage(data []byte) string {
	var r struct{ Error struct{ Message string } }
	json.Unmarshal(data, &r)
	return r.Error.Message
}

// FuzzCanonicalArguments: whatever a client sends as tool-call arguments,
// berth either refuses it or returns a canonical encoding that is valid,
// strict, stable (canonical of canonical is itself) and means the same
// as what was sent.
func FuzzCanonicalArguments(f *testing.F) {
	for _, tc := range ambiguous {
		f.Add([]byte(tc.args))
	}
	for _, s := range []string{`{}`, `{"text":"hi"}`, `{"b":[1,2.5e-3,{"c":null}],"a":true}`, `{"\u00e9":"\ud83d\ude00"}`, `{"x":"\u202e\u0000"}`, `[]`, `{"a":1,"b":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		canon, err := CanonicalArguments(raw)
		if err != nil {
			return
		}
		if !json.Valid(canon) || checkStrict(canon, MaxArgumentDepth, "") != nil {
			t.Fatalf("canonical %q of %q is not strict JSON", canon, raw)
		}
		again, err := CanonicalArguments(canon)
		if err != nil || string(again) != string(canon) {
			t.Fatalf("canonical of %q is %q, then %q (%v)", raw, canon, again, err)
		}
		decode := func(b []byte) any {
			dec := json.NewDecoder(strings.NewReader(string(b)))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("decoding %q: %v", b, err)
			}
			return v
		}
		if len(strings.TrimSpace(string(raw))) > 0 && string(raw) != "null" {
			if a, b := decode(raw), decode(canon); !reflect.DeepEqual(a, b) {
				t.Fatalf("%q means %v, its canonical %q means %v", raw, a, canon, b)
			}
		}
		for _, c := range string(canon) {
			if c != ' ' && !unicode.IsPrint(c) {
				t.Fatalf("canonical %q holds the unprintable %U", canon, c)
			}
		}
	})
}

// FuzzCheckBody: no HTTP body makes the wire check panic.
func FuzzCheckBody(f *testing.F) {
	f.Add([]byte(callBody))
	f.Add([]byte(`[` + callBody + `,{"jsonrpc":"2.0","id":"x","method":"ping"}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkBody(body)
	})
}
