// Package mcpotel is the OpenTelemetry instrumentation berth shares between
// its MCP server (mcpexport) and its pool's MCP clients (pool): the
// attribute keys of the OpenTelemetry semantic conventions for MCP and
// berth's own, the two operation-duration histograms, and the W3C trace
// context carried in a request's params._meta (docs/telemetry.md).
//
// An *Instruments is safe for concurrent use. A nil *Instruments is
// telemetry off: callers test for nil and add no middleware at all, so
// nothing of this package runs on the hot path then.
package mcpotel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Scope is the instrumentation scope of berth's tracer and meter.
const Scope = "github.com/berth-mcp/berth"

// Attribute keys: the semantic conventions for MCP (mcp.*, gen_ai.*,
// jsonrpc.*, network.*, error.type, rpc.response.status_code) and berth's
// own (berth.*).
const (
	MethodName      = attribute.Key("mcp.method.name")
	SessionID       = attribute.Key("mcp.session.id")
	ProtocolVersion = attribute.Key("mcp.protocol.version")
	ResourceURI     = attribute.Key("mcp.resource.uri")
	ToolName        = attribute.Key("gen_ai.tool.name")
	PromptName      = attribute.Key("gen_ai.prompt.name")
	OperationName   = attribute.Key("gen_ai.operation.name")
	ToolArguments   = attribute.Key("gen_ai.tool.call.arguments")
	ErrorType       = attribute.Key("error.type")
	StatusCode      = attribute.Key("rpc.response.status_code")
	Transport       = attribute.Key("network.transport")
	ProtocolName    = attribute.Key("network.protocol.name")

	Plugin          = attribute.Key("berth.plugin")
	Server          = attribute.Key("berth.server")
	Profile         = attribute.Key("berth.profile")
	PolicyDecision  = attribute.Key("berth.policy.decision")
	ApprovedBy      = attribute.Key("berth.approved_by")
	Outcome         = attribute.Key("berth.outcome")
	ClientTransport = attribute.Key("berth.transport")
)

// Metric names of the conventions.
const (
	ServerOperationDuration = "mcp.server.operation.duration"
	ClientOperationDuration = "mcp.client.operation.duration"
)

// buckets are the conventions' advised histogram boundaries, in seconds.
var buckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// Instruments are berth's tracer, histograms and propagator.
type Instruments struct {
	Tracer         trace.Tracer
	ServerDuration metric.Float64Histogram
	ClientDuration metric.Float64Histogram
	// Content records what may hold secrets: a tool call's arguments
	// (gen_ai.tool.call.arguments), a resource's URI (mcp.resource.uri)
	// and error messages as span status descriptions. Off by default.
	Content bool
	prop    propagation.TraceContext
}

// New makes the Instruments of tp and mp; nil when both are nil
// (telemetry off). A nil one of the two is a no-op of its kind.
func New(tp trace.TracerProvider, mp metric.MeterProvider, content bool) (*Instruments, error) {
	if tp == nil && mp == nil {
		return nil, nil
	}
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	in := &Instruments{Tracer: tp.Tracer(Scope), Content: content}
	var err error
	if mp != nil {
		m := mp.Meter(Scope)
		in.ServerDuration, err = m.Float64Histogram(ServerOperationDuration, metric.WithUnit("s"),
			metric.WithDescription("MCP request duration as observed on the receiver from the time it was received until the result is sent."),
			metric.WithExplicitBucketBoundaries(buckets...))
		if err != nil {
			return nil, err
		}
		in.ClientDuration, err = m.Float64Histogram(ClientOperationDuration, metric.WithUnit("s"),
			metric.WithDescription("The duration of the MCP request as observed on the sender from the time it was sent until the response is received."),
			metric.WithExplicitBucketBoundaries(buckets...))
		if err != nil {
			return nil, err
		}
	}
	return in, nil
}

// RecordServer records d seconds in mcp.server.operation.duration.
func (in *Instruments) RecordServer(ctx context.Context, d float64, attrs []attribute.KeyValue) {
	if in.ServerDuration != nil {
		in.ServerDuration.Record(ctx, d, metric.WithAttributes(attrs...))
	}
}

// RecordClient records d seconds in mcp.client.operation.duration.
func (in *Instruments) RecordClient(ctx context.Context, d float64, attrs []attribute.KeyValue) {
	if in.ClientDuration != nil {
		in.ClientDuration.Record(ctx, d, metric.WithAttributes(attrs...))
	}
}

// metaCarrier is a request's params._meta as a propagation carrier: the
// unprefixed keys traceparent and tracestate, string values only.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// Extract returns ctx with the remote span context of meta's traceparent
// and tracestate as parent, when they are valid W3C trace context; ctx
// unchanged otherwise.
func (in *Instruments) Extract(ctx context.Context, meta map[string]any) context.Context {
	if meta == nil {
		return ctx
	}
	if _, ok := meta["traceparent"].(string); !ok {
		return ctx
	}
	return in.prop.Extract(ctx, metaCarrier(meta))
}

// Inject returns a copy of meta with the trace context of ctx's span set
// as traceparent (and tracestate), replacing any there; meta itself when
// ctx has no valid span context.
func (in *Instruments) Inject(ctx context.Context, meta map[string]any) map[string]any {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return meta
	}
	out := make(map[string]any, len(meta)+2)
	for k, v := range meta {
		if k != "traceparent" && k != "tracestate" {
			out[k] = v
		}
	}
	in.prop.Inject(ctx, metaCarrier(out))
	return out
}

// ParamsOf returns req's params, or nil when it has none (a nil pointer
// of a params type included).
func ParamsOf(req mcp.Request) mcp.Params {
	if req == nil {
		return nil
	}
	p := req.GetParams()
	if p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return p
}

// Outcome is how an operation ended, for error.type and
// rpc.response.status_code: ("", "") on success; the JSON-RPC error code
// for both when the peer answered with an error; "tool_error" for a
// CallToolResult with isError; "timeout" or "cancelled" for a context
// that ended; "_OTHER" for anything else.
func OutcomeOf(res mcp.Result, err error) (errorType, code string) {
	if err != nil {
		var werr *jsonrpc.Error
		switch {
		case errors.As(err, &werr):
			c := strconv.FormatInt(werr.Code, 10)
			return c, c
		case errors.Is(err, context.DeadlineExceeded):
			return "timeout", ""
		case errors.Is(err, context.Canceled):
			return "cancelled", ""
		}
		return "_OTHER", ""
	}
	if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
		return "tool_error", ""
	}
	return "", ""
}

// End ends the span of an operation that returned res and err. An error
// (OutcomeOf) adds error.type and rpc.response.status_code to the span
// and to attrs, and sets the span's status to error; its description is
// the error's message only when the operator opted in to content
// (in.Content), since a message may quote arguments. It returns attrs
// with what it added, for the duration histogram.
func (in *Instruments) End(span trace.Span, attrs []attribute.KeyValue, res mcp.Result, err error) []attribute.KeyValue {
	if errType, code := OutcomeOf(res, err); errType != "" {
		n := len(attrs)
		attrs = append(attrs, ErrorType.String(errType))
		if code != "" {
			attrs = append(attrs, StatusCode.String(code))
		}
		span.SetAttributes(attrs[n:]...)
		desc := ""
		if in.Content && err != nil {
			desc = err.Error()
		}
		span.SetStatus(codes.Error, desc)
	}
	span.End()
	return attrs
}

// HashID is a session ID as telemetry names it: the first 16 hex digits
// of its SHA-256, never the ID itself (on Streamable HTTP, a session's ID
// lets whoever holds the token post into that session).
func HashID(id string) string {
	if id == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:8])
}

// RequestID is the conventions' jsonrpc.request.id: the JSON-RPC ID of a
// request (never of a notification), as a string.
const RequestID = attribute.Key("jsonrpc.request.id")

// IDString is id as jsonrpc.request.id records it: the number in decimal
// or the string itself; "" for no ID (a notification).
func IDString(id jsonrpc.ID) string {
	switch v := id.Raw().(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case string:
		return v
	}
	return ""
}

// outgoingKey marks a context as that of a request berth sends under its
// own CLIENT span (Outgoing): the connection's Write, which sees the
// JSON-RPC ID that go-sdk assigned, notes it on that span (NoteRequestID).
type outgoingKey struct{}

// Outgoing returns ctx marked as the context of the request of span.
func Outgoing(ctx context.Context, span trace.Span) context.Context {
	return context.WithValue(ctx, outgoingKey{}, span)
}

// IsOutgoing reports whether ctx is that of a request berth sends under
// a recording span of its own (Outgoing).
func IsOutgoing(ctx context.Context) bool {
	span, _ := ctx.Value(outgoingKey{}).(trace.Span)
	return span != nil && span.IsRecording()
}

// NoteRequestID sets jsonrpc.request.id on the span of ctx's outgoing
// request (Outgoing), when there is one: berth's connections call it as
// they write a request (go-sdk assigns the ID below its middleware).
func NoteRequestID(ctx context.Context, id jsonrpc.ID) {
	span, _ := ctx.Value(outgoingKey{}).(trace.Span)
	if span == nil || !span.IsRecording() {
		return
	}
	if s := IDString(id); s != "" {
		span.SetAttributes(RequestID.String(s))
	}
}

// sdkIDKey is go-sdk's context key of the JSON-RPC ID of the request a
// server handler serves (its unexported idContextKey, mcp/streamable.go:
// "the originating request ID"), found once by IncomingRequestID.
var sdkIDKey atomic.Pointer[any]

// probeSDKIDKey finds go-sdk's key once per process, before any context
// of berth's own servers is walked: a private go-sdk server on in-memory
// transports is sent one request (initialize, by a go-sdk client), and
// its receiving middleware's context is walked (findSDKIDKey). It does
// not depend on what berth's servers see first: a process whose first
// messages are notifications (no ID, no key in their contexts) walks
// no context of theirs.
var probeSDKIDKey = sync.OnceValues(func() (any, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	found := make(chan any, 1)
	s := mcp.NewServer(&mcp.Implementation{Name: "berth-idkey-probe", Version: "0"}, nil)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if k, ok := findSDKIDKey(ctx); ok {
				select {
				case found <- k:
				default:
				}
			}
			return next(ctx, method, req)
		}
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		return nil, false
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "berth-idkey-probe", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return nil, false
	}
	defer cs.Close()
	select {
	case k := <-found:
		return k, true
	default:
		return nil, false
	}
})

// IncomingRequestID is the JSON-RPC ID of the request that a go-sdk
// server's receiving middleware was called with ctx for. go-sdk keeps the
// ID from its middleware but puts it in the handler's context under a key
// of an unexported type; berth finds that type once (probeSDKIDKey, by
// walking a context's chain with reflection, read only: nothing is
// patched) and then looks the ID up as any context value. ok is false
// when the ID is not there (a notification), or when go-sdk no longer
// keeps it so (TestIncomingRequestID and TestProbeSDKIDKey fail then). If
// the probe failed, ctx itself is walked until a walk finds the key.
func IncomingRequestID(ctx context.Context) (jsonrpc.ID, bool) {
	k := sdkIDKey.Load()
	if k == nil {
		found, ok := probeSDKIDKey()
		if !ok {
			found, ok = findSDKIDKey(ctx)
		}
		if !ok {
			return jsonrpc.ID{}, false
		}
		sdkIDKey.CompareAndSwap(nil, &found)
		k = &found
	}
	id, ok := ctx.Value(*k).(jsonrpc.ID)
	return id, ok && id.IsValid()
}

// findSDKIDKey walks ctx's parents (the standard library's value, cancel,
// timer and without-cancel contexts, and any struct that embeds its
// parent as Context) for a value keyed by go-sdk's idContextKey, and
// returns a key of that type.
func findSDKIDKey(ctx context.Context) (any, bool) {
	v := reflect.ValueOf(ctx)
	for range 256 {
		for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return nil, false
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return nil, false
		}
		if f := v.FieldByName("key"); f.IsValid() && f.Kind() == reflect.Interface && !f.IsNil() {
			if t := f.Elem().Type(); t.Name() == "idContextKey" && t.PkgPath() == "github.com/modelcontextprotocol/go-sdk/mcp" {
				return reflect.New(t).Elem().Interface(), true
			}
		}
		next := v.FieldByName("Context")
		if !next.IsValid() {
			next = v.FieldByName("c")
		}
		if !next.IsValid() {
			return nil, false
		}
		v = next
	}
	return nil, false
}
