package mcpotel

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

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

// TestIncomingRequestID: a go-sdk server's receiving middleware finds the
// JSON-RPC ID of the request it serves (go-sdk keeps it under a key of an
// unexported type; this fails when a go-sdk upgrade moves it), and no ID
// for a notification.
func TestIncomingRequestID(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var mu sync.Mutex
	seen := map[string]string{}
	s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			id, ok := IncomingRequestID(ctx)
			mu.Lock()
			if ok {
				seen[method] = IDString(id)
			} else {
				seen[method] = "none"
			}
			mu.Unlock()
			return next(ctx, method, req)
		}
	})
	ct, st := mcp.NewInMemoryTransports()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	// A raw client, to choose the IDs: a string and a number.
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	write := func(id any, method, params string) {
		msg := &jsonrpc.Request{Method: method, Params: json.RawMessage(params)}
		if id != nil {
			msg.ID, err = jsonrpc.MakeID(id)
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := conn.Write(ctx, msg); err != nil {
			t.Fatal(err)
		}
		if id != nil {
			if _, err := conn.Read(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("req-7", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`)
	write(nil, "notifications/initialized", `{}`)
	write(float64(42), "ping", `{}`)
	mu.Lock()
	defer mu.Unlock()
	want := map[string]string{"initialize": "req-7", "notifications/initialized": "none", "ping": "42"}
	for m, w := range want {
		if seen[m] != w {
			t.Errorf("%s: request ID %q, want %q (all: %v)", m, seen[m], w, seen)
		}
	}
}

// NoteRequestID sets jsonrpc.request.id only on the span of an outgoing
// request (Outgoing), never on another span in the context.
func TestNoteRequestID(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	in, err := New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, outer := in.Tracer.Start(context.Background(), "outer")
	id, _ := jsonrpc.MakeID(float64(3))
	NoteRequestID(ctx, id)
	octx, span := in.Tracer.Start(ctx, "out")
	octx = Outgoing(octx, span)
	if !IsOutgoing(octx) || IsOutgoing(ctx) {
		t.Errorf("IsOutgoing: marked %v, unmarked %v", IsOutgoing(octx), IsOutgoing(ctx))
	}
	NoteRequestID(octx, id)
	span.End()
	outer.End()
	for _, sp := range rec.Ended() {
		var got string
		for _, a := range sp.Attributes() {
			if a.Key == RequestID {
				got = a.Value.AsString()
			}
		}
		if want := map[string]string{"out": "3", "outer": ""}[sp.Name()]; got != want {
			t.Errorf("span %s: jsonrpc.request.id %q, want %q", sp.Name(), got, want)
		}
	}
}
