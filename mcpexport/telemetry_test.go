package mcpexport

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/mcpotel"
	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/internal/testkit/otlpsink"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// The client's trace context, as a client sends it in params._meta.
const (
	clientTraceID = "0af7651916cd43dd8448eb211c80319c"
	clientSpanID  = "b7ad6b7169203331"
	// canary is an argument value that looks like a secret.
	canary = "sk-live-CANARY-4c1d9e7a"
)

// otelEnv is a BERTH_HOME whose plugin "tel" (server "up") runs
// berth-testserver with the tools meta (it returns its request's
// params._meta) and fail, both allowed by policy, and a Server over its
// pool whose telemetry goes to sink (content: Options.TelemetryContentUnsafe).
// off makes the same Server with telemetry off.
type otelEnv struct {
	srv *Server
	st  *store.Store
	tp  *sdktrace.TracerProvider
	mp  *sdkmetric.MeterProvider
}

func newOtelEnv(t *testing.T, sink *otlpsink.Sink, content, off bool) *otelEnv {
	return newOtelEnvOpts(t, sink, content, off, false)
}

// newOtelEnvTB is the env of the benchmark: telemetry on or off, spans
// batched as berth serve batches them.
func newOtelEnvTB(b *testing.B, sink *otlpsink.Sink, on bool) *otelEnv {
	return newOtelEnvOpts(b, sink, false, !on, true)
}

func newOtelEnvOpts(t testing.TB, sink *otlpsink.Sink, content, off, batch bool) *otelEnv {
	t.Helper()
	ctx := context.Background()
	home, bin, ws := t.TempDir(), t.TempDir(), t.TempDir()
	testkit.Program(t, bin, "github.com/berth-mcp/berth/pool/internal/testserver/berth-testserver")
	dir := filepath.Join(t.TempDir(), "tel")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "berth.json"), []byte(`{"manifestVersion":1,"name":"tel","version":"1.0.0","description":"telemetry test plugin",
	  "mcpServers":{"up":{"stdio":{"command":"berth-testserver","args":["-tools","meta,fail"]}}}}`), 0o644)
	paths, _ := store.NewPaths(home)
	st := store.Open(paths, nil)
	b, err := bundle.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	digest, _ := store.ParseDigest(b.Digest)
	b.Close()
	if _, err := st.Trust(ctx, dir, &store.TrustOptions{UnsignedUnsafe: true, Digest: digest}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Enable(ctx, st, ws, "tel", ""); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"tel__up__meta", "tel__up__fail"} {
		if err := st.SetPolicy(ctx, store.PolicyRule{Plugin: "tel", Pattern: tool, Action: store.ActionAllow}); err != nil {
			t.Fatal(err)
		}
	}
	e := &otelEnv{st: st}
	popts := &pool.Options{BaseEnv: []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + home}, PollInterval: 50 * time.Millisecond}
	sopts := &Options{Logger: slog.New(slog.DiscardHandler)}
	if !off {
		texp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(sink.URL+"/v1/traces"))
		if err != nil {
			t.Fatal(err)
		}
		mexp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(sink.URL+"/v1/metrics"))
		if err != nil {
			t.Fatal(err)
		}
		e.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(texp))
		if batch {
			e.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(texp))
		}
		e.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp, sdkmetric.WithInterval(time.Hour))))
		t.Cleanup(func() { e.tp.Shutdown(ctx); e.mp.Shutdown(ctx) })
		popts.TracerProvider, popts.MeterProvider, popts.TelemetryContentUnsafe = e.tp, e.mp, content
		sopts.TracerProvider, sopts.MeterProvider, sopts.TelemetryContentUnsafe = e.tp, e.mp, content
	}
	p, err := pool.Open(ctx, st, ws, popts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	e.srv = New(p, sopts)
	t.Cleanup(func() { e.srv.Close() })
	return e
}

// flush sends what the providers hold.
func (e *otelEnv) flush(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.tp.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.mp.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
}

// callWithTrace calls tool with the client's trace context in _meta and
// the canary as an argument, and returns the result's text.
func (e *otelEnv) callWithTrace(t *testing.T, tool string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := e.srv.Connect(ctx, st); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "otel-client", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Meta:      mcp.Meta{"traceparent": "00-" + clientTraceID + "-" + clientSpanID + "-01", "tracestate": "vendor=opaque"},
		Name:      tool,
		Arguments: map[string]any{"token": canary},
	})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return textOf(res)
}

func hexID(b []byte) string { return hex.EncodeToString(b) }

// wantAttrs fails for each key of want that sp lacks or has another value.
func wantAttrs(t *testing.T, sp *tracepb.Span, want map[string]string) {
	t.Helper()
	got := otlpsink.Attrs(sp.GetAttributes())
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %q: %s = %q, want %q (all: %v)", sp.GetName(), k, got[k], v, got)
		}
	}
}

// TestTelemetryToolCall: a tools/call through berth, with the client's
// W3C trace context in _meta, reaches an OTLP/HTTP endpoint as a SERVER
// span (child of the client's span) with the MCP conventions' attributes
// and berth's decision, and a CLIENT span (child of it) for the call to
// the plugin's server, whose traceparent the server received in its
// request's _meta; both duration histograms arrive; the argument value
// never does.
func TestTelemetryToolCall(t *testing.T) {
	sink := otlpsink.Start(t)
	e := newOtelEnv(t, sink, false, false)
	text := e.callWithTrace(t, "tel__up__meta")
	e.flush(t)
	if bad := sink.Bad(); len(bad) > 0 {
		t.Fatalf("requests that are not OTLP/HTTP protobuf: %v", bad)
	}
	spans := sink.Spans()
	srvSpan := otlpsink.Find(spans, "tools/call tel__up__meta")
	upSpan := otlpsink.Find(spans, "tools/call meta")
	if srvSpan == nil || upSpan == nil {
		var names []string
		for _, sp := range spans {
			names = append(names, sp.GetName())
		}
		t.Fatalf("spans %q: want tools/call tel__up__meta and tools/call meta", names)
	}
	// The server span continues the client's trace.
	if hexID(srvSpan.GetTraceId()) != clientTraceID || hexID(srvSpan.GetParentSpanId()) != clientSpanID {
		t.Errorf("server span: trace %x parent %x, want trace %s parent %s", srvSpan.GetTraceId(), srvSpan.GetParentSpanId(), clientTraceID, clientSpanID)
	}
	if srvSpan.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("server span kind %v", srvSpan.GetKind())
	}
	if srvSpan.GetTraceState() != "vendor=opaque" {
		t.Errorf("server span trace state %q, want the client's", srvSpan.GetTraceState())
	}
	wantAttrs(t, srvSpan, map[string]string{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "tel__up__meta", "gen_ai.operation.name": "execute_tool",
		"mcp.protocol.version": "2025-11-25",
		"berth.plugin":         "tel", "berth.server": "up", "berth.policy.decision": "allow", "berth.approved_by": "policy", "berth.outcome": "ran",
	})
	// The upstream span is its child, and its context reached the
	// plugin's server.
	if hexID(upSpan.GetTraceId()) != clientTraceID || hexID(upSpan.GetParentSpanId()) != hexID(srvSpan.GetSpanId()) {
		t.Errorf("upstream span: trace %x parent %x, want trace %s parent %x", upSpan.GetTraceId(), upSpan.GetParentSpanId(), clientTraceID, srvSpan.GetSpanId())
	}
	if upSpan.GetKind() != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("upstream span kind %v", upSpan.GetKind())
	}
	wantAttrs(t, upSpan, map[string]string{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "meta", "gen_ai.operation.name": "execute_tool",
		"network.transport": "pipe", "berth.plugin": "tel", "berth.server": "up",
	})
	if otlpsink.Attrs(upSpan.GetAttributes())["mcp.protocol.version"] == "" {
		t.Errorf("upstream span has no mcp.protocol.version")
	}
	var meta map[string]any
	if err := json.Unmarshal([]byte(text), &meta); err != nil {
		t.Fatalf("the meta tool's answer %q: %v", text, err)
	}
	if want := "00-" + clientTraceID + "-" + hexID(upSpan.GetSpanId()) + "-01"; meta["traceparent"] != want {
		t.Errorf("the plugin's server got traceparent %v, want %s (its _meta: %s)", meta["traceparent"], want, text)
	}
	if meta["tracestate"] != "vendor=opaque" {
		t.Errorf("the plugin's server got tracestate %v, want the client's", meta["tracestate"])
	}
	// The pool's own start of the server: an initialize span.
	if otlpsink.Find(spans, "initialize") == nil {
		t.Errorf("no initialize span for the plugin's server")
	}

	ms := sink.Metrics()
	for _, c := range []struct{ name, tool string }{{"mcp.server.operation.duration", "tel__up__meta"}, {"mcp.client.operation.duration", "meta"}} {
		m := otlpsink.Histogram(ms, c.name)
		if m == nil {
			t.Errorf("no histogram %s", c.name)
			continue
		}
		if m.GetUnit() != "s" {
			t.Errorf("%s: unit %q, want s", c.name, m.GetUnit())
		}
		found := false
		for _, dp := range m.GetHistogram().GetDataPoints() {
			a := otlpsink.Attrs(dp.GetAttributes())
			if a["mcp.method.name"] == "tools/call" && a["gen_ai.tool.name"] == c.tool && dp.GetCount() == 1 {
				found = true
				if len(dp.GetExplicitBounds()) != 14 || dp.GetExplicitBounds()[0] != 0.01 {
					t.Errorf("%s: bounds %v, want the conventions' 14 from 0.01 s", c.name, dp.GetExplicitBounds())
				}
			}
		}
		if !found {
			t.Errorf("%s: no data point for tools/call %s", c.name, c.tool)
		}
	}
	if sink.Contains([]byte(canary)) {
		t.Errorf("the argument value %q reached the OTLP endpoint without the opt-in", canary)
	}
}

// TestTelemetryApprovedBy: a call the queue approved names who approved
// it as the queue recorded it, not only "queue".
func TestTelemetryApprovedBy(t *testing.T) {
	sink := otlpsink.Start(t)
	e := newOtelEnv(t, sink, false, false)
	if err := e.st.SetPolicy(context.Background(), store.PolicyRule{Plugin: "tel", Pattern: "tel__up__meta", Action: store.ActionAsk}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if p := nextPending(t, e.srv.queue); p != nil {
			if _, err := e.srv.queue.Decide(p.ID, true, false, "berth approve (alice)"); err != nil {
				t.Error(err)
			}
		}
	}()
	e.callWithTrace(t, "tel__up__meta")
	<-done
	e.flush(t)
	sp := otlpsink.Find(sink.Spans(), "tools/call tel__up__meta")
	if sp == nil {
		t.Fatal("no span for tools/call tel__up__meta")
	}
	wantAttrs(t, sp, map[string]string{"berth.policy.decision": "allow", "berth.approved_by": "queue: berth approve (alice)"})
}

// TestTelemetryToolError: a tool that fails is an error span
// (error.type tool_error) on both sides.
func TestTelemetryToolError(t *testing.T) {
	sink := otlpsink.Start(t)
	e := newOtelEnv(t, sink, false, false)
	e.callWithTrace(t, "tel__up__fail")
	e.flush(t)
	for _, name := range []string{"tools/call tel__up__fail", "tools/call fail"} {
		sp := otlpsink.Find(sink.Spans(), name)
		if sp == nil {
			t.Fatalf("no span %q", name)
		}
		wantAttrs(t, sp, map[string]string{"error.type": "tool_error"})
		if sp.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR {
			t.Errorf("span %q: status %v, want error", name, sp.GetStatus())
		}
		if strings.Contains(sp.GetStatus().GetMessage(), "always fails") {
			t.Errorf("span %q: the error message is recorded without the opt-in", name)
		}
	}
}

// TestTelemetryContentOptIn: with Options.TelemetryContentUnsafe, the
// arguments are recorded (gen_ai.tool.call.arguments): what the default
// test above proves absent is really absent by choice.
func TestTelemetryContentOptIn(t *testing.T) {
	sink := otlpsink.Start(t)
	e := newOtelEnv(t, sink, true, false)
	e.callWithTrace(t, "tel__up__meta")
	e.flush(t)
	sp := otlpsink.Find(sink.Spans(), "tools/call tel__up__meta")
	if sp == nil {
		t.Fatal("no server span")
	}
	if got := otlpsink.Attrs(sp.GetAttributes())["gen_ai.tool.call.arguments"]; !strings.Contains(got, canary) {
		t.Errorf("gen_ai.tool.call.arguments = %q, want the arguments", got)
	}
}

// TestTelemetryOff: with no providers, berth adds no trace context of
// its own: the plugin's server gets no traceparent.
func TestTelemetryOff(t *testing.T) {
	e := newOtelEnv(t, nil, false, true)
	text := e.callWithTrace(t, "tel__up__meta")
	if strings.Contains(text, "traceparent") {
		t.Errorf("telemetry off, the plugin's server got a trace context: %s", text)
	}
}

// BenchmarkTelemetryCall is the cost of telemetry on a tools/call
// through berth to a stdio plugin server: off (no providers, no
// middleware) and on (the SDK's batching span processor and a periodic
// metric reader exporting over OTLP/HTTP to a loopback endpoint).
//
//	go test ./mcpexport -run '^$' -bench BenchmarkTelemetryCall -benchtime 3000x
func BenchmarkTelemetryCall(b *testing.B) {
	for _, mode := range []string{"off", "on"} {
		b.Run(mode, func(b *testing.B) {
			benchTelemetry(b, mode == "on")
		})
	}
}

func benchTelemetry(b *testing.B, on bool) {
	ctx := context.Background()
	sink := otlpsink.Start(b)
	e := newOtelEnvTB(b, sink, on)
	ct, st := mcp.NewInMemoryTransports()
	if _, err := e.srv.Connect(ctx, st); err != nil {
		b.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "tel__up__meta", Arguments: map[string]any{"k": "v"}}
	if _, err := cs.CallTool(ctx, params); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := cs.CallTool(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTelemetryHTTP: over Streamable HTTP, the server span names the
// transport (tcp, http) and the session by a hash of its ID, never the
// ID, which with the token lets one post into the session.
func TestTelemetryHTTP(t *testing.T) {
	sink := otlpsink.Start(t)
	e := newOtelEnv(t, sink, false, false)
	hs := httptest.NewServer(e.srv.Handler(&HTTPOptions{Token: testToken}))
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "otel-http", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp", HTTPClient: bearerClient(testToken)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tel__up__meta", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	e.flush(t)
	sp := otlpsink.Find(sink.Spans(), "tools/call tel__up__meta")
	if sp == nil {
		t.Fatal("no server span")
	}
	wantAttrs(t, sp, map[string]string{"network.transport": "tcp", "network.protocol.name": "http", "berth.transport": TransportHTTP,
		"mcp.session.id": mcpotel.HashID(cs.ID())})
	if cs.ID() == "" || sink.Contains([]byte(cs.ID())) {
		t.Errorf("the session ID %q reached the OTLP endpoint", cs.ID())
	}
}

// TestTelemetryUnknownToolName: a tools/call or prompts/get of a name
// berth does not offer is named _OTHER in the span's name, its
// attributes and the duration histogram: the client's text never
// reaches the trace backend nor makes a metric series.
func TestTelemetryUnknownToolName(t *testing.T) {
	sink := otlpsink.Start(t)
	e := newOtelEnv(t, sink, false, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := e.srv.Connect(ctx, st); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "otel-client", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	junk := "junk-" + canary
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: junk}); err == nil {
		t.Fatalf("tools/call %s succeeded", junk)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: junk}); err == nil {
		t.Fatalf("prompts/get %s succeeded", junk)
	}
	e.flush(t)
	if sink.Contains([]byte(canary)) {
		t.Errorf("the client's unknown name %q reached the OTLP endpoint", junk)
	}
	sp := otlpsink.Find(sink.Spans(), "tools/call _OTHER")
	if sp == nil {
		t.Fatal("no span tools/call _OTHER")
	}
	wantAttrs(t, sp, map[string]string{"gen_ai.tool.name": "_OTHER"})
	if sp := otlpsink.Find(sink.Spans(), "prompts/get _OTHER"); sp == nil {
		t.Error("no span prompts/get _OTHER")
	}
}
