package nativetool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/go-plugin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// rawServer answers with whatever bytes a test gives it: a stand-in for a
// malicious or broken plugin.
type rawServer struct {
	list   []byte
	result []byte
	err    error
}

func (s *rawServer) ListTools(context.Context, *emptypb.Empty) (*wrapperspb.BytesValue, error) {
	return wrapperspb.Bytes(s.list), s.err
}

func (s *rawServer) CallTool(context.Context, *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error) {
	return wrapperspb.Bytes(s.result), s.err
}

// inProcess connects a Client to srv over a real gRPC connection, without
// a subprocess. Kill and exit detection are not available on it.
func inProcess(t *testing.T, srv providerServer) *Client {
	t.Helper()
	cc, server := plugin.TestGRPCConn(t, func(s *grpc.Server) { s.RegisterService(&serviceDesc, srv) })
	t.Cleanup(func() {
		_ = cc.Close()
		server.Stop()
	})
	return &Client{exe: "/fake/plugin", rpc: &rpcClient{cc: cc}, killDone: make(chan struct{})}
}

func toolsJSON(n int) string {
	var b strings.Builder
	b.WriteString(`{"tools":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"t%d","inputSchema":{"type":"object"}}`, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

func TestHostRejectsMalformedToolLists(t *testing.T) {
	deep := `{"tools":[{"name":"a","inputSchema":{"type":"object","x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}}]}`
	for _, tc := range []struct{ name, list, want string }{
		{"not JSON", `nope`, "not a JSON object"},
		{"array", `[]`, "not a JSON object"},
		{"tools not an array", `{"tools":{}}`, "cannot unmarshal"},
		{"tool not an object", `{"tools":[1]}`, "not a JSON object"},
		{"bad name", `{"tools":[{"name":"bad name","inputSchema":{"type":"object"}}]}`, "does not match"},
		{"long name", `{"tools":[{"name":"` + strings.Repeat("a", 65) + `","inputSchema":{"type":"object"}}]}`, "does not match"},
		{"duplicate", `{"tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"a","inputSchema":{"type":"object"}}]}`, "used twice"},
		{"no schema", `{"tools":[{"name":"a"}]}`, "inputSchema"},
		{"schema not object type", `{"tools":[{"name":"a","inputSchema":{"type":"string"}}]}`, `"type" is "string"`},
		{"schema type missing", `{"tools":[{"name":"a","inputSchema":{}}]}`, `no "type"`},
		{"output schema array", `{"tools":[{"name":"a","inputSchema":{"type":"object"},"outputSchema":[]}]}`, "outputSchema"},
		{"too many", toolsJSON(MaxTools + 1), "at most 1000"},
		{"nesting bomb", deep, "depth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := inProcess(t, &rawServer{list: []byte(tc.list)})
			_, err := c.ListTools(context.Background())
			if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ListTools = %v, want ErrProtocol containing %q", err, tc.want)
			}
		})
	}
}

func TestHostDecodesToolList(t *testing.T) {
	c := inProcess(t, &rawServer{list: []byte(`{"tools":[
		{"name":"a","description":"d","inputSchema":{"type":"object","properties":{"n":{"type":"integer"}}},
		 "outputSchema":{"type":"object"},
		 "annotations":{"title":"A","readOnlyHint":true,"openWorldHint":false},"futureField":1},
		{"name":"b","inputSchema":{"type":"object"},"annotations":{"destructiveHint":false,"idempotentHint":true}},
		{"name":"c","inputSchema":{"type":"object"}}]}`)})
	tools, err := c.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 3 {
		t.Fatalf("got %d tools", len(tools))
	}
	a, b, cc := tools[0], tools[1], tools[2]
	if a.Name != "a" || a.Description != "d" || a.InputSchema.(map[string]any)["properties"] == nil || a.OutputSchema == nil {
		t.Errorf("a = %+v", a)
	}
	if an := a.Annotations; an.Title != "A" || !an.ReadOnlyHint || an.DestructiveHint != nil || an.OpenWorldHint == nil || *an.OpenWorldHint {
		t.Errorf("a.Annotations = %+v", an)
	}
	if an := b.Annotations; an.ReadOnlyHint || an.DestructiveHint == nil || *an.DestructiveHint || !an.IdempotentHint || an.OpenWorldHint != nil {
		t.Errorf("b.Annotations = %+v: an explicit false must stay false and an absent hint absent", an)
	}
	if cc.Annotations != nil || cc.OutputSchema != nil {
		t.Errorf("c = %+v, want no annotations and no output schema", cc)
	}
	// MaxTools itself is fine.
	c = inProcess(t, &rawServer{list: []byte(toolsJSON(MaxTools))})
	if tools, err := c.ListTools(context.Background()); err != nil || len(tools) != MaxTools {
		t.Errorf("ListTools with %d tools = %d, %v", MaxTools, len(tools), err)
	}
}

func TestHostRejectsMalformedResults(t *testing.T) {
	for _, tc := range []struct{ name, result, want string }{
		{"not JSON", `nope`, "not a JSON object"},
		{"content not an array", `{"content":"x"}`, "cannot unmarshal"},
		{"item not an object", `{"content":[1]}`, "not a JSON object"},
		{"no type", `{"content":[{"text":"x"}]}`, `no "type"`},
		{"sampling-only type", `{"content":[{"type":"tool_use","id":"1","name":"x","input":{}}]}`, "unsupported type"},
		{"unknown type", `{"content":[{"type":"bogus"}]}`, "unsupported type"},
		{"text without text", `{"content":[{"type":"text"}]}`, `no "text"`},
		{"text not a string", `{"content":[{"type":"text","text":1}]}`, "cannot unmarshal"},
		{"image without mimeType", `{"content":[{"type":"image","data":"AA=="}]}`, `no "mimeType"`},
		{"image bad base64", `{"content":[{"type":"image","data":"!!!","mimeType":"image/png"}]}`, "content"},
		{"resource without body", `{"content":[{"type":"resource","resource":{"uri":"file:///x"}}]}`, "resource.text or resource.blob"},
		{"resource_link without name", `{"content":[{"type":"resource_link","uri":"file:///x"}]}`, `no "name"`},
		{"structured not JSON", `{"content":[],"structuredContent":}`, "invalid character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := inProcess(t, &rawServer{result: []byte(tc.result)})
			_, err := c.CallTool(context.Background(), "x", nil)
			if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CallTool = %v, want ErrProtocol containing %q", err, tc.want)
			}
		})
	}
}

func TestHostDecodesResult(t *testing.T) {
	c := inProcess(t, &rawServer{result: []byte(`{"content":[
		{"type":"text","text":"hi"},
		{"type":"image","data":"iVBORw==","mimeType":"image/png"},
		{"type":"resource_link","uri":"file:///w/a.txt","name":"a.txt"},
		{"type":"resource","resource":{"uri":"file:///w/b.bin","blob":"AAE="}}],
		"structuredContent":{"n":12345678901234567890},"isError":true,
		"resultType":"input_required","inputRequests":{"x":{}},"_meta":{"a":1}}`)})
	r, err := c.CallTool(context.Background(), "x", json.RawMessage(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Content) != 4 || !r.IsError {
		t.Fatalf("result = %+v", r)
	}
	if tc, ok := r.Content[0].(*mcp.TextContent); !ok || tc.Text != "hi" {
		t.Errorf("content[0] = %#v", r.Content[0])
	}
	if ic, ok := r.Content[1].(*mcp.ImageContent); !ok || ic.MIMEType != "image/png" || len(ic.Data) == 0 {
		t.Errorf("content[1] = %#v", r.Content[1])
	}
	if _, ok := r.Content[2].(*mcp.ResourceLink); !ok {
		t.Errorf("content[2] = %#v", r.Content[2])
	}
	if er, ok := r.Content[3].(*mcp.EmbeddedResource); !ok || string(er.Resource.Blob) != "\x00\x01" {
		t.Errorf("content[3] = %#v", r.Content[3])
	}
	if got := string(r.StructuredContent.(json.RawMessage)); got != `{"n":12345678901234567890}` {
		t.Errorf("structuredContent = %s", got)
	}
	// Only content, structuredContent and isError cross over: a plugin
	// cannot ask the client for input or set _meta.
	if r.NeedsInput() || r.InputRequests != nil || r.Meta != nil {
		t.Errorf("fields beyond the protocol leaked through: %+v", r)
	}

	c = inProcess(t, &rawServer{result: []byte(`{}`)})
	r, err = c.CallTool(context.Background(), "x", nil)
	if err != nil || r.Content == nil || len(r.Content) != 0 || r.StructuredContent != nil || r.IsError {
		t.Errorf("empty result = %+v, %v; want empty content", r, err)
	}
	if b, _ := json.Marshal(r); !strings.Contains(string(b), `"content":[]`) {
		t.Errorf("empty result marshals as %s", b)
	}
}

func TestHostLimitsAndStatus(t *testing.T) {
	big := append([]byte(`{"content":[{"type":"text","text":"`), make([]byte, MaxMessageBytes+1)...)
	c := inProcess(t, &rawServer{result: big})
	if _, err := c.CallTool(context.Background(), "x", nil); !errors.Is(err, ErrProtocol) {
		t.Errorf("CallTool with a result over the limit = %v, want ErrProtocol", err)
	}
	c = inProcess(t, &rawServer{err: status.Error(codes.NotFound, `no tool named "x"`)})
	if _, err := c.CallTool(context.Background(), "x", nil); err == nil || errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), `no tool named "x"`) {
		t.Errorf("CallTool of an unknown tool = %v", err)
	}
	for _, tc := range []struct {
		name, args string
	}{
		{"bad name", `{}`},
		{"x", `[1]`},
		{"x", `{"a":`},
		{"x", `"s"`},
	} {
		if _, err := c.CallTool(context.Background(), tc.name, json.RawMessage(tc.args)); err == nil {
			t.Errorf("CallTool(%q, %s) succeeded", tc.name, tc.args)
		}
	}
	huge := json.RawMessage(`{"a":"` + strings.Repeat("x", MaxMessageBytes) + `"}`)
	if _, err := c.CallTool(context.Background(), "x", huge); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("CallTool with oversized arguments = %v", err)
	}
}

func TestServeValidatesTools(t *testing.T) {
	h := func(context.Context, json.RawMessage) (*Result, error) { return nil, nil }
	many := make([]Tool, MaxTools+1)
	for i := range many {
		many[i] = Tool{Name: fmt.Sprintf("t%d", i), Handler: h}
	}
	for _, tc := range []struct {
		name  string
		tools []Tool
		want  string
	}{
		{"none", nil, "no tools"},
		{"bad name", []Tool{{Name: "a b", Handler: h}}, `tool 0 ("a b"): name must match`},
		{"empty name", []Tool{{Name: "", Handler: h}}, "name must match"},
		{"duplicate", []Tool{{Name: "a", Handler: h}, {Name: "a", Handler: h}}, `tool 1: the name "a" is used twice`},
		{"nil handler", []Tool{{Name: "a"}}, "Handler is nil"},
		{"schema type", []Tool{{Name: "a", Handler: h, InputSchema: map[string]any{"type": "string"}}}, `InputSchema: schema "type" is "string"`},
		{"schema no type", []Tool{{Name: "a", Handler: h, InputSchema: json.RawMessage(`{"properties":{}}`)}}, `no "type"`},
		{"schema invalid JSON", []Tool{{Name: "a", Handler: h, InputSchema: json.RawMessage(`{`)}}, "InputSchema: not valid JSON"},
		{"schema array", []Tool{{Name: "a", Handler: h, InputSchema: []string{"x"}}}, "not a JSON object"},
		{"schema unmarshalable", []Tool{{Name: "a", Handler: h, InputSchema: make(chan int)}}, "InputSchema: json: unsupported type"},
		{"output schema", []Tool{{Name: "a", Handler: h, OutputSchema: "x"}}, "OutputSchema: schema is not a JSON object"},
		{"too many", many, "at most 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Serve would take over the process if it accepted the tools.
			if _, err := newProvider(tc.tools); err == nil {
				t.Fatal("the tools were accepted")
			}
			defer func() {
				v := recover()
				msg, _ := v.(string)
				if !strings.HasPrefix(msg, "nativetool.Serve: ") || !strings.Contains(msg, tc.want) {
					t.Errorf("Serve panicked with %v, want a message containing %q", v, tc.want)
				}
			}()
			Serve(tc.tools...)
		})
	}
}

func TestProviderCalls(t *testing.T) {
	p, err := newProvider([]Tool{
		{Name: "fails", Handler: func(context.Context, json.RawMessage) (*Result, error) {
			return nil, errors.New("no such thing")
		}},
		{Name: "nil", Handler: func(context.Context, json.RawMessage) (*Result, error) { return nil, nil }},
		{Name: "badcontent", Handler: func(context.Context, json.RawMessage) (*Result, error) {
			return &Result{Content: []json.RawMessage{json.RawMessage(`{"type":"tool_use"}`)}}, nil
		}},
		{Name: "badstructured", Handler: func(context.Context, json.RawMessage) (*Result, error) {
			return &Result{StructuredContent: make(chan int)}, nil
		}},
		{Name: "args", Handler: func(_ context.Context, args json.RawMessage) (*Result, error) {
			return Text(string(args)), nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	call := func(req string) (map[string]any, error) {
		out, err := p.CallTool(ctx, wrapperspb.Bytes([]byte(req)))
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(out.GetValue(), &m); err != nil {
			t.Fatal(err)
		}
		return m, nil
	}
	text := func(m map[string]any) string {
		return m["content"].([]any)[0].(map[string]any)["text"].(string)
	}
	if _, err := call(`{"name":"nope"}`); status.Code(err) != codes.NotFound {
		t.Errorf("unknown tool: %v", err)
	}
	if _, err := call(`{"name":"args","arguments":[1]}`); status.Code(err) != codes.InvalidArgument {
		t.Errorf("array arguments: %v", err)
	}
	if _, err := call(`{`); status.Code(err) != codes.InvalidArgument {
		t.Errorf("bad request: %v", err)
	}
	if m, _ := call(`{"name":"args"}`); text(m) != "{}" {
		t.Errorf("absent arguments = %q, want {}", text(m))
	}
	if m, _ := call(`{"name":"fails","arguments":{}}`); m["isError"] != true || text(m) != "no such thing" {
		t.Errorf("handler error = %v", m)
	}
	if m, _ := call(`{"name":"nil"}`); m["isError"] != nil || len(m["content"].([]any)) != 0 {
		t.Errorf("nil result = %v", m)
	}
	if m, _ := call(`{"name":"badcontent"}`); m["isError"] != true || !strings.Contains(text(m), "unusable result") {
		t.Errorf("bad content = %v", m)
	}
	if m, _ := call(`{"name":"badstructured"}`); m["isError"] != true || !strings.Contains(text(m), "StructuredContent") {
		t.Errorf("bad structured content = %v", m)
	}
}

// The SDK and the host client agree, over a real gRPC connection.
func TestRoundTripInProcess(t *testing.T) {
	p, err := newProvider(testTools())
	if err != nil {
		t.Fatal(err)
	}
	c := inProcess(t, p)
	tools, err := c.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != len(testTools()) || tools[0].Name != "echo" {
		t.Fatalf("tools = %v", tools)
	}
	echo := tools[0]
	if a := echo.Annotations; a == nil || !a.ReadOnlyHint || a.IdempotentHint || a.DestructiveHint != nil || a.OpenWorldHint == nil || *a.OpenWorldHint {
		t.Errorf("echo annotations = %+v", a)
	}
	if s := tools[1].InputSchema.(map[string]any); s["type"] != "object" || s["properties"] == nil {
		t.Errorf("default input schema = %v", s)
	}
	if tools[1].Annotations != nil {
		t.Errorf("tool without annotations got %+v", tools[1].Annotations)
	}
	r, err := c.CallTool(context.Background(), "panic", nil)
	if err != nil || !r.IsError || !strings.Contains(textOf(r), "panic: boom") {
		t.Errorf("panic = %v, %v", r, err)
	}
}

func TestHelpers(t *testing.T) {
	if r := Errorf("bad %d", 1); !r.IsError || string(r.Content[0]) != `{"type":"text","text":"bad 1"}` {
		t.Errorf("Errorf = %+v", r)
	}
	r := Structured(map[string]int{"a": 1})
	if r.IsError || string(r.StructuredContent.(json.RawMessage)) != "{\n  \"a\": 1\n}" {
		t.Errorf("Structured = %+v", r)
	}
	if r := Structured(make(chan int)); !r.IsError {
		t.Errorf("Structured(chan) = %+v", r)
	}
	var v struct{ A int }
	if err := DecodeArgs(json.RawMessage(`{"A":1,"B":2}`), &v); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Errorf("DecodeArgs with an unknown field = %v", err)
	}
	if err := DecodeArgs(json.RawMessage(`{"A":1} {}`), &v); err == nil {
		t.Error("DecodeArgs with trailing data succeeded")
	}
	if err := DecodeArgs(json.RawMessage(`{"A":1}`), &v); err != nil || v.A != 1 {
		t.Errorf("DecodeArgs = %v, %+v", err, v)
	}
	if Logger(context.Background()) == nil {
		t.Error("Logger outside a call is nil")
	}
}

// A plugin's output must never crash the host.
func FuzzDecodeCallResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}],"structuredContent":{"a":1},"isError":true}`,
		`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"x","text":"t"}}]}`,
		`{"content":[{"type":"resource_link","uri":"x","name":"n"}]}`,
		`{}`, `null`, `[]`, `{"content":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeCallResult(b)
		if err == nil {
			if r.Content == nil {
				t.Fatal("nil content")
			}
			if _, err := json.Marshal(r); err != nil {
				t.Fatalf("an accepted result does not marshal: %v", err)
			}
		}
	})
}

func FuzzDecodeToolList(f *testing.F) {
	for _, s := range []string{
		`{"tools":[{"name":"a","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`,
		`{"tools":[{"name":"a","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}}]}`,
		`{"tools":[]}`, `{}`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tools, err := decodeToolList(b)
		if err == nil {
			for _, tl := range tools {
				if !toolNameRe.MatchString(tl.Name) {
					t.Fatalf("accepted name %q", tl.Name)
				}
			}
		}
	})
}

// A key given twice (or twice but for letter case) is refused, with its
// JSON path: JSON readers disagree on which one wins.
func TestDecodeArgsRefusesDuplicateKeys(t *testing.T) {
	var v struct {
		Path string `json:"path"`
	}
	err := DecodeArgs(json.RawMessage(`{"path":"a","path":"b"}`), &v)
	if err == nil || !strings.Contains(err.Error(), `invalid arguments: path: the key "path" appears more than once (JSON readers disagree on which one wins)`) {
		t.Errorf("DecodeArgs with a key twice = %v", err)
	}
	err = DecodeArgs(json.RawMessage(`{"path":"a","Path":"b"}`), &v)
	if err == nil || !strings.Contains(err.Error(), `the keys "path" and "Path" differ only in letter case`) {
		t.Errorf("DecodeArgs with a key twice but for case = %v", err)
	}
	if err := DecodeArgs(json.RawMessage(`{"path":null}`), &v); err != nil {
		t.Errorf("DecodeArgs with null = %v", err)
	}
}
