package nativetool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/berth-mcp/berth/internal/strictjson"
)

// Tool is one tool a plugin offers.
type Tool struct {
	// Name is the tool's name within the plugin; it must match
	// ^[a-zA-Z0-9_-]{1,64}$. berth exports it as <plugin>__<name>.
	Name string
	// Description tells the model what the tool does.
	Description string
	// InputSchema is a JSON Schema whose "type" is "object": anything that
	// marshals to one, such as a json.RawMessage or a map[string]any.
	// Nil means an object with no declared properties.
	InputSchema any
	// OutputSchema optionally describes the result's StructuredContent;
	// it must marshal to a JSON object.
	OutputSchema any
	// Annotations are optional hints for clients and for berth's approval
	// (a destructive tool always asks unless allowed by exact name).
	Annotations *Annotations
	// Handler runs one call. args is the JSON object the client sent.
	// A returned error becomes an isError result carrying its text; a
	// panic fails only this call. Handlers run concurrently, each on its
	// own goroutine; ctx ends when the host cancels the call or stops the
	// plugin.
	Handler func(ctx context.Context, args json.RawMessage) (*Result, error)
}

// Annotations are the MCP tool annotations. The pointer hints default to
// true in MCP when unset; the plain ones default to false.
type Annotations struct {
	Title           string
	ReadOnlyHint    bool
	DestructiveHint *bool
	IdempotentHint  bool
	OpenWorldHint   *bool
}

// Bool returns a pointer to b, for the pointer fields of Annotations.
func Bool(b bool) *bool { return &b }

// Result is the outcome of one call, in MCP terms.
type Result struct {
	// Content holds MCP content items, each a JSON object with a "type" of
	// text, image, audio, resource_link or resource. Use TextContent for
	// text; other items pass through to the client as they are.
	Content []json.RawMessage
	// StructuredContent, if non-nil, is marshaled to JSON and sent as the
	// result's structuredContent.
	StructuredContent any
	// IsError marks a result that reports a failure to the model.
	IsError bool
}

// TextContent returns an MCP text content item.
func TextContent(s string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", s})
	return b
}

// Text returns a successful result with one text item.
func Text(s string) *Result {
	return &Result{Content: []json.RawMessage{TextContent(s)}}
}

// Errorf returns an isError result whose text is formatted like fmt.Sprintf.
// Use it for failures the model should see and may correct (bad input, a
// missing file); the plugin keeps running.
func Errorf(format string, a ...any) *Result {
	r := Text(fmt.Sprintf(format, a...))
	r.IsError = true
	return r
}

// Structured returns a successful result whose structuredContent is v and
// whose text item is v as indented JSON, for clients that read only text.
func Structured(v any) *Result {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return Errorf("cannot encode the result as JSON: %v", err)
	}
	return &Result{Content: []json.RawMessage{TextContent(string(b))}, StructuredContent: json.RawMessage(b)}
}

// DecodeArgs decodes a call's arguments into v strictly: an unknown field
// (field names match exactly, letter case included), a key given twice (or
// twice but for letter case), a wrong type or trailing data is an error
// that names every problem with its JSON path. null is the zero value.
// Return its error from the handler to report bad input to the model.
func DecodeArgs(args json.RawMessage, v any) error {
	if err := strictjson.Unmarshal("", args, v, strictjson.Options{FoldCase: true, Nulls: strictjson.NullAnywhere}); err != nil {
		return fmt.Errorf("invalid arguments: %w", err)
	}
	return nil
}

type loggerKey struct{}

// Logger returns the logger of the plugin, named for the tool being called.
// Its JSON lines go to the plugin's stderr, where the host re-logs them
// into the plugin's log (`berth logs`). Outside a call it returns a logger
// that discards everything.
func Logger(ctx context.Context) hclog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(hclog.Logger); ok {
		return l
	}
	return hclog.NewNullLogger()
}

// Serve serves tools to the berth host that launched this executable and
// returns when the host stops the plugin. Call it once from main, before
// anything writes to stdout: go-plugin's handshake is the first line of
// stdout. Run directly, not by a host, it prints a notice and exits 1.
//
// Serve panics if a tool is invalid: a bad or duplicate name, a nil
// handler, an input schema that is not {"type":"object",...}, or more tools
// or schema bytes than the protocol allows.
func Serve(tools ...Tool) {
	p, err := newProvider(tools)
	if err != nil {
		panic("nativetool.Serve: " + err.Error())
	}
	logger := hclog.New(&hclog.LoggerOptions{
		Level:      hclog.Info,
		Output:     os.Stderr, // the process's fd 2, which the host reads
		JSONFormat: true,
	})
	p.log = logger
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: handshake(),
		Plugins:         plugin.PluginSet{PluginName: &grpcPlugin{server: p}},
		GRPCServer:      newGRPCServer,
		Logger:          logger,
	})
}

func newGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	opts = append(opts, grpc.MaxRecvMsgSize(maxWireBytes), grpc.MaxSendMsgSize(maxWireBytes))
	return plugin.DefaultGRPCServer(opts)
}

// provider serves a fixed set of tools. It is safe for concurrent use.
type provider struct {
	tools  []Tool
	byName map[string]*Tool
	list   []byte // the ListTools response, encoded once
	log    hclog.Logger
}

func newProvider(tools []Tool) (*provider, error) {
	if len(tools) == 0 {
		return nil, errors.New("no tools to serve")
	}
	if len(tools) > MaxTools {
		return nil, fmt.Errorf("%d tools; a provider may offer at most %d", len(tools), MaxTools)
	}
	p := &provider{tools: tools, byName: make(map[string]*Tool, len(tools)), log: hclog.NewNullLogger()}
	list := wireToolList{Tools: make([]wireTool, 0, len(tools))}
	for i := range tools {
		t := &tools[i]
		wt, err := t.wire()
		if err != nil {
			return nil, fmt.Errorf("tool %d (%q): %v", i, t.Name, err)
		}
		if _, dup := p.byName[t.Name]; dup {
			return nil, fmt.Errorf("tool %d: the name %q is used twice", i, t.Name)
		}
		p.byName[t.Name] = t
		list.Tools = append(list.Tools, wt)
	}
	b, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxMessageBytes {
		return nil, fmt.Errorf("the tool list is %d bytes of JSON; the protocol allows %d", len(b), MaxMessageBytes)
	}
	p.list = b
	return p, nil
}

func (t *Tool) wire() (wireTool, error) {
	if !toolNameRe.MatchString(t.Name) {
		return wireTool{}, fmt.Errorf("name must match %s", toolNameRe)
	}
	if t.Handler == nil {
		//lint:ignore ST1005 the message starts with the field's name
		return wireTool{}, errors.New("Handler is nil")
	}
	wt := wireTool{Name: t.Name, Description: t.Description}
	in, err := schemaJSON(t.InputSchema)
	if err != nil {
		return wireTool{}, fmt.Errorf("InputSchema: %v", err)
	}
	if in == nil {
		in = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	if err := checkObjectSchema(in); err != nil {
		return wireTool{}, fmt.Errorf("InputSchema: %v", err)
	}
	wt.InputSchema = in
	out, err := schemaJSON(t.OutputSchema)
	if err != nil {
		return wireTool{}, fmt.Errorf("OutputSchema: %v", err)
	}
	if out != nil && !isJSONObject(out) {
		return wireTool{}, errors.New("OutputSchema: schema is not a JSON object")
	}
	wt.OutputSchema = out
	if a := t.Annotations; a != nil {
		wt.Annotations = &wireAnnotations{
			Title:           a.Title,
			ReadOnlyHint:    Bool(a.ReadOnlyHint),
			DestructiveHint: a.DestructiveHint,
			IdempotentHint:  Bool(a.IdempotentHint),
			OpenWorldHint:   a.OpenWorldHint,
		}
	}
	return wt, nil
}

// schemaJSON marshals a schema value; nil stays nil.
func schemaJSON(v any) (json.RawMessage, error) {
	switch s := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		if s == nil {
			return nil, nil
		}
		if !json.Valid(s) {
			return nil, errors.New("not valid JSON")
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, s); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return b, nil
}

func (p *provider) ListTools(context.Context, *emptypb.Empty) (*wrapperspb.BytesValue, error) {
	return wrapperspb.Bytes(p.list), nil
}

func (p *provider) CallTool(ctx context.Context, in *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error) {
	var req wireCallRequest
	if err := json.Unmarshal(in.GetValue(), &req); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "CallTool request is not valid JSON: %v", err)
	}
	t, ok := p.byName[req.Name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no tool named %q", req.Name)
	}
	args := req.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if !isJSONObject(args) {
		return nil, status.Errorf(codes.InvalidArgument, "the arguments of %q are not a JSON object", req.Name)
	}
	res := p.run(ctx, t, args)
	b, err := encodeResult(res)
	if err != nil {
		p.log.Error("tool returned an unusable result", "tool", t.Name, "error", err)
		b, _ = encodeResult(Errorf("tool %q returned an unusable result: %v", t.Name, err))
	}
	return wrapperspb.Bytes(b), nil
}

// run calls the handler, turning an error or a panic into an isError
// result so that only this call fails.
func (p *provider) run(ctx context.Context, t *Tool, args json.RawMessage) (res *Result) {
	log := p.log.With("tool", t.Name)
	defer func() {
		if v := recover(); v != nil {
			log.Error("tool handler panicked", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			res = Errorf("tool %q failed: internal error (panic: %v)", t.Name, v)
		}
	}()
	r, err := t.Handler(context.WithValue(ctx, loggerKey{}, log), args)
	if err != nil {
		return Errorf("%v", err)
	}
	if r == nil {
		return &Result{}
	}
	return r
}

// encodeResult checks a Result and encodes it as a CallTool response.
func encodeResult(r *Result) ([]byte, error) {
	w := wireCallResult{Content: r.Content, IsError: r.IsError}
	if w.Content == nil {
		w.Content = []json.RawMessage{}
	}
	for i, c := range w.Content {
		if err := checkContentItem(c); err != nil {
			//lint:ignore ST1005 the message starts with the field's name
			return nil, fmt.Errorf("Content[%d]: %v", i, err)
		}
	}
	if r.StructuredContent != nil {
		b, err := json.Marshal(r.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("StructuredContent: %v", err)
		}
		w.StructuredContent = b
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxMessageBytes {
		return nil, fmt.Errorf("the result is %d bytes of JSON; the protocol allows %d", len(b), MaxMessageBytes)
	}
	return b, nil
}
