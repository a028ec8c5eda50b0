package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/testkit/otlpsink"
)

// otelHome is a BERTH_HOME whose workspace has the plugin "tel" enabled:
// its server "up" runs berth-testserver with the tool meta (it returns
// its request's params._meta), allowed by policy.
type otelHome struct{ env []string }

func newOtelHome(t *testing.T) otelHome {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the test server's PATH is POSIX")
	}
	bin := t.TempDir()
	buildPrograms(t, bin, "github.com/berth-mcp/berth/pool/internal/testserver/berth-testserver")
	home, ws := t.TempDir(), t.TempDir()
	env := map[string]string{"BERTH_HOME": filepath.Join(home, "berth"), "HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config"),
		"PATH": bin + string(os.PathListSeparator) + os.Getenv("PATH")}
	getenv := func(k string) string { return env[k] }
	bdir := filepath.Join(t.TempDir(), "tel")
	os.MkdirAll(bdir, 0o755)
	os.WriteFile(filepath.Join(bdir, "berth.json"), []byte(`{"manifestVersion": 1, "name": "tel", "version": "1.0.0", "description": "a test plugin",
  "mcpServers": {"up": {"stdio": {"command": "berth-testserver", "args": ["-tools", "meta"]}}}}`), 0o644)
	var digest, errb bytes.Buffer
	run(context.Background(), []string{"digest", bdir}, getenv, strings.NewReader(""), &digest, io.Discard)
	d := strings.Fields(digest.String())
	for _, args := range [][]string{
		{"trust", "--yes", "--allow-unsigned", "--digest", d[len(d)-1], bdir},
		{"enable", "tel", "--workspace", ws},
		{"policy", "set", "tel__up__meta", "allow"},
	} {
		if c := run(context.Background(), args, getenv, strings.NewReader(""), io.Discard, &errb); c != 0 {
			t.Fatalf("berth %s: exit %d\n%s", strings.Join(args, " "), c, errb.String())
		}
	}
	h := otelHome{}
	for k, v := range env {
		h.env = append(h.env, k+"="+v)
	}
	h.env = append(h.env, "BERTH_WORKSPACE_FOR_TEST="+ws)
	return h
}

// serveCall runs berth serve over stdio (args after serve, env added to
// the home's), calls tel__up__meta once with a secret-looking argument,
// closes the session, waits for serve to exit, and returns the tool's
// answer and serve's stderr.
func (h otelHome) serveCall(t *testing.T, env []string, args ...string) (string, string) {
	t.Helper()
	ws := ""
	for _, kv := range h.env {
		if v, ok := strings.CutPrefix(kv, "BERTH_WORKSPACE_FOR_TEST="); ok {
			ws = v
		}
	}
	cmd := exec.Command("berth", append([]string{"serve", "--workspace", ws}, args...)...)
	cmd.Env = append(append(os.Environ(), h.env...), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "otel-cli-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second}, nil)
	if err != nil {
		t.Fatalf("berth serve: %v\n%s", err, stderr.String())
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tel__up__meta", Arguments: map[string]any{"api_key": "sk-live-CLI-CANARY-93b1"}})
	if err != nil {
		t.Fatalf("call: %v\n%s", err, stderr.String())
	}
	cs.Close() // closes serve's stdin and waits for it to exit
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	return text, stderr.String()
}

// TestServeOtel: berth serve exports to the OTLP endpoint of the standard
// variables only with --otel (and OTEL_SDK_DISABLED=true still wins);
// with it, the call's spans arrive, named for berth, and the plugin's
// server gets the upstream span's traceparent; the argument value never
// reaches the endpoint.
func TestServeOtel(t *testing.T) {
	h := newOtelHome(t)

	t.Run("off by default", func(t *testing.T) {
		sink := otlpsink.Start(t)
		text, _ := h.serveCall(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink.URL, "OTEL_METRIC_EXPORT_INTERVAL=100"})
		if n := sink.Requests(); n != 0 {
			t.Errorf("without --otel the endpoint got %d requests", n)
		}
		if strings.Contains(text, "traceparent") {
			t.Errorf("without --otel the plugin's server got a trace context: %s", text)
		}
	})

	t.Run("OTEL_SDK_DISABLED", func(t *testing.T) {
		sink := otlpsink.Start(t)
		_, stderr := h.serveCall(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink.URL, "OTEL_SDK_DISABLED=true"}, "--otel")
		if n := sink.Requests(); n != 0 {
			t.Errorf("with OTEL_SDK_DISABLED=true the endpoint got %d requests", n)
		}
		if !strings.Contains(stderr, "OTEL_SDK_DISABLED=true overrides --otel") {
			t.Errorf("serve does not say telemetry is off:\n%s", stderr)
		}
	})

	t.Run("--otel", func(t *testing.T) {
		sink := otlpsink.Start(t)
		text, stderr := h.serveCall(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink.URL, "OTEL_EXPORTER_OTLP_HEADERS=x-tenant=berth-test"}, "--otel")
		if !strings.Contains(stderr, "telemetry is on") || !strings.Contains(stderr, sink.URL) {
			t.Errorf("serve does not say where telemetry goes:\n%s", stderr)
		}
		if bad := sink.Bad(); len(bad) > 0 {
			t.Fatalf("requests that are not OTLP/HTTP protobuf: %v", bad)
		}
		if h := sink.Header("X-Tenant"); len(h) == 0 || h[0] != "berth-test" {
			t.Errorf("OTEL_EXPORTER_OTLP_HEADERS was not sent: X-Tenant %q", h)
		}
		spans := sink.Spans()
		srv, up := otlpsink.Find(spans, "tools/call tel__up__meta"), otlpsink.Find(spans, "tools/call meta")
		if srv == nil || up == nil {
			t.Fatalf("%d spans, without tools/call tel__up__meta or tools/call meta\n%s", len(spans), stderr)
		}
		a := otlpsink.Attrs(srv.GetAttributes())
		for k, v := range map[string]string{"mcp.method.name": "tools/call", "network.transport": "pipe", "berth.transport": "stdio", "berth.plugin": "tel", "berth.approved_by": "policy"} {
			if a[k] != v {
				t.Errorf("server span: %s = %q, want %q (all: %v)", k, a[k], v, a)
			}
		}
		if !bytes.Equal(up.GetParentSpanId(), srv.GetSpanId()) {
			t.Errorf("the upstream span is not the server span's child")
		}
		if !strings.Contains(text, `"traceparent":"00-`) {
			t.Errorf("the plugin's server got no traceparent: %s", text)
		}
		found := false
		for _, r := range sink.ResourceAttributes() {
			found = found || r["service.name"] == "berth"
		}
		if !found {
			t.Errorf("no resource with service.name berth: %v", sink.ResourceAttributes())
		}
		if otlpsink.Histogram(sink.Metrics(), "mcp.server.operation.duration") == nil {
			t.Errorf("no mcp.server.operation.duration")
		}
		if sink.Contains([]byte("CLI-CANARY")) {
			t.Errorf("the argument value reached the OTLP endpoint without --otel-unsafe-content")
		}
	})
}

// TestServeOtelOneEnvironment: berth's own checks of the OTEL_* variables
// read the environment the exporters read (the process's), not the app's
// getenv: a protocol the exporters would not speak is refused even when
// only the process environment says so, and a getenv that says
// OTEL_SDK_DISABLED=true does not hide an environment that exports.
func TestServeOtelOneEnvironment(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	a := &app{stderr: io.Discard, getenv: func(string) string { return "" }}
	_, err := a.startTelemetry(context.Background(), slog.New(slog.DiscardHandler), true)
	if err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_PROTOCOL=grpc") {
		t.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=grpc in the process environment: %v, want refused", err)
	}

	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	sink := otlpsink.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
	a.getenv = func(k string) string { return map[string]string{"OTEL_SDK_DISABLED": "true"}[k] }
	tel, err := a.startTelemetry(context.Background(), slog.New(slog.DiscardHandler), true)
	if err != nil {
		t.Fatal(err)
	}
	defer tel.shutdown(context.Background())
	if tel.tracer == nil {
		t.Errorf("telemetry is off by a getenv the exporters do not read")
	}
}

// TestServeOtelRedactsEndpoint: the start log names the endpoint without
// its user information or query, either of which may hold a credential.
func TestServeOtelRedactsEndpoint(t *testing.T) {
	sink := otlpsink.Start(t)
	u := strings.Replace(sink.URL, "://", "://collector:pw-CANARY-71@", 1) + "/?api-key=q-CANARY-72#frag-CANARY-73"
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", u)
	var logs bytes.Buffer
	a := &app{stderr: io.Discard, getenv: func(string) string { return "" }}
	tel, err := a.startTelemetry(context.Background(), slog.New(slog.NewTextHandler(&logs, nil)), true)
	if err != nil {
		t.Fatal(err)
	}
	tel.shutdown(context.Background())
	host := strings.TrimPrefix(sink.URL, "http://")
	if !strings.Contains(logs.String(), "http://REDACTED@"+host+"/?REDACTED") || strings.Contains(logs.String(), "CANARY") {
		t.Errorf("the start log does not redact the endpoint %s:\n%s", u, logs.String())
	}
	for _, c := range []struct{ in, want string }{
		{"https://collector.example:4318", "https://collector.example:4318"},
		{"https://u:p@collector.example/otlp?token=t", "https://REDACTED@collector.example/otlp?REDACTED"},
		{"user:secret@collector.example:4318", "(an endpoint that is not a URL with a host; not shown)"},
		{"http://[::1", "(an endpoint that is not a URL with a host; not shown)"},
	} {
		if got := redactEndpoint(c.in); got != c.want {
			t.Errorf("redactEndpoint(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
