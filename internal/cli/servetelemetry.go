package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/berth-mcp/berth/bundle"
)

// serveTelemetry is berth serve's OpenTelemetry: the providers handed to
// the pool and the server, nil for both when off.
type serveTelemetry struct {
	tracer   trace.TracerProvider
	meter    metric.MeterProvider
	shutdown func(context.Context) error
}

// otelGetenv is where berth serve --otel reads its OTEL_* variables: the
// process environment, the one source the OpenTelemetry exporters and SDK
// read the rest from (the endpoint, headers, TLS, sampler, batching), so
// that what berth checks is what is exported with. It is not the app's
// getenv: an in-process test that set OTEL_* only there would check one
// environment and export with another; tests of the export run berth
// serve as a process (serve_otel_test.go).
var otelGetenv = os.Getenv

// otelProtocols are the OTEL_EXPORTER_OTLP_*PROTOCOL variables; berth
// exports over OTLP/HTTP with protobuf only.
var otelProtocols = []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"}

// startTelemetry turns on OpenTelemetry for berth serve --otel: traces
// and metrics exported over OTLP/HTTP to where the standard
// OTEL_EXPORTER_OTLP_* variables say (docs/telemetry.md). Without --otel,
// or with OTEL_SDK_DISABLED=true, it is off: nothing is made and nothing
// is sent. A protocol other than http/protobuf is refused. Every OTEL_*
// variable comes from the process environment (otelGetenv).
func (a *app) startTelemetry(ctx context.Context, log *slog.Logger, on bool) (*serveTelemetry, error) {
	off := &serveTelemetry{shutdown: func(context.Context) error { return nil }}
	if !on {
		return off, nil
	}
	if strings.EqualFold(strings.TrimSpace(otelGetenv("OTEL_SDK_DISABLED")), "true") {
		log.Info("telemetry is off: OTEL_SDK_DISABLED=true overrides --otel")
		return off, nil
	}
	for _, k := range otelProtocols {
		if v := strings.TrimSpace(otelGetenv(k)); v != "" && v != "http/protobuf" {
			return nil, usagef("%s=%s: berth serve --otel exports over OTLP/HTTP with protobuf only; set %s=http/protobuf or unset it", k, v, k)
		}
	}
	own := []attribute.KeyValue{attribute.String("service.version", bundle.BerthVersion)}
	if otelGetenv("OTEL_SERVICE_NAME") == "" {
		own = append(own, attribute.String("service.name", "berth"))
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(own...))
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	texp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("telemetry: the OTLP trace exporter: %w (check the OTEL_EXPORTER_OTLP_* variables)", err)
	}
	mexp, err := otlpmetrichttp.New(ctx)
	if err != nil {
		texp.Shutdown(ctx)
		return nil, fmt.Errorf("telemetry: the OTLP metric exporter: %w (check the OTEL_EXPORTER_OTLP_* variables)", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(texp), sdktrace.WithResource(res))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp)), sdkmetric.WithResource(res))
	log.Info("telemetry is on: traces and metrics go over OTLP/HTTP", "endpoint", otelEndpoint(otelGetenv))
	return &serveTelemetry{tracer: tp, meter: mp, shutdown: func(ctx context.Context) error {
		// What is still buffered is sent, within a bound.
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx))
	}}, nil
}

// otelEndpoint names where traces go, for the start log: the endpoint
// with any user information and query replaced by "REDACTED" (either may
// hold a credential), never the headers.
func otelEndpoint(getenv func(string) string) string {
	v := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if v == "" {
		v = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	if v == "" {
		return "http://localhost:4318 (the OTLP default)"
	}
	return redactEndpoint(v)
}

// redactEndpoint is an endpoint URL fit for a log: its user information
// and query replaced by "REDACTED", its fragment dropped; one that is not
// a URL with a host (it does not parse, or "user:pass@host" without a
// scheme) is not shown at all.
func redactEndpoint(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.Opaque != "" || u.Host == "" {
		return "(an endpoint that is not a URL with a host; not shown)"
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	if u.RawQuery != "" || u.ForceQuery {
		u.RawQuery, u.ForceQuery = "REDACTED", false
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}
