package pool

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/berth-mcp/berth/internal/mcpotel"
)

// noteRequestID: the POST of a request berth traces to a Streamable HTTP
// server gives the request's span its JSON-RPC ID, read from a copy of
// the body (the body itself still sent whole); an untraced POST is not
// read.
func TestNoteRequestIDHTTP(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	in, err := mcpotel.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"x"}}`
	for _, c := range []struct {
		name, body, want string
		traced           bool
	}{
		{"number", body, "17", true},
		{"string", `{"jsonrpc":"2.0","id":"r-1","method":"ping"}`, "r-1", true},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/cancelled"}`, "", true},
		{"not traced", body, "", false},
	} {
		ctx, span := in.Tracer.Start(context.Background(), c.name)
		if c.traced {
			ctx = mcpotel.Outgoing(ctx, span)
		}
		r, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://example.invalid/mcp", bytes.NewReader([]byte(c.body)))
		noteRequestID(r)
		span.End()
		var sent bytes.Buffer
		sent.ReadFrom(r.Body)
		if sent.String() != c.body {
			t.Errorf("%s: the body sent is %q", c.name, sent.String())
		}
		ended := rec.Ended()
		got := ""
		for _, a := range ended[len(ended)-1].Attributes() {
			if a.Key == mcpotel.RequestID {
				got = a.Value.AsString()
			}
		}
		if got != c.want {
			t.Errorf("%s: jsonrpc.request.id %q, want %q", c.name, got, c.want)
		}
	}
}
