//lint:file-ignore SA1019 the test relays sampling (SEP-2577) during its deprecation window

package mcpexport

import (
	"context"
	"log/slog"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/berth-mcp/berth/internal/testkit/otlpsink"
	"github.com/berth-mcp/berth/internal/testrelay"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// newOtelRelayEnv is the relay test plugin "rly" (a legacy server, so that
// it may send requests during a call) behind a Server whose telemetry
// goes to sink.
func newOtelRelayEnv(t *testing.T, sink *otlpsink.Sink) *otelEnv {
	t.Helper()
	ctx := context.Background()
	h := newPluginHome(t, "", "rly", testrelay.Name, "relay test plugin", []store.PolicyRule{{Pattern: "rly__*", Action: store.ActionAllow}})
	texp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(sink.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	mexp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(sink.URL+"/v1/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	e := &otelEnv{st: h.st, tp: sdktrace.NewTracerProvider(sdktrace.WithSyncer(texp)),
		mp: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp, sdkmetric.WithInterval(time.Hour))))}
	t.Cleanup(func() { e.tp.Shutdown(ctx); e.mp.Shutdown(ctx) })
	p, err := pool.Open(ctx, h.st, h.ws, &pool.Options{
		BaseEnv:      []string{"PATH=" + h.bin + ":/usr/bin:/bin", "HOME=" + h.home},
		PollInterval: 50 * time.Millisecond, LegacyUpstream: true,
		TracerProvider: e.tp, MeterProvider: e.mp,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	e.srv = New(p, &Options{Logger: slog.New(slog.DiscardHandler), TracerProvider: e.tp, MeterProvider: e.mp})
	t.Cleanup(func() { e.srv.Close() })
	return e
}

// spanNamed is the one span of spans named name, of kind.
func spanNamed(t *testing.T, spans []*tracepb.Span, name string, kind tracepb.Span_SpanKind) *tracepb.Span {
	t.Helper()
	var names []string
	for _, sp := range spans {
		if sp.GetName() == name && sp.GetKind() == kind {
			return sp
		}
		names = append(names, sp.GetName()+" ("+sp.GetKind().String()+")")
	}
	t.Fatalf("no %s span %q among %q", kind, name, names)
	return nil
}

var decimalID = regexp.MustCompile(`^[0-9]+$`)

// TestTelemetryRelayed: with telemetry on, what a session carries besides
// its requests is traced as the conventions define it. The client's
// notifications/initialized has a SERVER span, berth's to the plugin
// server a CLIENT span; every request span, the
// client's to berth and berth's to the plugin server, has its
// jsonrpc.request.id; a plugin server's sampling/createMessage that berth
// relays to the client is a CLIENT span, child of the tools/call span it
// belongs to, linked to the plugin server's span (the traceparent the
// server sent in its _meta), with the plugin, server, policy decision,
// outcome and its own JSON-RPC ID, and the client receives berth's span as
// the traceparent; a progress notification berth relays is a CLIENT span
// under the call; a sampling request berth refused is an event
// berth.relayed_request on its call's span, with the decision and the
// outcome. Neither the sampling request's text nor the client's answer
// reaches the endpoint.
func TestTelemetryRelayed(t *testing.T) {
	sink := otlpsink.Start(t)
	e := newOtelRelayEnv(t, sink)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var sampledMeta mcp.Meta
	connect := func(sampling bool) *mcp.ClientSession {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := e.srv.Connect(ctx, st); err != nil {
			t.Fatal(err)
		}
		o := &mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {}}
		if sampling {
			o.CreateMessageHandler = func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				mu.Lock()
				sampledMeta = r.Params.Meta
				mu.Unlock()
				return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "Paris"}}, nil
			}
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "otel-relay-client", Version: "1"}, o).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	tp := "00-" + clientTraceID + "-" + clientSpanID + "-01"
	cs := connect(true)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: mcp.Meta{"traceparent": tp}, Name: "rly__up__sample"})
	if err != nil || textOf(res) != "sampled: Paris" {
		t.Fatalf("sample: %v %v", textOf(res), err)
	}
	p := &mcp.CallToolParams{Name: "rly__up__progress", Arguments: map[string]any{"n": 2}}
	p.SetProgressToken("tok")
	if _, err := cs.CallTool(ctx, p); err != nil {
		t.Fatal(err)
	}
	bare := connect(false)
	if res, err := bare.CallTool(ctx, &mcp.CallToolParams{Name: "rly__up__sample"}); err != nil || textOf(res) == "sampled: Paris" {
		t.Fatalf("sample without the capability: %v %v", textOf(res), err)
	}
	e.flush(t)
	spans := sink.Spans()

	spanNamed(t, spans, "notifications/initialized", tracepb.Span_SPAN_KIND_SERVER)               // the client's, to berth
	wantAttrs(t, spanNamed(t, spans, "notifications/initialized", tracepb.Span_SPAN_KIND_CLIENT), // berth's, to the plugin server
		map[string]string{"mcp.method.name": "notifications/initialized", "berth.plugin": "rly", "berth.server": "up", "jsonrpc.request.id": ""})
	call := spanNamed(t, spans, "tools/call rly__up__sample", tracepb.Span_SPAN_KIND_SERVER)
	up := spanNamed(t, spans, "tools/call sample", tracepb.Span_SPAN_KIND_CLIENT)
	for _, sp := range []*tracepb.Span{call, up} {
		if id := otlpsink.Attrs(sp.GetAttributes())["jsonrpc.request.id"]; !decimalID.MatchString(id) {
			t.Errorf("span %q: jsonrpc.request.id %q, want the request's numeric ID", sp.GetName(), id)
		}
	}
	var sampling *tracepb.Span
	for _, sp := range spans {
		if sp.GetName() == "sampling/createMessage" && hexID(sp.GetTraceId()) == clientTraceID {
			sampling = sp
		}
	}
	if sampling == nil {
		t.Fatalf("no sampling/createMessage span in the client's trace")
	}
	if sampling.GetKind() != tracepb.Span_SPAN_KIND_CLIENT || hexID(sampling.GetParentSpanId()) != hexID(call.GetSpanId()) {
		t.Errorf("sampling span: kind %v parent %x, want CLIENT under the call's span %x", sampling.GetKind(), sampling.GetParentSpanId(), call.GetSpanId())
	}
	wantAttrs(t, sampling, map[string]string{"mcp.method.name": "sampling/createMessage", "berth.plugin": "rly", "berth.server": "up",
		"berth.policy.decision": "allow", "berth.outcome": "ran", "mcp.protocol.version": "2025-11-25"})
	if id := otlpsink.Attrs(sampling.GetAttributes())["jsonrpc.request.id"]; !decimalID.MatchString(id) {
		t.Errorf("sampling span: jsonrpc.request.id %q", id)
	}
	if l := sampling.GetLinks(); len(l) != 1 || hexID(l[0].GetTraceId()) != clientTraceID || hexID(l[0].GetSpanId()) != testrelay.SpanID {
		t.Errorf("sampling span links %v, want the plugin server's span %s", l, testrelay.SpanID)
	}
	mu.Lock()
	got := sampledMeta["traceparent"]
	mu.Unlock()
	if want := "00-" + clientTraceID + "-" + hexID(sampling.GetSpanId()) + "-01"; got != want {
		t.Errorf("the client got traceparent %v, want berth's span %s", got, want)
	}
	ok := false
	for _, ev := range call.GetEvents() {
		a := otlpsink.Attrs(ev.GetAttributes())
		ok = ok || ev.GetName() == "berth.relayed_request" && a["mcp.method.name"] == "sampling/createMessage" && a["berth.policy.decision"] == "allow" && a["berth.outcome"] == "ran"
	}
	if !ok {
		t.Errorf("the call's span has no berth.relayed_request event of the sampling: %v", call.GetEvents())
	}

	progress := spanNamed(t, spans, "tools/call rly__up__progress", tracepb.Span_SPAN_KIND_SERVER)
	n := 0
	for _, sp := range spans {
		if sp.GetName() == "notifications/progress" && sp.GetKind() == tracepb.Span_SPAN_KIND_CLIENT && string(sp.GetParentSpanId()) == string(progress.GetSpanId()) {
			n++
			if a := otlpsink.Attrs(sp.GetAttributes()); a["jsonrpc.request.id"] != "" || a["mcp.method.name"] != "notifications/progress" {
				t.Errorf("progress span attributes %v", a)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d notifications/progress spans under the call, want 2 (one per relayed progress)", n)
	}

	refused := false
	for _, sp := range spans {
		if sp.GetName() != "tools/call rly__up__sample" || hexID(sp.GetTraceId()) == clientTraceID {
			continue
		}
		for _, ev := range sp.GetEvents() {
			a := otlpsink.Attrs(ev.GetAttributes())
			refused = refused || ev.GetName() == "berth.relayed_request" && a["berth.policy.decision"] == "deny" && a["berth.outcome"] == "refused" && a["berth.plugin"] == "rly"
		}
	}
	// No content of the relayed request nor of its answer: neither the
	// plugin's question nor the client's reply.
	for _, content := range []string{"capital of France?", "Paris"} {
		if sink.Contains([]byte(content)) {
			t.Errorf("the relayed sampling's content %q reached the OTLP endpoint without the opt-in", content)
		}
	}
	if !refused {
		t.Errorf("the refused sampling request has no berth.relayed_request event with deny and refused")
	}
}
