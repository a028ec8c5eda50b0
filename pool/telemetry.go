package pool

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/berth-mcp/berth/internal/mcpotel"
)

// instrumentClient adds the telemetry middleware to the MCP client of
// server s, when telemetry is on (Options.TracerProvider or
// MeterProvider); off, it adds nothing.
func (s *server) instrumentClient(client *mcp.Client) {
	if s.p.tel != nil {
		client.AddSendingMiddleware(s.telemetryMiddleware)
	}
}

// telemetryMiddleware makes the CLIENT span of each request berth sends
// to the plugin's server, as a child of the span in ctx (the client's
// request being served, when there is one), records
// mcp.client.operation.duration, and carries the span's W3C trace
// context to the server in a request's params._meta (traceparent,
// tracestate). The
// notifications berth sends (notifications/initialized, cancelled,
// roots/list_changed) have spans too, as the conventions define; a
// request's span gets its JSON-RPC ID from the connection as it is
// written (mcpotel.NoteRequestID: the stdio and SSE wire, and the HTTP
// guard).
func (s *server) telemetryMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	in := s.p.tel
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		start := time.Now()
		params := mcpotel.ParamsOf(req)
		name, attrs := s.upstreamAttributes(method, req, params)
		ctx, span := in.Tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
		if !strings.HasPrefix(method, "notifications/") {
			// A request's params are its own; a notification's may be
			// shared by every session it goes to (roots/list_changed),
			// and are left as they are.
			if params != nil {
				params.SetMeta(in.Inject(ctx, params.GetMeta()))
			}
			ctx = mcpotel.Outgoing(ctx, span)
		}
		res, err := next(ctx, method, req)
		attrs = in.End(span, attrs, res, err)
		in.RecordClient(ctx, time.Since(start).Seconds(), upstreamMetricAttributes(attrs))
		return res, err
	}
}

// upstreamAttributes are an upstream request's span name and attributes:
// the conventions' (the tool and prompt names are the server's own) and
// the plugin and server of berth.
func (s *server) upstreamAttributes(method string, req mcp.Request, params mcp.Params) (string, []attribute.KeyValue) {
	name := method
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs, mcpotel.MethodName.String(method), mcpotel.Plugin.String(s.pl.name), mcpotel.Server.String(s.name))
	if s.kind == TransportStdio {
		attrs = append(attrs, mcpotel.Transport.String("pipe"))
	} else {
		attrs = append(attrs, mcpotel.Transport.String("tcp"), mcpotel.ProtocolName.String("http"))
	}
	if cs, ok := req.GetSession().(*mcp.ClientSession); ok && cs != nil {
		if ir := cs.InitializeResult(); ir != nil && ir.ProtocolVersion != "" {
			attrs = append(attrs, mcpotel.ProtocolVersion.String(ir.ProtocolVersion))
		}
		if id := cs.ID(); id != "" {
			attrs = append(attrs, mcpotel.SessionID.String(mcpotel.HashID(id)))
		}
	}
	switch p := params.(type) {
	case *mcp.CallToolParams:
		name += " " + p.Name
		attrs = append(attrs, mcpotel.ToolName.String(p.Name), mcpotel.OperationName.String("execute_tool"))
	case *mcp.GetPromptParams:
		name += " " + p.Name
		attrs = append(attrs, mcpotel.PromptName.String(p.Name))
	case *mcp.ReadResourceParams:
		if s.p.tel.Content {
			attrs = append(attrs, mcpotel.ResourceURI.String(p.URI))
		}
	}
	return name, attrs
}

// upstreamMetricAttributes are the low-cardinality attributes of an
// upstream span, for mcp.client.operation.duration.
func upstreamMetricAttributes(attrs []attribute.KeyValue) []attribute.KeyValue {
	out := attrs[:0:0]
	for _, a := range attrs {
		switch a.Key {
		case mcpotel.MethodName, mcpotel.ToolName, mcpotel.PromptName, mcpotel.OperationName, mcpotel.ErrorType,
			mcpotel.StatusCode, mcpotel.ProtocolVersion, mcpotel.Transport, mcpotel.ProtocolName,
			mcpotel.Plugin, mcpotel.Server:
			out = append(out, a)
		}
	}
	return out
}

// maxIDPeek is the most of a POST's body noteRequestID reads for the ID.
const maxIDPeek = 1 << 20

// noteRequestID gives the span of a request berth sends to a Streamable
// HTTP server its JSON-RPC ID, read from a copy of the POST's body
// (go-sdk's HTTP client connection is not wrapped: wire.go). It reads
// nothing unless the request is one of berth's traced requests.
func noteRequestID(r *http.Request) {
	if r.Method != http.MethodPost || r.GetBody == nil || !mcpotel.IsOutgoing(r.Context()) {
		return
	}
	body, err := r.GetBody()
	if err != nil {
		return
	}
	defer body.Close()
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	b, err := io.ReadAll(io.LimitReader(body, maxIDPeek))
	if err != nil || json.Unmarshal(b, &m) != nil || len(m.ID) == 0 {
		return
	}
	var raw any
	if json.Unmarshal(m.ID, &raw) != nil {
		return
	}
	if id, err := jsonrpc.MakeID(raw); err == nil {
		mcpotel.NoteRequestID(r.Context(), id)
	}
}
