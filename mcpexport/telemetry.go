package mcpexport

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/berth-mcp/berth/internal/mcpotel"
)

// instrument adds the telemetry middleware (outermost, so that its span
// and duration cover everything berth does for a request), when
// telemetry is on (Options.TracerProvider or MeterProvider). Off, it adds
// nothing.
func (s *Server) instrument() {
	if s.tel != nil {
		s.ms.AddReceivingMiddleware(s.telemetryMiddleware)
	}
}

// telemetryMiddleware makes the SERVER span of each client request and
// records mcp.server.operation.duration. The parent is the client's
// trace context in params._meta, when it sent one. Notifications are
// not traced.
func (s *Server) telemetryMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	in := s.tel
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		start := time.Now()
		params := mcpotel.ParamsOf(req)
		if params != nil {
			ctx = in.Extract(ctx, params.GetMeta())
		}
		name, attrs := s.requestAttributes(ctx, method, req, params)
		ctx, span := in.Tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		res, err := next(ctx, method, req)
		if target, kv, ok := s.requestTarget(params); ok {
			span.SetName(name + " " + target)
			span.SetAttributes(kv)
			attrs = append(attrs, kv)
		}
		attrs = in.End(span, attrs, res, err)
		in.RecordServer(ctx, time.Since(start).Seconds(), metricAttributes(attrs))
		return res, err
	}
}

// otherName stands, in span names and attributes, for a tool or prompt
// name the client chose that berth does not offer: the client's text
// never reaches the trace backend, nor makes a metric series.
const otherName = "_OTHER"

// requestTarget is the tool or prompt a request names, as span name
// suffix and attribute; otherName for a name berth does not offer. It is
// asked after the request was served: the catalog is synced by then.
func (s *Server) requestTarget(params mcp.Params) (string, attribute.KeyValue, bool) {
	switch p := params.(type) {
	case *mcp.CallToolParamsRaw:
		tool := otherName
		if s.hasTool(p.Name) || s.offeredTool(p.Name) != nil {
			tool = p.Name
		}
		return tool, mcpotel.ToolName.String(tool), true
	case *mcp.GetPromptParams:
		prompt := otherName
		if s.hasPrompt(p.Name) {
			prompt = p.Name
		}
		return prompt, mcpotel.PromptName.String(prompt), true
	}
	return "", attribute.KeyValue{}, false
}

// requestAttributes are a request's span name and attributes: the
// conventions' (no argument values, no resource URI unless the operator
// opted in: Options.TelemetryContentUnsafe) and berth's profile; the
// tool or prompt is added after (requestTarget).
func (s *Server) requestAttributes(ctx context.Context, method string, req mcp.Request, params mcp.Params) (string, []attribute.KeyValue) {
	name := method
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs, mcpotel.MethodName.String(method))
	o := originOf(ctx)
	switch o.Transport {
	case TransportStdio:
		attrs = append(attrs, mcpotel.Transport.String("pipe"))
	case TransportSSE, TransportHTTP, TransportStateless:
		attrs = append(attrs, mcpotel.Transport.String("tcp"), mcpotel.ProtocolName.String("http"))
	}
	if o.Transport != "" {
		attrs = append(attrs, mcpotel.ClientTransport.String(o.Transport))
	}
	if pv, ok := req.(interface{ ProtocolVersion() string }); ok {
		if v := pv.ProtocolVersion(); v != "" {
			attrs = append(attrs, mcpotel.ProtocolVersion.String(v))
		}
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil && ss.ID() != "" {
		attrs = append(attrs, mcpotel.SessionID.String(mcpotel.HashID(ss.ID())))
	}
	if s.view.Profile != "" {
		attrs = append(attrs, mcpotel.Profile.String(s.view.Profile))
	}
	switch p := params.(type) {
	case *mcp.CallToolParamsRaw:
		attrs = append(attrs, mcpotel.OperationName.String("execute_tool"))
		if s.tel.Content && len(p.Arguments) > 0 {
			attrs = append(attrs, mcpotel.ToolArguments.String(string(p.Arguments)))
		}
	case *mcp.ReadResourceParams:
		if s.tel.Content {
			attrs = append(attrs, mcpotel.ResourceURI.String(p.URI))
		}
	}
	return name, attrs
}

// metricAttributes are the attributes of a span that a duration
// histogram keeps: the low-cardinality ones.
func metricAttributes(attrs []attribute.KeyValue) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(attrs))
	for _, a := range attrs {
		switch a.Key {
		case mcpotel.MethodName, mcpotel.ToolName, mcpotel.PromptName, mcpotel.OperationName, mcpotel.ErrorType,
			mcpotel.StatusCode, mcpotel.ProtocolVersion, mcpotel.Transport, mcpotel.ProtocolName, mcpotel.Profile,
			mcpotel.Plugin, mcpotel.Server:
			out = append(out, a)
		}
	}
	return out
}

// traceCall puts berth's decision about a call (a tool call, a prompt, a
// resource read) on the request's span: the plugin and server it went
// to, the policy decision, who approved it (the decider the audit
// records; for the queue, also who decided there: "queue: berth approve
// (alice)") and the outcome. It reads the call's audit entry, so it runs
// after the entry is complete (deferred first). It does nothing when the span is not recorded.
func (s *Server) traceCall(ctx context.Context, c *call) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	e := &c.entry
	attrs := make([]attribute.KeyValue, 0, 5)
	for _, kv := range []struct {
		k attribute.Key
		v string
	}{{mcpotel.Plugin, e.Plugin}, {mcpotel.Server, e.Server}, {mcpotel.PolicyDecision, string(e.Decision)}, {mcpotel.Outcome, string(e.Outcome)}} {
		if kv.v != "" {
			attrs = append(attrs, kv.k.String(kv.v))
		}
	}
	if e.Decision == VerdictAllow && e.DecidedBy != "" {
		by := string(e.DecidedBy)
		if e.DecidedBy == ByQueue && c.approver != "" {
			by = c.approver
		}
		attrs = append(attrs, mcpotel.ApprovedBy.String(by))
	}
	span.SetAttributes(attrs...)
}

// newInstruments makes the Server's telemetry from its Options; nil when
// off. A failure to make an instrument turns telemetry off, logged.
func newInstruments(opts *Options, log *slog.Logger) *mcpotel.Instruments {
	in, err := mcpotel.New(opts.TracerProvider, opts.MeterProvider, opts.TelemetryContentUnsafe)
	if err != nil {
		log.Error("telemetry is off: cannot make its instruments", "error", err)
		return nil
	}
	return in
}
