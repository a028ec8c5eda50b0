package e2e

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/berth-mcp/berth/internal/peers"
	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/internal/testkit/otlpsink"
	"github.com/berth-mcp/berth/internal/testrelay"
)

// tsTraceClient is a TypeScript SDK client with sampling that calls, through
// berth serve --http, the relay server's tools meta and sample with the
// W3C trace context argv[3] in params._meta, and prints the tool's answers
// and the _meta of the sampling request it was asked.
const tsTraceClient = `
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [url, token, traceparent] = process.argv.slice(1);
const client = new Client({ name: 'berth-ts-trace-test', version: '1.0.0' }, { capabilities: { sampling: {} } });
const out = { sampledMeta: null };
client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
  out.sampledMeta = req.params._meta || {};
  return { role: 'assistant', model: 'test-model', content: { type: 'text', text: 'Paris' }, stopReason: 'endTurn' };
});
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: 'Bearer ' + token } } }));
const text = (r) => (r.content || []).map(c => c.text || '').join('\n');
out.meta = text(await client.callTool({ name: 'rly__up__meta', arguments: {}, _meta: { traceparent, tracestate: 'ts=1' } }));
out.sample = text(await client.callTool({ name: 'rly__up__sample', arguments: {}, _meta: { traceparent } }));
console.log(JSON.stringify(out));
await client.close();
`

// TestTypeScriptSDKTracePropagation: W3C trace context crosses berth
// between peers berth did not write the client of. A TypeScript SDK client
// sends traceparent in params._meta of tools/call through berth serve
// --http --otel; the plugin server receives, in its request's _meta, the
// same trace with berth's CLIENT span as parent; the OTLP endpoint (decoding
// with the OpenTelemetry protocol's Go types) receives berth's SERVER span
// (child of the client's span) and that CLIENT span, in the client's trace,
// each with its jsonrpc.request.id, and the SERVER span with the session's
// mcp.session.id. The plugin server's sampling request
// reaches the TypeScript client with berth's relayed-request span as its
// traceparent, in the same trace, and that span links the plugin's.
func TestTypeScriptSDKTracePropagation(t *testing.T) {
	peers.Require(t)
	const traceID, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "a3ce929d0e0e4736"
	traceparent := "00-" + traceID + "-" + clientSpan + "-01"
	sink := otlpsink.Start(t)
	w := newWorld(t)
	w.linkRelay(t)
	w.plugin("rly", "up", testrelay.Name, testrelay.LegacyFlag)
	w.policy("rly__*", "allow")
	w.serveEnv = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink.URL, "OTEL_BSP_SCHEDULE_DELAY=100"}
	s := w.serve(1, "--http", "127.0.0.1:0", "--otel")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := peers.Command(ctx, t, "node", "--input-type=module", "-e", tsTraceClient, s.urls[0], s.token, traceparent)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("TypeScript client: %v\n%s\nberth serve:\n%s", err, stderr.String(), s.log)
	}
	var out struct {
		Meta        string         `json:"meta"`
		Sample      string         `json:"sample"`
		SampledMeta map[string]any `json:"sampledMeta"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("TypeScript client printed %q: %v", stdout.String(), err)
	}
	var pluginMeta map[string]any
	if err := json.Unmarshal([]byte(out.Meta), &pluginMeta); err != nil {
		t.Fatalf("the meta tool's answer %q: %v", out.Meta, err)
	}
	got, _ := pluginMeta["traceparent"].(string)
	if len(got) != 55 || got[3:35] != traceID {
		t.Fatalf("the plugin server got traceparent %q, want one in the client's trace %s", got, traceID)
	}
	if got[36:52] == clientSpan {
		t.Errorf("the plugin server got the client's own span %s as parent, want berth's", clientSpan)
	}
	if pluginMeta["tracestate"] != "ts=1" {
		t.Errorf("the plugin server got tracestate %v, want the client's", pluginMeta["tracestate"])
	}
	if out.Sample != "sampled: Paris" {
		t.Fatalf("sample through berth: %q", out.Sample)
	}

	var srv, up, sampling *tracepb.Span
	testkit.Eventually(t, 30*time.Second, "berth's spans of the calls at the OTLP endpoint", func() bool {
		srv, up, sampling = nil, nil, nil
		for _, sp := range sink.Spans() {
			if hex.EncodeToString(sp.GetTraceId()) != traceID {
				continue
			}
			switch {
			case sp.GetName() == "tools/call rly__up__meta" && sp.GetKind() == tracepb.Span_SPAN_KIND_SERVER:
				srv = sp
			case sp.GetName() == "tools/call meta" && sp.GetKind() == tracepb.Span_SPAN_KIND_CLIENT:
				up = sp
			case sp.GetName() == "sampling/createMessage" && sp.GetKind() == tracepb.Span_SPAN_KIND_CLIENT:
				sampling = sp
			}
		}
		return srv != nil && up != nil && sampling != nil
	})
	if hex.EncodeToString(srv.GetParentSpanId()) != clientSpan {
		t.Errorf("berth's SERVER span has parent %x, want the TypeScript client's %s", srv.GetParentSpanId(), clientSpan)
	}
	if !bytes.Equal(up.GetParentSpanId(), srv.GetSpanId()) {
		t.Errorf("berth's CLIENT span has parent %x, want its SERVER span %x", up.GetParentSpanId(), srv.GetSpanId())
	}
	if want := hex.EncodeToString(up.GetSpanId()); got[36:52] != want {
		t.Errorf("the plugin server's parent span %s, want berth's CLIENT span %s", got[36:52], want)
	}
	// (berth's own request to an HTTP client, the sampling, has no ID on
	// its span: go-sdk makes the HTTP front's connections; docs/telemetry.md.)
	for _, sp := range []*tracepb.Span{srv, up} {
		a := otlpsink.Attrs(sp.GetAttributes())
		if a["jsonrpc.request.id"] == "" {
			t.Errorf("span %q has no jsonrpc.request.id: %v", sp.GetName(), a)
		}
	}
	if a := otlpsink.Attrs(srv.GetAttributes()); a["mcp.session.id"] == "" || a["mcp.method.name"] != "tools/call" {
		t.Errorf("berth's SERVER span attributes: %v", a)
	}
	tp, _ := out.SampledMeta["traceparent"].(string)
	if want := "00-" + traceID + "-" + hex.EncodeToString(sampling.GetSpanId()) + "-01"; tp != want {
		t.Errorf("the TypeScript client's sampling request had traceparent %q, want berth's span %s", tp, want)
	}
	if l := sampling.GetLinks(); len(l) != 1 || hex.EncodeToString(l[0].GetSpanId()) != testrelay.SpanID {
		t.Errorf("berth's sampling span links %v, want the plugin server's span %s", l, testrelay.SpanID)
	}
	if strings.Contains(s.log.String(), "traceparent") {
		t.Errorf("berth serve logged trace context:\n%s", s.log)
	}
}
