package mcpotel

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func instruments(t testing.TB) *Instruments {
	in, err := New(sdktrace.NewTracerProvider(), nil, false)
	if err != nil || in == nil {
		t.Fatalf("New: %v %v", in, err)
	}
	return in
}

func TestNewOff(t *testing.T) {
	if in, err := New(nil, nil, true); in != nil || err != nil {
		t.Errorf("New(nil, nil) = %v, %v; want nil: telemetry off", in, err)
	}
}

// The client's trace context becomes the parent; anything else in
// _meta, or a malformed traceparent, is ignored.
func TestExtract(t *testing.T) {
	in := instruments(t)
	ctx := in.Extract(context.Background(), map[string]any{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": "a=b", "progressToken": 3})
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsRemote() || sc.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || sc.SpanID().String() != "b7ad6b7169203331" || sc.TraceState().String() != "a=b" {
		t.Errorf("extracted %+v", sc)
	}
	for _, meta := range []map[string]any{nil, {}, {"traceparent": 7}, {"traceparent": "00-00000000000000000000000000000000-b7ad6b7169203331-01"}, {"traceparent": "garbage"}} {
		if sc := trace.SpanContextFromContext(in.Extract(context.Background(), meta)); sc.IsValid() {
			t.Errorf("%v: extracted %+v", meta, sc)
		}
	}
}

// Inject copies: the caller's map is not changed, and a traceparent it
// held (the client's) is replaced by the span's own.
func TestInject(t *testing.T) {
	in := instruments(t)
	ctx, span := in.Tracer.Start(context.Background(), "x")
	defer span.End()
	meta := map[string]any{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "k": "v"}
	out := in.Inject(ctx, meta)
	want := "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"
	if out["traceparent"] != want || out["k"] != "v" {
		t.Errorf("Inject = %v, want traceparent %s and k", out, want)
	}
	if meta["traceparent"] != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" {
		t.Errorf("Inject changed its argument: %v", meta)
	}
	if got := in.Inject(context.Background(), meta); got["traceparent"] != meta["traceparent"] {
		t.Errorf("no span: Inject = %v, want meta unchanged", got)
	}
}

func TestOutcomeOf(t *testing.T) {
	for _, c := range []struct {
		res       mcp.Result
		err       error
		typ, code string
	}{
		{&mcp.CallToolResult{}, nil, "", ""},
		{&mcp.CallToolResult{IsError: true}, nil, "tool_error", ""},
		{nil, &jsonrpc.Error{Code: -32602, Message: "secret-ish detail"}, "-32602", "-32602"},
		{nil, context.DeadlineExceeded, "timeout", ""},
		{nil, errors.New("x"), "_OTHER", ""},
	} {
		if typ, code := OutcomeOf(c.res, c.err); typ != c.typ || code != c.code {
			t.Errorf("OutcomeOf(%v, %v) = %q %q, want %q %q", c.res, c.err, typ, code, c.typ, c.code)
		}
	}
}

// FuzzExtract: a client's _meta is untrusted; extracting from it never
// panics, and yields a valid parent only from a well-formed traceparent.
func FuzzExtract(f *testing.F) {
	f.Add("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "a=b")
	f.Add("ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "")
	f.Add("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra", ",,,=")
	in := instruments(f)
	f.Fuzz(func(t *testing.T, tp, ts string) {
		sc := trace.SpanContextFromContext(in.Extract(context.Background(), map[string]any{"traceparent": tp, "tracestate": ts}))
		if sc.IsValid() && len(tp) < 55 {
			t.Errorf("a valid parent from the short traceparent %q", tp)
		}
	})
}

// End: an error adds error.type (and the JSON-RPC code) to the span and
// to the histogram's attributes and marks the span an error, whose
// description is the message only with the content opt-in; a success
// adds nothing. The span is ended either way.
func TestEnd(t *testing.T) {
	for _, tc := range []struct {
		name      string
		content   bool
		res       mcp.Result
		err       error
		wantAttrs map[attribute.Key]string
		wantDesc  string
	}{
		{name: "ok", res: &mcp.CallToolResult{}},
		{name: "tool error", res: &mcp.CallToolResult{IsError: true}, wantAttrs: map[attribute.Key]string{ErrorType: "tool_error"}},
		{name: "json-rpc error", err: &jsonrpc.Error{Code: -32602, Message: "bad sk-secret"},
			wantAttrs: map[attribute.Key]string{ErrorType: "-32602", StatusCode: "-32602"}},
		{name: "message with opt-in", content: true, err: &jsonrpc.Error{Code: -32602, Message: "bad sk-secret"},
			wantAttrs: map[attribute.Key]string{ErrorType: "-32602", StatusCode: "-32602"}, wantDesc: "bad sk-secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			in, err := New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), nil, tc.content)
			if err != nil {
				t.Fatal(err)
			}
			start := []attribute.KeyValue{MethodName.String("tools/call")}
			_, span := in.Tracer.Start(context.Background(), "tools/call x")
			got := in.End(span, start, tc.res, tc.err)
			ended := rec.Ended()
			if len(ended) != 1 {
				t.Fatalf("%d spans ended, want 1", len(ended))
			}
			sp := ended[0]
			if len(got) != 1+len(tc.wantAttrs) || got[0] != start[0] {
				t.Errorf("returned attributes %v, want %v and %v", got, start, tc.wantAttrs)
			}
			onSpan := map[attribute.Key]string{}
			for _, a := range sp.Attributes() {
				onSpan[a.Key] = a.Value.AsString()
			}
			for _, a := range got[1:] {
				if tc.wantAttrs[a.Key] != a.Value.AsString() {
					t.Errorf("returned %s = %s, want %q", a.Key, a.Value.AsString(), tc.wantAttrs[a.Key])
				}
			}
			for k, v := range tc.wantAttrs {
				if onSpan[k] != v {
					t.Errorf("span %s = %q, want %q", k, onSpan[k], v)
				}
			}
			wantCode := codes.Unset
			if tc.wantAttrs != nil {
				wantCode = codes.Error
			}
			if sp.Status().Code != wantCode || sp.Status().Description != tc.wantDesc {
				t.Errorf("status %v %q, want %v %q", sp.Status().Code, sp.Status().Description, wantCode, tc.wantDesc)
			}
		})
	}
}
