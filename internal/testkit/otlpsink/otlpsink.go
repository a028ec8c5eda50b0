// Package otlpsink is an OTLP/HTTP endpoint for tests: an httptest
// server on loopback that accepts /v1/traces and /v1/metrics in protobuf
// (gzip or not), decodes each request with the OpenTelemetry protocol's
// own Go types (go.opentelemetry.io/proto/otlp), and keeps what it got.
package otlpsink

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Sink is a running OTLP/HTTP endpoint. Its methods are safe for
// concurrent use.
type Sink struct {
	URL string // http://127.0.0.1:PORT, the OTEL_EXPORTER_OTLP_ENDPOINT

	t       testing.TB
	mu      sync.Mutex
	raw     [][]byte // every request body, decompressed
	traces  []*coltracepb.ExportTraceServiceRequest
	metrics []*colmetricpb.ExportMetricsServiceRequest
	bad     []string
	headers []http.Header
}

// Start starts a Sink, closed at the test's end.
func Start(t testing.TB) *Sink {
	s := &Sink{t: t}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *Sink) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err == nil && r.Header.Get("Content-Encoding") == "gzip" {
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(body)); err == nil {
			body, err = io.ReadAll(zr)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-protobuf" {
		s.bad = append(s.bad, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	s.raw = append(s.raw, body)
	s.headers = append(s.headers, r.Header.Clone())
	var resp proto.Message
	switch r.URL.Path {
	case "/v1/traces":
		m := &coltracepb.ExportTraceServiceRequest{}
		if err = proto.Unmarshal(body, m); err == nil {
			s.traces = append(s.traces, m)
		}
		resp = &coltracepb.ExportTraceServiceResponse{}
	case "/v1/metrics":
		m := &colmetricpb.ExportMetricsServiceRequest{}
		if err = proto.Unmarshal(body, m); err == nil {
			s.metrics = append(s.metrics, m)
		}
		resp = &colmetricpb.ExportMetricsServiceResponse{}
	default:
		s.bad = append(s.bad, "path "+r.URL.Path)
		http.NotFound(w, r)
		return
	}
	if err != nil {
		s.bad = append(s.bad, r.URL.Path+": "+err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(b)
}

// Requests is how many requests the sink received, decodable or not.
func (s *Sink) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.raw) + len(s.bad)
}

// Header is the values of the header name in the requests received.
func (s *Sink) Header(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, h := range s.headers {
		out = append(out, h.Values(name)...)
	}
	return out
}

// Bad lists the requests that were not OTLP/HTTP protobuf.
func (s *Sink) Bad() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bad...)
}

// Contains reports whether any request body held b (decompressed).
func (s *Sink) Contains(b []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.raw {
		if bytes.Contains(r, b) {
			return true
		}
	}
	return false
}

// Spans are all the spans received so far.
func (s *Sink) Spans() []*tracepb.Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*tracepb.Span
	for _, req := range s.traces {
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				out = append(out, ss.GetSpans()...)
			}
		}
	}
	return out
}

// ResourceAttributes are the attributes of the resources of the spans received so far.
func (s *Sink) ResourceAttributes() []map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]string
	for _, req := range s.traces {
		for _, rs := range req.GetResourceSpans() {
			out = append(out, Attrs(rs.GetResource().GetAttributes()))
		}
	}
	return out
}

// Metrics are all the metrics received so far.
func (s *Sink) Metrics() []*metricpb.Metric {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*metricpb.Metric
	for _, req := range s.metrics {
		for _, rm := range req.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				out = append(out, sm.GetMetrics()...)
			}
		}
	}
	return out
}

// Attrs are OTLP attributes as strings (an int as its decimal).
func Attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.GetKey()] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = itoa(x.IntValue)
		case *commonpb.AnyValue_BoolValue:
			if x.BoolValue {
				out[kv.GetKey()] = "true"
			} else {
				out[kv.GetKey()] = "false"
			}
		default:
			out[kv.GetKey()] = v.String()
		}
	}
	return out
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

// Find is the first span named name, nil if none.
func Find(spans []*tracepb.Span, name string) *tracepb.Span {
	for _, sp := range spans {
		if sp.GetName() == name {
			return sp
		}
	}
	return nil
}

// Histogram is the metric named name, when it is a histogram; nil else.
func Histogram(ms []*metricpb.Metric, name string) *metricpb.Metric {
	for _, m := range ms {
		if m.GetName() == name && m.GetHistogram() != nil {
			return m
		}
	}
	return nil
}
