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
	"github.com/berth-mcp/berth/pool"
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

// instrumentSending adds the telemetry middleware of what berth sends to
// its clients, when telemetry is on; off, it adds nothing.
func (s *Server) instrumentSending() {
	if s.tel != nil {
		s.ms.AddSendingMiddleware(s.sendingTelemetry)
	}
}

// telemetryMiddleware makes the SERVER span of each client request and
// notification and records mcp.server.operation.duration (the
// conventions' span and histogram cover both). The parent is the
// client's trace context in params._meta, when it sent one. A request's
// span has its JSON-RPC ID (jsonrpc.request.id).
func (s *Server) telemetryMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	in := s.tel
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		start := time.Now()
		params := mcpotel.ParamsOf(req)
		if params != nil {
			ctx = in.Extract(ctx, params.GetMeta())
		}
		name, attrs := s.requestAttributes(ctx, method, req, params)
		if !strings.HasPrefix(method, "notifications/") {
			if id, ok := mcpotel.IncomingRequestID(ctx); ok {
				attrs = append(attrs, mcpotel.RequestID.String(mcpotel.IDString(id)))
			}
		}
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

// sendingTelemetry makes the CLIENT span of each request and notification
// berth sends to a client (the conventions' span of a server-initiated
// operation): a plugin server's sampling/createMessage, elicitation/create
// and roots/list berth relays, berth's own approval elicitation, and the
// notifications (progress, message, list_changed, resources/updated). Its
// parent is the span of ctx, the client's request it belongs to when
// there is one; a relayed request links the plugin server's span when the
// server sent its trace context, and carries the plugin, server, policy
// decision and outcome. berth's span's W3C trace context replaces any in
// a request's params._meta. It records no duration: mcp.client.operation.duration is
// of berth's requests to plugin servers.
func (s *Server) sendingTelemetry(next mcp.MethodHandler) mcp.MethodHandler {
	in := s.tel
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		params := mcpotel.ParamsOf(req)
		var meta mcp.Meta
		if params != nil {
			meta = params.GetMeta()
		}
		notification := strings.HasPrefix(method, "notifications/")
		attrs := s.sentAttributes(ctx, method, req)
		opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
		relayed := false
		if o, ok := meta[metaOrigin].(map[string]string); ok && !notification {
			relayed = true
			attrs = append(attrs, mcpotel.Plugin.String(o["plugin"]), mcpotel.Server.String(o["server"]), mcpotel.PolicyDecision.String(string(VerdictAllow)))
			if sc := trace.SpanContextFromContext(in.Extract(context.Background(), meta)); sc.IsValid() {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{mcpotel.Plugin.String(o["plugin"]), mcpotel.Server.String(o["server"])}}))
			}
		}
		opts = append(opts, trace.WithAttributes(attrs...))
		ctx, span := in.Tracer.Start(ctx, method, opts...)
		if !notification {
			// A request's params are its own; a notification's may be
			// shared by every session it goes to (a log message, a list
			// change), and are left as they are.
			if params != nil {
				params.SetMeta(in.Inject(ctx, meta))
			}
			ctx = mcpotel.Outgoing(ctx, span)
		}
		res, err := next(ctx, method, req)
		if relayed {
			outcome := OutcomeRan
			if err != nil {
				outcome = OutcomeFailed
			}
			span.SetAttributes(mcpotel.Outcome.String(string(outcome)))
		}
		in.End(span, nil, res, err)
		return res, err
	}
}

// traceWritten starts the CLIENT span of a notification berth writes to
// a client's connection itself, below go-sdk's middleware (the tasks
// extension's notifications/tasks/status on the stdio front), and returns
// what ends it with the write's error. Its params are passed on as the
// plugin server sent them: no trace context is added.
func (s *Server) traceWritten(ctx context.Context, method string) func(error) {
	if s.tel == nil {
		return func(error) {}
	}
	attrs := s.transportAttributes(ctx, []attribute.KeyValue{mcpotel.MethodName.String(method)})
	_, span := s.tel.Tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return func(err error) { s.tel.End(span, nil, nil, err) }
}

// sentAttributes are the attributes of what berth sends to a client: the
// method, the client's transport, protocol version and session.
func (s *Server) sentAttributes(ctx context.Context, method string, req mcp.Request) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs, mcpotel.MethodName.String(method))
	attrs = s.transportAttributes(ctx, attrs)
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		if ip := ss.InitializeParams(); ip != nil && ip.ProtocolVersion != "" {
			attrs = append(attrs, mcpotel.ProtocolVersion.String(ip.ProtocolVersion))
		}
		if ss.ID() != "" {
			attrs = append(attrs, mcpotel.SessionID.String(mcpotel.HashID(ss.ID())))
		}
	}
	if s.view.Profile != "" {
		attrs = append(attrs, mcpotel.Profile.String(s.view.Profile))
	}
	return attrs
}

// transportAttributes adds the network and berth transport of the
// client of ctx to attrs.
func (s *Server) transportAttributes(ctx context.Context, attrs []attribute.KeyValue) []attribute.KeyValue {
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
	return attrs
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
	attrs = s.transportAttributes(ctx, attrs)
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

// relayedMethod is the method of a relayed request of kind.
var relayedMethod = map[pool.RequestKind]string{pool.RequestSampling: "sampling/createMessage", pool.RequestElicitation: "elicitation/create"}

// traceRelayed records berth's decision about a plugin server's request
// that it relays to the client (as a request or an input request), as
// the audit entry e records it, as an event berth.relayed_request on the
// span of the client's request it belongs to: the method, the plugin and
// server, the policy decision and the outcome. A relayed request that
// reached the client also has a CLIENT span of its own (sendingTelemetry);
// one refused, or passed on as an input request inside a result, has
// only the event.
func (r *callRelay) traceRelayed(kind pool.RequestKind, e *AuditEntry) {
	if r.s.tel == nil {
		return
	}
	span := trace.SpanFromContext(r.ctx)
	if !span.IsRecording() {
		return
	}
	span.AddEvent("berth.relayed_request", trace.WithAttributes(
		mcpotel.MethodName.String(relayedMethod[kind]), mcpotel.Plugin.String(e.Plugin), mcpotel.Server.String(e.Server),
		mcpotel.PolicyDecision.String(string(e.Decision)), mcpotel.Outcome.String(string(e.Outcome))))
}
