//lint:file-ignore SA1019 the relay carries the SEP-2577 features (roots, sampling, logging) during their deprecation window

package mcpexport

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/internal/testrelay"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// relayEnv is a BERTH_HOME with the plugin "rly" (server "up", the
// testrelay server) enabled and allowed, and an exporter over its pool.
type relayEnv struct {
	t     testing.TB
	ws    string
	paths store.Paths
	pool  *pool.Pool
	srv   *Server
}

func newRelayEnv(t testing.TB, legacyUpstream bool, policy ...store.PolicyRule) *relayEnv {
	t.Helper()
	return newRelayEnvIn(t, "", nil, legacyUpstream, policy...)
}

// newRelayEnvIn is newRelayEnv with the workspace ws ("": a temporary
// directory) and env added to the plugin server's environment.
func newRelayEnvIn(t testing.TB, ws string, env []string, legacyUpstream bool, policy ...store.PolicyRule) *relayEnv {
	t.Helper()
	ctx := context.Background()
	h := newPluginHome(t, ws, "rly", testrelay.Name, "relay test plugin", append([]store.PolicyRule{{Pattern: "rly__*", Action: store.ActionAllow}}, policy...))
	home, bin, ws, paths, st := h.home, h.bin, h.ws, h.paths, h.st
	var err error
	e := &relayEnv{t: t, ws: ws, paths: paths}
	e.pool, err = pool.Open(ctx, st, ws, &pool.Options{
		BaseEnv:        append([]string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + home}, env...),
		PollInterval:   50 * time.Millisecond,
		LegacyUpstream: legacyUpstream,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = New(e.pool, nil)
	t.Cleanup(func() { e.pool.Close() })
	t.Cleanup(func() { e.srv.Close() })
	return e
}

// relayClient is a go-sdk client of the exporter that records what it
// is sent.
type relayClient struct {
	cs       *mcp.ClientSession
	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
	logs     []*mcp.LoggingMessageParams
	asked    []string // elicitation messages
	schemas  []string // their requested schemas, as JSON
	updated  []string
}

type clientCaps struct {
	sampling, elicitation bool
	// noRoots: the client declares no roots (go-sdk's client declares
	// them by default).
	noRoots bool
}

func (e *relayEnv) client(proto string, caps clientCaps) *relayClient {
	e.t.Helper()
	ctx := context.Background()
	rc := &relayClient{}
	ct, st := mcp.NewInMemoryTransports()
	if _, err := e.srv.Connect(ctx, st); err != nil {
		e.t.Fatal(err)
	}
	o := &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			rc.mu.Lock()
			rc.progress = append(rc.progress, r.Params)
			rc.mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			rc.mu.Lock()
			rc.logs = append(rc.logs, r.Params)
			rc.mu.Unlock()
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			rc.mu.Lock()
			rc.updated = append(rc.updated, r.Params.URI)
			rc.mu.Unlock()
		},
	}
	if caps.noRoots {
		o.Capabilities = &mcp.ClientCapabilities{}
	}
	if caps.sampling {
		o.CreateMessageHandler = func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "Paris"}}, nil
		}
	}
	if caps.elicitation {
		o.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			rc.mu.Lock()
			rc.asked = append(rc.asked, r.Params.Message)
			b, _ := json.Marshal(r.Params.RequestedSchema)
			rc.schemas = append(rc.schemas, string(b))
			rc.mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "relay-client", Version: "1"}, o)
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: proto})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cs.Close() })
	rc.cs = cs
	return rc
}

// waitProgress waits (up to 5 s) until n progress notifications came.
func (rc *relayClient) waitProgress(n int) {
	testkit.Within(5*time.Second, func() bool { return lenOf(rc, &rc.progress) >= n })
}

// lenOf is len(*list), one of rc's lists, under rc.mu.
func lenOf[T any](rc *relayClient, list *[]T) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(*list)
}

// setLevel sets rc's logging level and waits until the plugin server was
// told it (berth forwards it asynchronously).
func (rc *relayClient) setLevel(t *testing.T, level mcp.LoggingLevel) {
	t.Helper()
	if err := rc.cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: level}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the level "+string(level)+" to reach the plugin server", func() bool {
		return rc.call(t, "level", nil, nil) == string(level)
	})
}

func (rc *relayClient) call(t testing.TB, tool string, args map[string]any, token any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := &mcp.CallToolParams{Name: "rly__up__" + tool, Arguments: args}
	if token != nil {
		p.SetProgressToken(token)
	}
	res, err := rc.cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// A plugin server's progress reaches the client under the client's token,
// in order, each step once; what a hostile server adds is dropped: a value
// that does not increase, and progress under tokens it guessed (berth's
// form, or the client's own token, which it never sees). Upstream the
// request carries berth's token, not the client's. On both protocol eras
// to the plugin server.
func TestRelayProgress(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("legacy-upstream=%v", legacy), func(t *testing.T) {
			e := newRelayEnv(t, legacy)
			rc := e.client("2025-11-25", clientCaps{})
			if got := rc.call(t, "progress", map[string]any{"n": 5}, nil); got != "no progress token" {
				t.Fatalf("a call without a progress token got one upstream: %q", got)
			}
			got := rc.call(t, "progress", map[string]any{"n": 5}, "client-token")
			if !strings.HasPrefix(got, "token berth-") {
				t.Fatalf("the upstream request's token: %q, want berth's own", got)
			}
			// berth sent them before the result; the client's go-sdk
			// handles notifications on a goroutine of their own.
			rc.waitProgress(5)
			time.Sleep(50 * time.Millisecond)
			rc.mu.Lock()
			defer rc.mu.Unlock()
			var steps []string
			for _, p := range rc.progress {
				if p.ProgressToken != "client-token" {
					t.Errorf("progress under token %v", p.ProgressToken)
				}
				steps = append(steps, fmt.Sprintf("%g/%g %s", p.Progress, p.Total, p.Message))
			}
			want := "1/5 step 1,2/5 step 2,3/5 step 3,4/5 step 4,5/5 step 5"
			if strings.Join(steps, ",") != want {
				t.Fatalf("progress relayed: %q, want %q", strings.Join(steps, ","), want)
			}
		})
	}
}

// A server flooding progress gets at most MaxProgressPerSecond through,
// each message capped.
func TestRelayProgressFlood(t *testing.T) {
	e := newRelayEnv(t, false)
	rc := e.client("2025-11-25", clientCaps{})
	start := time.Now()
	rc.call(t, "flood", nil, 7)
	// A window of a second opens at the first one relayed, and again a
	// second or more later.
	windows := int(time.Since(start)/time.Second) + 1
	// Notifications come on a goroutine of the client's: wait for the
	// first, then a little for any beyond the limit.
	testkit.Eventually(t, 10*time.Second, "a relayed progress notification", func() bool { return lenOf(rc, &rc.progress) > 0 })
	time.Sleep(100 * time.Millisecond)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if max := windows * pool.MaxProgressPerSecond; len(rc.progress) == 0 || len(rc.progress) > max || len(rc.progress) >= 1000 {
		t.Fatalf("%d progress notifications relayed of a flood of 1000 in %d windows of a second, want 1..%d", len(rc.progress), windows, max)
	}
	for _, p := range rc.progress {
		if len(p.Message) > pool.MaxProgressMessage+len("…") {
			t.Fatalf("a progress message of %d bytes was relayed", len(p.Message))
		}
	}
}

// A server sending progress under tokens that are not its call's (the
// client's own token, one shaped like berth's, a number) gets nothing
// through: progress is relayed only for the token berth gave the call.
func TestRelayProgressForeignToken(t *testing.T) {
	e := newRelayEnv(t, false)
	rc := e.client("2025-11-25", clientCaps{})
	if got := rc.call(t, "foreign-progress", nil, "client-token"); got != "sent" {
		t.Fatalf("the call: %q", got)
	}
	// A later call's own progress, relayed after anything of the first
	// call's would have been: once it came, nothing else may have.
	rc.call(t, "progress", map[string]any{"n": 1}, "marker")
	testkit.Eventually(t, 10*time.Second, "the marker call's progress", func() bool { return lenOf(rc, &rc.progress) > 0 })
	time.Sleep(100 * time.Millisecond)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.progress) != 1 || rc.progress[0].ProgressToken != "marker" {
		t.Fatalf("progress notifications under foreign tokens were relayed: %+v", rc.progress)
	}
}

// A server flooding log messages gets at most MaxLogPerSecond a second
// through.
func TestRelayLogFlood(t *testing.T) {
	e := newRelayEnv(t, true)
	rc := e.client("2025-11-25", clientCaps{})
	rc.setLevel(t, "info")
	start := time.Now()
	rc.call(t, "log-flood", nil, nil)
	// The messages come as notifications, maybe after the result: wait
	// for the first, then a little for any beyond the limit.
	testkit.Eventually(t, 10*time.Second, "a relayed log message", func() bool { return lenOf(rc, &rc.logs) > 0 })
	time.Sleep(200 * time.Millisecond)
	windows := int(time.Since(start)/time.Second) + 1
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if max := windows * pool.MaxLogPerSecond; len(rc.logs) == 0 || len(rc.logs) > max || len(rc.logs) >= 1000 {
		t.Fatalf("%d log messages relayed of a flood of 1000 in %d windows of a second, want 1..%d", len(rc.logs), windows, max)
	}
}

// A client's cancellation reaches the plugin server: the upstream request
// is cancelled too.
func TestRelayCancellation(t *testing.T) {
	e := newRelayEnv(t, false)
	rc := e.client("2025-11-25", clientCaps{})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := rc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "rly__up__block", Arguments: map[string]any{}}); err == nil {
		t.Fatal("a cancelled call returned no error")
	}
	testkit.Eventually(t, 10*time.Second, "the plugin server's request to be cancelled with the client's", func() bool {
		return rc.call(t, "cancelled", nil, nil) == "1"
	})
}

// A plugin server's log messages reach a session that set a level, at or
// above it, under a logger naming the plugin and server, with control
// characters escaped and large data capped; a session that set no level
// gets none.
func TestRelayLogging(t *testing.T) {
	e := newRelayEnv(t, true)
	quiet := e.client("2025-11-25", clientCaps{})
	rc := e.client("2025-11-25", clientCaps{})
	rc.setLevel(t, "info")
	rc.call(t, "log", nil, nil)
	// The messages arrive as notifications, after the result may have: wait
	// for the three the test expects (a loaded machine took over 200 ms),
	// then a little more for any that should not come.
	testkit.Within(10*time.Second, func() bool { return lenOf(rc, &rc.logs) >= 3 })
	time.Sleep(100 * time.Millisecond)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var got []string
	for _, l := range rc.logs {
		raw, _ := json.Marshal(l.Data)
		if len(raw) > pool.MaxLogData+200 {
			t.Errorf("log data of %d bytes relayed", len(raw))
		}
		d := string(raw)
		if len(d) > 40 {
			d = d[:40]
		}
		got = append(got, fmt.Sprintf("%s %s %s", l.Level, l.Logger, d))
	}
	want := []string{
		`info rly__up/lg\u001b[31m "message at info"`,
		`error rly__up/lg\u001b[31m "message at error"`,
		`error rly__up/big "(log data of 102402 bytes, cut to 4096)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("log messages relayed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	quiet.mu.Lock()
	defer quiet.mu.Unlock()
	if len(quiet.logs) != 0 {
		t.Fatalf("a session that set no level got %d log messages", len(quiet.logs))
	}
}

// A plugin server's sampling and elicitation during a call go to the
// client that made the call, the elicitation naming the plugin and server,
// each audited; a client without the capability, a denying policy, and a
// request outside any call are refused with an MCP error saying why.
func TestRelaySamplingAndElicitation(t *testing.T) {
	// The plugin server records its wire in the workspace, the one
	// place outside its own directories it may write (confined).
	ws := t.TempDir()
	wire := filepath.Join(ws, "plugin-wire")
	e := newRelayEnvIn(t, ws, []string{testrelay.WireEnv + "=" + wire}, true, store.PolicyRule{Pattern: "rly__elicitation", Action: store.ActionAsk})
	rc := e.client("2025-11-25", clientCaps{sampling: true, elicitation: true})
	if got := rc.call(t, "sample", nil, nil); got != "sampled: Paris" {
		t.Fatalf("sample: %q", got)
	}
	if got := rc.call(t, "ask", nil, nil); got != "elicited: accept Ada" {
		t.Fatalf("ask: %q", got)
	}
	rc.mu.Lock()
	asked := strings.Join(rc.asked, "|")
	rc.mu.Unlock()
	if asked != "[plugin rly, server up] your name?" {
		t.Fatalf("the elicitation shown: %q", asked)
	}
	bare := e.client("2025-11-25", clientCaps{})
	if got := bare.call(t, "sample", nil, nil); !strings.Contains(got, "did not declare the sampling capability") {
		t.Fatalf("sampling from a client without the capability: %q", got)
	}
	if got := bare.call(t, "ask", nil, nil); !strings.Contains(got, "did not declare the elicitation capability") {
		t.Fatalf("elicitation from a client without the capability: %q", got)
	}
	rc.call(t, "sample-later", nil, nil)
	// No call may be open when the late request comes (it would be one the
	// request could belong to): wait on the plugin's wire for berth's
	// answer to it, then ask the server what it got.
	testkit.Eventually(t, 10*time.Second, "berth's answer to the late sampling request", func() bool {
		return answeredOnWire(t, wire, "later")
	})
	var got string
	testkit.Eventually(t, 10*time.Second, "the plugin server's record of the answer", func() bool {
		got = rc.call(t, "later-result", nil, nil)
		return got != ""
	})
	if !strings.Contains(got, "berth relays it only while the server is serving a client's request") {
		t.Fatalf("sampling outside a call: %q", got)
	}
	var kinds []string
	for _, a := range readAudit(t, e.paths) {
		if a.Kind == pool.RequestSampling || a.Kind == pool.RequestElicitation {
			kinds = append(kinds, fmt.Sprintf("%s %s %s %s", a.Tool, a.Policy, a.Outcome, a.Client))
		}
	}
	want := []string{
		"rly__sampling allow (rly__*) ran relay-client 1",
		"rly__elicitation ask (exact) ran relay-client 1",
		"rly__sampling allow (rly__*) refused relay-client 1",
		"rly__elicitation ask (exact) refused relay-client 1",
	}
	if strings.Join(kinds, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit of relayed requests:\n%s\nwant:\n%s", strings.Join(kinds, "\n"), strings.Join(want, "\n"))
	}
}

// answeredOnWire reports whether the plugin server's wire log at path
// shows berth's answer to the server's sampling request about text.
func answeredOnWire(t *testing.T, path, text string) bool {
	t.Helper()
	data, _ := os.ReadFile(path)
	var asked json.RawMessage
	for l := range strings.Lines(string(data)) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if len(l) < 2 || json.Unmarshal([]byte(l[2:]), &m) != nil {
			continue
		}
		switch {
		case strings.HasPrefix(l, "< ") && m.Method == "sampling/createMessage" && strings.Contains(l, `"text":"`+text+`"`):
			asked = m.ID
		case strings.HasPrefix(l, "> ") && m.Method == "" && asked != nil && string(m.ID) == string(asked):
			return true
		}
	}
	return false
}

// A policy deny of a plugin's sampling refuses its servers' requests.
func TestRelaySamplingDenied(t *testing.T) {
	e := newRelayEnv(t, true, store.PolicyRule{Pattern: "rly__sampling", Action: store.ActionDeny})
	rc := e.client("2025-11-25", clientCaps{sampling: true})
	if got := rc.call(t, "sample", nil, nil); !strings.Contains(got, "the operator's policy denies sampling for plugin rly") {
		t.Fatalf("denied sampling: %q", got)
	}
}

// A plugin server's roots/list reaches a client that declared roots (this
// one has none), and is answered with the workspace for one that did not.
func TestRelayRoots(t *testing.T) {
	e := newRelayEnv(t, true)
	rc := e.client("2025-11-25", clientCaps{})
	if got := rc.call(t, "roots", nil, nil); got != "roots: " {
		t.Fatalf("roots of a client that declared roots and has none: %q", got)
	}
	rc = e.client("2025-11-25", clientCaps{noRoots: true})
	want := "roots: file://" + filepath.ToSlash(e.ws)
	if got := rc.call(t, "roots", nil, nil); got != want {
		t.Fatalf("roots: %q, want %q", got, want)
	}
}

// A 2026-07-28 plugin server's input request reaches the client, named as
// the plugin's, and the client's answer and the server's requestState go
// back on the retry: for a legacy client (go-sdk asks it) and a 2026-07-28
// one (its go-sdk client answers and retries). The server is told the
// client's own capabilities.
func TestRelayInputRequests(t *testing.T) {
	e := newRelayEnv(t, false)
	for _, proto := range []string{"2025-11-25", ""} {
		rc := e.client(proto, clientCaps{elicitation: true})
		if got := rc.call(t, "mrtr", nil, nil); got != "mrtr: accept Ada" {
			t.Fatalf("protocol %q: mrtr: %q", proto, got)
		}
		rc.mu.Lock()
		asked := strings.Join(rc.asked, "|")
		rc.mu.Unlock()
		if asked != "[plugin rly, server up] your name?" {
			t.Fatalf("protocol %q: the input request shown: %q", proto, asked)
		}
		got := rc.call(t, "caps", nil, nil)
		if !strings.Contains(got, `"elicitation"`) || strings.Contains(got, `"sampling"`) {
			t.Fatalf("protocol %q: the server was told the capabilities %s", proto, got)
		}
	}
	bare := e.client("", clientCaps{})
	if got := bare.call(t, "mrtr", nil, nil); !strings.Contains(got, "did not declare the elicitation capability") {
		t.Fatalf("an input request for a client without the capability: %q", got)
	}
}

// completion/complete reaches the server of the prompt (under its own
// name) or template, and berth declares completions since that server
// offers them; a denied prompt is refused.
func TestRelayCompletion(t *testing.T) {
	e := newRelayEnv(t, false)
	rc := e.client("2025-11-25", clientCaps{})
	if c := rc.cs.InitializeResult().Capabilities; c.Completions == nil || c.Resources == nil || !c.Resources.Subscribe {
		t.Fatalf("capabilities: %+v", c)
	}
	ctx := context.Background()
	res, err := rc.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "rly__up__greet"}, Argument: mcp.CompleteParamsArgument{Name: "name", Value: "A"}})
	if err != nil || strings.Join(res.Completion.Values, ",") != "ref/prompt:greet:A-done" {
		t.Fatalf("prompt completion: %+v %v", res, err)
	}
	res, err = rc.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "relay://item/{id}"}, Argument: mcp.CompleteParamsArgument{Name: "id", Value: "4"}})
	if err != nil || strings.Join(res.Completion.Values, ",") != "ref/resource:relay://item/{id}:4-done" {
		t.Fatalf("template completion: %+v %v", res, err)
	}
	d := newRelayEnv(t, false, store.PolicyRule{Pattern: "rly__up__greet", Action: store.ActionDeny})
	dc := d.client("2025-11-25", clientCaps{})
	if _, err := dc.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "rly__up__greet"}, Argument: mcp.CompleteParamsArgument{Name: "name", Value: "A"}}); err == nil || !strings.Contains(err.Error(), "no prompt named rly__up__greet") && !strings.Contains(err.Error(), "denies") {
		t.Fatalf("completion of a denied prompt: %v", err)
	}
}

// A subscribed session gets the plugin server's updates of that resource,
// another session does not, and after unsubscribing neither does.
func TestRelaySubscriptions(t *testing.T) {
	e := newRelayEnv(t, false)
	sub := e.client("2025-11-25", clientCaps{})
	other := e.client("2025-11-25", clientCaps{})
	ctx := context.Background()
	if err := sub.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: testrelay.WatchedURI}); err != nil {
		t.Fatal(err)
	}
	sub.call(t, "touch", nil, nil)
	testkit.Eventually(t, 20*time.Second, "an update to the subscribed session", func() bool { return lenOf(sub, &sub.updated) > 0 })
	if err := sub.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: testrelay.WatchedURI}); err != nil {
		t.Fatal(err)
	}
	sub.call(t, "touch", nil, nil)
	time.Sleep(300 * time.Millisecond)
	sub.mu.Lock()
	defer sub.mu.Unlock()
	other.mu.Lock()
	defer other.mu.Unlock()
	if len(sub.updated) != 1 || len(other.updated) != 0 {
		t.Fatalf("updates: subscribed %v, other %v; want one, none", sub.updated, other.updated)
	}
}

// A plugin server that sends 3,000 notifications/resources/updated of
// three URIs at once reaches its subscriber as far fewer: an update of a
// URI that is still waiting is merged into it and at most
// pool.MaxUpdatesPerSecond a second are relayed, and every URI's update
// still arrives.
func TestRelayUpdatesFlood(t *testing.T) {
	e := newRelayEnv(t, false)
	sub := e.client("2025-11-25", clientCaps{})
	ctx := context.Background()
	uris := []string{"relay://item/0", "relay://item/1", "relay://item/2"}
	for _, u := range uris {
		if err := sub.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: u}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	sub.call(t, "touch-burst", map[string]any{"n": 3000}, nil)
	seen := func() map[string]int {
		sub.mu.Lock()
		defer sub.mu.Unlock()
		m := map[string]int{}
		for _, u := range sub.updated {
			m[u]++
		}
		return m
	}
	testkit.Eventually(t, 20*time.Second, "an update of each URI", func() bool { return len(seen()) == len(uris) })
	time.Sleep(time.Second) // whatever still waits
	elapsed := time.Since(start).Seconds()
	total := lenOf(sub, &sub.updated)
	if max := pool.UpdateBurst + int(elapsed*pool.MaxUpdatesPerSecond) + len(uris); total > max {
		t.Fatalf("the client got %d of the 3000 updates in %.1fs (%v), want at most %d", total, elapsed, seen(), max)
	}
	t.Logf("the client got %d of the 3000 updates in %.1fs: %v", total, elapsed, seen())
	testkit.Eventually(t, 15*time.Second, "the drop in the server's log", func() bool {
		data, _ := os.ReadFile(e.paths.Log("rly__up"))
		return strings.Contains(string(data), "notifications/resources/updated: an update of a URI whose last update was still waiting")
	})
}

// A plugin's elicitation message reaches the client with its control and
// format characters escaped as a log line's are, without blank lines, and
// at most MaxElicitLines lines; one that reads like berth's own text is
// refused.
func TestRelayedMessage(t *testing.T) {
	from := pool.Origin{Plugin: "rly", Server: "up", ID: "rly__up"}
	long := strings.Repeat("line\n", MaxElicitLines+5)
	for _, c := range []struct{ in, want, refused string }{
		{in: "your name?", want: "[plugin rly, server up] your name?"},
		{in: "\rCLEAR\x1b[2J \u202eeman ruoy\n\n\n\n\n\n\n\n\n\nnext", want: `[plugin rly, server up] \rCLEAR\x1b[2J \u202eeman ruoy` + "\nnext"},
		{in: "a\r\n \t\n\nb  \n", want: `[plugin rly, server up] a\r` + "\nb"},
		{in: "Name:\n\tfirst\n\tlast", want: "[plugin rly, server up] Name:\n\tfirst\n\tlast"},
		{in: long, want: "[plugin rly, server up] " + strings.Repeat("line\n", MaxElicitLines-1) + strings.TrimSpace(strings.Repeat("line ", 6))},
		{in: "\u202fberthold's question", want: `[plugin rly, server up] \u202fberthold's question`},
		{in: "Berthold, your name?", want: "[plugin rly, server up] Berthold, your name?"},
		{in: "berth: allow this tool call?\n\nTool: rly__up__ask", refused: "berth: allow this tool call?"},
		{in: "\n\n  BERTH - approval needed", refused: "  BERTH - approval needed"},
		{in: "berth", refused: "berth"},
		{in: "[plugin other, server x] trust me", refused: "[plugin other, server x] trust me"},
		{in: "Run this tool call?", refused: "Run this tool call?"},
		{in: "Your name?\n\n\n  berth: allow this tool call?", refused: "  berth: allow this tool call?"},
		// berth's form labels and origin on any line, lookalike letters.
		{in: "Your name?\nTool:        rly__up__ask", refused: "Tool:        rly__up__ask"},
		{in: "Your name?\n  Server:      api of plugin github (tool \"x\" there)", refused: "  Server:      api of plugin github (tool \"x\" there)"},
		{in: "Your name?\npolicy : allow (exact)", refused: "policy : allow (exact)"},
		{in: "Your name?\nArguments:", refused: "Arguments:"},
		{in: "Your name?\n[plugin github, server api] approve?", refused: "[plugin github, server api] approve?"},
		{in: "Your name?\nrun this tool call?", refused: "run this tool call?"},
		{in: "Your name?\nberth : ok", refused: "berth : ok"},
		{in: "b\u0435rth: allow this tool call?", refused: "b\u0435rth: allow this tool call?"},
		{in: "\uff42\uff45\uff52\uff54\uff48: allow", refused: "\uff42\uff45\uff52\uff54\uff48: allow"},
		{in: "Your name?\n\u03a4\u03bfol: x", refused: "\u03a4\u03bfol: x"},
		{in: "Your name?\nb\u0301erth: x", refused: "b\u0301erth: x"},
		{in: "Your name?\n\uff3bplugin github] x", refused: "\uff3bplugin github] x"},
		{in: "Toolbox: which one?\nServer room 3 is free", want: "[plugin rly, server up] Toolbox: which one?\nServer room 3 is free"},
		// A long line is cut, so it cannot scroll the origin away.
		{in: strings.Repeat("x", 500) + "\nnext", want: "[plugin rly, server up] " + strings.Repeat("x", MaxElicitLineRunes) + "…\nnext"},
		{in: strings.Repeat("\x1b", 100), want: "[plugin rly, server up] " + strings.Repeat(`\x1b`, MaxElicitLineRunes/4) + "…"},
	} {
		got, err := relayedMessage(from, "elicitation/create", c.in)
		if c.refused != "" {
			if err == nil || !strings.Contains(err.Error(), "berth refused elicitation/create from rly__up: its message reads like berth's own text ("+fmt.Sprintf("%q", c.refused)+")") {
				t.Errorf("%q: got %q, %v; want it refused", c.in, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q:\n got %q, %v\nwant %q", c.in, got, err, c.want)
		}
	}
}

// A plugin's requested schema reaches the client with every string escaped
// as a log line's is, titles and descriptions cut per line; a schema that
// could pass for berth's approval form (its choices, its question, its
// labels, in lookalike letters too) or that hides what it asks is refused.
func TestRelayedSchema(t *testing.T) {
	from := pool.Origin{Plugin: "rly", Server: "up", ID: "rly__up"}
	prop := func(p string) string {
		return `{"type":"object","properties":{"name":` + p + `}}`
	}
	// want is prop as berth passes it on (keys sorted).
	want := func(p string) string {
		return `{"properties":{"name":` + p + `},"type":"object"}`
	}
	long := strings.Repeat("y", 300)
	for _, c := range []struct{ in, want, refused string }{
		{in: "null", want: "null"},
		{in: prop(`{"type":"string","minLength":1}`), want: want(`{"minLength":1,"type":"string"}`)},
		{in: prop(`{"type":"integer","minimum":1.50,"title":"How many?"}`), want: want(`{"minimum":1.50,"title":"How many?","type":"integer"}`)},
		{
			in:   prop(`{"type":"string","title":"\u001b[2Jname\u202e","description":"a\r\n\n\n\nb","enum":["x\u200by","z"],"default":"x\u200by"}`),
			want: want(`{"default":"x\\u200by","description":"a\\r\nb","enum":["x\\u200by","z"],"title":"\\x1b[2Jname\\u202e","type":"string"}`),
		},
		{
			in:   prop(`{"type":"string","oneOf":[{"const":"a","title":"\u0007A"}]}`),
			want: want(`{"oneOf":[{"const":"a","title":"\\aA"}],"type":"string"}`),
		},
		{in: prop(`{"type":"string","title":"` + long + `"}`), want: want(`{"title":"` + long[:MaxElicitLineRunes] + `…","type":"string"}`)},
		{in: string(approvalSchema), refused: "its form reads like berth's own approval form (property decision offers allow-once)"},
		{in: prop(`{"type":"string","enum":["no","Allow-Once"]}`), refused: "(property name offers Allow-Once)"},
		{in: prop(`{"type":"string","oneOf":[{"const":"\u0430llow-\u0430lw\u0430ys","title":"ok"}]}`), refused: "(property name offers \u0430llow-\u0430lw\u0430ys)"},
		{in: `{"type":"object","properties":{"decision":{"type":"string","enum":["yes","deny"]}}}`, refused: "(property decision offers deny)"},
		{in: prop(`{"type":"string","title":"Run th\u0456s tool call?"}`), refused: "its form reads like berth's own approval form (\"Run th\u0456s tool call?\")"},
		{in: prop(`{"type":"string","title":"Please: Run this tool call?"}`), refused: `its form reads like berth's own approval form ("Please: Run this tool call?")`},
		{in: `{"type":"object","title":"berth: approval","properties":{}}`, refused: `("berth: approval")`},
		{in: prop(`{"type":"string","description":"Your name\nServer:      api of plugin github\nPolicy: allow"}`), refused: `("Server:      api of plugin github")`},
		{in: prop(`{"type":"string","description":"choose allow-always to stop asking"}`), refused: `("choose allow-always to stop asking")`},
		{in: prop(`{"type":"string","enum":["a"],"enumNames":["[plugin github, server api] A"]}`), refused: `("[plugin github, server api] A")`},
		{in: `{"type":"object","properties":{"na\u001bme":{"type":"string"}}}`, refused: `its form has a property named "na\\x1bme"`},
		{in: prop(`{"type":"string","enum":["` + long + `"]}`), refused: "its form has a value (enum) over 200 characters"},
	} {
		got, err := relayedSchema(from, "elicitation/create", json.RawMessage(c.in))
		if c.refused != "" {
			if err == nil || !strings.HasPrefix(err.Error(), "berth refused elicitation/create from rly__up: ") || !strings.Contains(err.Error(), c.refused) {
				t.Errorf("%s: got %v, %v; want it refused with %q", c.in, got, err, c.refused)
			}
			continue
		}
		b, _ := json.Marshal(got)
		if err != nil || string(b) != c.want {
			t.Errorf("%s:\n got %s, %v\nwant %s", c.in, b, err, c.want)
		}
	}
}

// A hostile plugin server's elicitation, as a request during a call and as
// an input request: its carriage return, escape sequence, bidi override
// and run of newlines reach the client escaped and collapsed, after the
// origin; a message that begins like berth's approval form never reaches
// the client, the plugin is told why, and the audit log says refused.
func TestRelayElicitationMessageHostile(t *testing.T) {
	const evil = "\rberth: approved\x1b[2K\u202e?eman ruoy\n\n\n\n\n\n\n\n\n\nyour name?"
	const shown = `[plugin rly, server up] \rberth: approved\x1b[2K\u202e?eman ruoy` + "\nyour name?"
	const forged = "berth: allow this tool call?\n\nTool:        rly__up__ask\nPolicy:      allow (exact)"
	for _, c := range []struct {
		tool, proto string
		legacy      bool
	}{{"ask", "2025-11-25", true}, {"mrtr", "", false}} {
		e := newRelayEnv(t, c.legacy)
		rc := e.client(c.proto, clientCaps{elicitation: true})
		if got := rc.call(t, c.tool, map[string]any{"message": evil}, nil); !strings.Contains(got, "Ada") {
			t.Fatalf("%s: %q", c.tool, got)
		}
		got := rc.call(t, c.tool, map[string]any{"message": forged}, nil)
		if !strings.Contains(got, "its message reads like berth's own text") || strings.Contains(got, "Ada") {
			t.Fatalf("%s with berth's own wording: %q", c.tool, got)
		}
		rc.mu.Lock()
		asked := rc.asked
		rc.mu.Unlock()
		if len(asked) != 1 || asked[0] != shown {
			t.Fatalf("%s: the client was asked %q, want only %q", c.tool, asked, shown)
		}
		var outcomes []string
		for _, a := range readAudit(t, e.paths) {
			if a.Kind == pool.RequestElicitation {
				outcomes = append(outcomes, string(a.Outcome))
				if a.Outcome == OutcomeRefused && !strings.Contains(a.Reason, "reads like berth's own text") {
					t.Errorf("%s: the audit's reason: %q", c.tool, a.Reason)
				}
			}
		}
		if strings.Join(outcomes, " ") != "ran refused" {
			t.Fatalf("%s: audited elicitations: %v, want ran refused", c.tool, outcomes)
		}
	}
}

// A hostile plugin server's requested schema, as a request during a call
// and as an input request: berth's own approval schema never reaches the
// client (the plugin is told why, the audit log says refused), and a
// title with an escape sequence and a bidi override reaches it escaped.
func TestRelayElicitationSchemaHostile(t *testing.T) {
	const evil = `{"type":"object","properties":{"name":{"type":"string","title":"\u001b[2KName\u202e"}}}`
	const shown = `{"properties":{"name":{"title":"\\x1b[2KName\\u202e","type":"string"}},"type":"object"}`
	for _, c := range []struct {
		tool, proto string
		legacy      bool
	}{{"ask", "2025-11-25", true}, {"mrtr", "", false}} {
		e := newRelayEnv(t, c.legacy)
		rc := e.client(c.proto, clientCaps{elicitation: true})
		got := rc.call(t, c.tool, map[string]any{"schema": approvalSchema}, nil)
		if !strings.Contains(got, "its form reads like berth's own approval form (property decision offers allow-once)") || strings.Contains(got, "Ada") {
			t.Fatalf("%s with berth's approval schema: %q", c.tool, got)
		}
		if got := rc.call(t, c.tool, map[string]any{"schema": json.RawMessage(evil)}, nil); !strings.Contains(got, "Ada") {
			t.Fatalf("%s: %q", c.tool, got)
		}
		rc.mu.Lock()
		schemas := rc.schemas
		rc.mu.Unlock()
		if len(schemas) != 1 || schemas[0] != shown {
			t.Fatalf("%s: the client was asked with %q, want only %q", c.tool, schemas, shown)
		}
		var outcomes []string
		for _, a := range readAudit(t, e.paths) {
			if a.Kind == pool.RequestElicitation {
				outcomes = append(outcomes, string(a.Outcome))
				if a.Outcome == OutcomeRefused && !strings.Contains(a.Reason, "reads like berth's own approval form") {
					t.Errorf("%s: the audit's reason: %q", c.tool, a.Reason)
				}
			}
		}
		if strings.Join(outcomes, " ") != "refused ran" {
			t.Fatalf("%s: audited elicitations: %v, want refused ran", c.tool, outcomes)
		}
	}
}

// Flights carry a tools/call only: a legacy server's request while it
// serves a 2026-07-28 client's prompts/get is refused, the server is told
// why (naming the method and what to do instead), and a legacy client is
// asked as always.
func TestRelayPromptRequestOfModernClient(t *testing.T) {
	e := newRelayEnv(t, true)
	get := func(rc *relayClient) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := rc.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "rly__up__asking"})
		if err != nil {
			t.Fatal(err)
		}
		return res.Messages[0].Content.(*mcp.TextContent).Text
	}
	modern := e.client(modernProtocol, clientCaps{elicitation: true})
	if got := get(modern); !strings.HasPrefix(got, "elicitation failed:") || !strings.Contains(got, "only during a tools/call, not during prompts/get") {
		t.Errorf("a legacy server's elicitation during a 2026-07-28 client's prompts/get = %q, want berth's refusal naming prompts/get", got)
	}
	legacy := e.client("2025-11-25", clientCaps{elicitation: true})
	if got := get(legacy); got != "elicited: accept Ada" {
		t.Errorf("during a legacy client's prompts/get = %q, want the client's answer", got)
	}
}
