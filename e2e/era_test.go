//lint:file-ignore SA1019 the test exercises the SEP-2577 features (roots, sampling, logging) on purpose

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/peers"
	"github.com/berth-mcp/berth/internal/testrelay"
)

// eraClient is a go-sdk client of berth serve that answers sampling
// ("Paris"), elicitation (accept, name "Ada") and roots (one root of its
// own), and records progress (by token) and log messages.
type eraClient struct {
	cs       *mcp.ClientSession
	modern   bool
	mu       sync.Mutex
	progress map[string][]float64
	logs     []string // logger
	logData  []string // data, of string data
}

const eraClientRoot = "file:///era-client-root"

// eraClients are the ways a client reaches berth serve in the matrix:
// its era, the listener flags of berth serve ("" is stdio) and the
// transport.
var eraClients = []struct {
	name   string
	legacy bool
	flags  []string
}{
	{"legacy-stdio", true, nil},
	{"legacy-http", true, []string{"--http", "127.0.0.1:0"}},
	{"legacy-sse", true, []string{"--sse", "127.0.0.1:0"}},
	{"modern-stdio", false, nil},
	{"modern-stateless", false, []string{"--http", "127.0.0.1:0", "--stateless"}},
}

// TestEraMatrix: every era of plugin server with every era and transport
// of client (docs/relay.md §"The protocol berth speaks to plugin
// servers"). A legacy server (2025-11-25 and older only) asks with
// requests during the call (sampling/createMessage, elicitation/create,
// roots/list); a 2026-07-28 server asks with input requests, elicitation
// over two rounds. Each reaches the client, as requests (legacy client) or
// input requests (2026-07-28 client, whose go-sdk answers them and
// retries), and the tool gets the client's answers; progress and log
// messages of the server reach the client too. roots/list reaches the
// client, which declared roots, in every cell (docs/relay.md §Roots);
// TestEraRootsUndeclared has berth's workspace answer for a client that
// did not declare them.
func TestEraMatrix(t *testing.T) {
	for _, server := range []string{"legacy-server", "modern-server"} {
		for _, cl := range eraClients {
			t.Run(server+"/"+cl.name, func(t *testing.T) {
				legacyServer := server == "legacy-server"
				w := newWorld(t)
				w.linkRelay(t)
				var args []string
				if legacyServer {
					args = []string{testrelay.LegacyFlag}
				}
				w.plugin("rly", "up", testrelay.Name, args...)
				w.policy("rly__*", "allow")
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				ec := w.eraConnect(ctx, t, cl.legacy, cl.flags, false)

				type step struct {
					tool string
					args map[string]any
					want string
				}
				var steps []step
				if legacyServer {
					steps = []step{
						{"sample", nil, "sampled: Paris"},
						{"ask", nil, "elicited: accept Ada"},
						{"roots", nil, "roots: " + eraClientRoot},
					}
				} else {
					roots := eraClientRoot
					steps = []step{
						{"input", map[string]any{"kind": "sample"}, "input: Paris"},
						{"input", map[string]any{"kind": "elicit", "rounds": 2}, "input: accept Ada | accept Ada"},
						{"input", map[string]any{"kind": "roots"}, "input: " + roots},
					}
					if cl.legacy {
						// A server of both eras that asks with the legacy
						// API (ss.CreateMessage, ss.Elicit): berth speaks
						// the legacy client's era to it.
						steps = append(steps, step{"sample", nil, "sampled: Paris"}, step{"ask", nil, "elicited: accept Ada"})
					}
				}
				for _, s := range steps {
					if got := ec.call(ctx, t, s.tool, s.args, nil); got != s.want {
						t.Errorf("%s %v = %q, want %q", s.tool, s.args, got, s.want)
					}
				}
				if got := ec.call(ctx, t, "progress", map[string]any{"n": 3}, "tok"); !strings.HasPrefix(got, "token berth-") {
					t.Errorf("progress = %q", got)
				}
				ec.call(ctx, t, "log", nil, nil)
				if legacyServer {
					// Two rounds of requests, with progress and log
					// messages before, between and after them: a
					// 2026-07-28 client gets each in the request that
					// waits on the call when the server sends it (the
					// first, or a retry of the flight).
					if got := ec.call(ctx, t, "ask-twice", nil, "rounds"); got != "elicited twice: accept Ada | accept Ada" {
						t.Errorf("ask-twice = %q", got)
					}
				}
				deadline := time.Now().Add(10 * time.Second)
				for {
					ec.mu.Lock()
					progress, rounds, logs, data := slices.Clone(ec.progress["tok"]), slices.Clone(ec.progress["rounds"]), slices.Clone(ec.logs), slices.Clone(ec.logData)
					ec.mu.Unlock()
					roundLogs := slices.DeleteFunc(data, func(d string) bool { return !strings.HasPrefix(d, "round ") })
					full := len(progress) >= 3 && len(logs) >= 3
					if legacyServer {
						full = full && len(rounds) >= 3 && len(roundLogs) >= 3
					}
					if full || time.Now().After(deadline) {
						if !slices.Equal(progress, []float64{1, 2, 3}) {
							t.Errorf("progress relayed = %v, want 1, 2, 3", progress)
						}
						if !slices.ContainsFunc(logs, func(l string) bool { return strings.HasPrefix(l, "rly__up/") }) {
							t.Errorf("log messages relayed under loggers %q, want rly__up/…", logs)
						}
						if legacyServer && !slices.Equal(rounds, []float64{1, 2, 3}) {
							t.Errorf("progress of a call over two rounds of requests = %v, want 1, 2, 3 (before, between and after the rounds)", rounds)
						}
						if legacyServer && !slices.Equal(roundLogs, []string{"round 1", "round 2", "round 3"}) {
							t.Errorf("log messages of a call over two rounds of requests = %q, want round 1, 2, 3", roundLogs)
						}
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
			})
		}
	}
}

// A plugin server's sampling and elicitation during a call reach a legacy
// Streamable HTTP client on the stream of the call (its POST's), as MCP
// asks, not on the session's standalone GET stream: a client that has not
// opened one (under load, it opens it a moment after initialize, which
// lost the conformance suite's elicitations now and then, docs/
// conformance.md) still gets them.
func TestEraRequestsOnTheCallsStream(t *testing.T) {
	for _, server := range []string{"legacy-server", "modern-server"} {
		t.Run(server, func(t *testing.T) {
			w := newWorld(t)
			w.linkRelay(t)
			var args []string
			tools := [][2]string{{"sample", ""}, {"ask", ""}}
			want := []string{"sampled: Paris", "elicited: accept Ada"}
			if server == "legacy-server" {
				args = []string{testrelay.LegacyFlag}
			} else {
				tools = [][2]string{{"input", "sample"}, {"input", "elicit"}}
				want = []string{"input: Paris", "input: accept Ada"}
			}
			w.plugin("rly", "up", testrelay.Name, args...)
			w.policy("rly__*", "allow")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			ec := w.eraConnect(ctx, t, true, []string{"--http", "127.0.0.1:0"}, true)
			for i, tl := range tools {
				var a map[string]any
				if tl[1] != "" {
					a = map[string]any{"kind": tl[1]}
				}
				if got := ec.call(ctx, t, tl[0], a, nil); got != want[i] {
					t.Errorf("%s %v = %q, want %q", tl[0], a, got, want[i])
				}
			}
		})
	}
}

// A client that did not declare roots is not asked for them: berth
// answers a plugin server's roots/list with the workspace (a legacy
// server's request, or a 2026-07-28 server's input request that go-sdk
// turns into one on a legacy connection); a 2026-07-28 server's input
// request to a 2026-07-28 client goes back refused, as any input request
// the client cannot answer.
func TestEraRootsUndeclared(t *testing.T) {
	for _, server := range []string{"legacy-server", "modern-server"} {
		for _, cl := range []struct {
			name   string
			legacy bool
		}{{"legacy-stdio", true}, {"modern-stdio", false}} {
			t.Run(server+"/"+cl.name, func(t *testing.T) {
				w := newWorld(t)
				w.linkRelay(t)
				tool, args, prefix := "input", map[string]any{"kind": "roots"}, "input: "
				var sargs []string
				if server == "legacy-server" {
					sargs = []string{testrelay.LegacyFlag}
					tool, args, prefix = "roots", nil, "roots: "
				}
				w.plugin("rly", "up", testrelay.Name, sargs...)
				w.policy("rly__*", "allow")
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				ec := w.eraConnect(ctx, t, cl.legacy, nil, false, func(o *mcp.ClientOptions) {
					o.Capabilities = &mcp.ClientCapabilities{}
				})
				want := prefix + (&url.URL{Scheme: "file", Path: w.wsAbs(t)}).String()
				if server == "modern-server" && !cl.legacy {
					// The input request is the client's own to answer, and
					// it cannot: berth refuses it (relay_input.go).
					want = `(tool error) berth did not pass on what rly__up__input asked for: the server asked for the client's roots ("r0"), and the client did not declare the roots capability`
				}
				if got := ec.call(ctx, t, tool, args, nil); got != want {
					t.Errorf("%s = %q, want the workspace %q", tool, got, want)
				}
			})
		}
	}
}

// A mixed serve (`--sse` beside `--http --stateless`) speaks 2026-07-28
// to plugin servers that speak it, for its 2026-07-28 clients: a server of
// both eras that asks with the legacy API (ss.CreateMessage) cannot ask its
// legacy client during the call, and the call says why (go-sdk's refusal,
// docs/relay.md names the cell); the same server's input requests, and a
// legacy-only server's requests, reach the legacy client.
func TestEraMixedServe(t *testing.T) {
	w := newWorld(t)
	w.linkRelay(t)
	w.plugin("rly", "up", testrelay.Name)
	w.policy("rly__*", "allow")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ec := w.eraConnect(ctx, t, true, []string{"--sse", "127.0.0.1:0", "--http", "127.0.0.1:0", "--stateless"}, false)
	if got := ec.call(ctx, t, "input", map[string]any{"kind": "sample"}, nil); got != "input: Paris" {
		t.Errorf("input sample = %q, want the client's answer", got)
	}
	got := ec.call(ctx, t, "sample", nil, nil)
	if !strings.HasPrefix(got, "sampling failed:") || !strings.Contains(got, "cannot be sent while serving a request on protocol version 2026-07-28") {
		t.Errorf("sample (legacy API) in a mixed serve = %q, want go-sdk's refusal naming the era", got)
	}
}

// wsAbs is the workspace's absolute, symlink-resolved path.
func (w *world) wsAbs(t *testing.T) string {
	p, err := filepath.EvalSymlinks(w.ws)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// eraConnect starts berth serve with flags (none: stdio) and connects a
// client of the era asked.
// noGET: a Streamable HTTP client that opens no standalone GET stream.
func (w *world) eraConnect(ctx context.Context, t *testing.T, legacy bool, flags []string, noGET bool, tune ...func(*mcp.ClientOptions)) *eraClient {
	t.Helper()
	ec := &eraClient{modern: !legacy, progress: map[string][]float64{}}
	o := &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "Paris"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			ec.mu.Lock()
			tok := fmt.Sprint(r.Params.ProgressToken)
			ec.progress[tok] = append(ec.progress[tok], r.Params.Progress)
			ec.mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			ec.mu.Lock()
			ec.logs = append(ec.logs, r.Params.Logger)
			if d, ok := r.Params.Data.(string); ok {
				ec.logData = append(ec.logData, d)
			}
			ec.mu.Unlock()
		},
	}
	for _, f := range tune {
		f(o)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "era-client", Version: "1"}, o)
	c.AddRoots(&mcp.Root{URI: eraClientRoot, Name: "client root"})
	var opts *mcp.ClientSessionOptions
	if legacy {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	}
	var tr mcp.Transport
	switch {
	case len(flags) == 0:
		cmd := exec.Command(w.berthPath(), "serve", "--workspace", w.ws, "--approval-timeout", "5s")
		cmd.Env = w.env()
		cmd.Stderr = newLineLog()
		cmd.SysProcAttr = dieWithParent()
		tr = &mcp.CommandTransport{Command: cmd}
	case flags[0] == "--sse":
		n := 1
		if slices.Contains(flags, "--http") {
			n = 2 // a mixed serve: the client takes the SSE listener
		}
		s := w.serve(n, append(flags, "--approval-timeout", "5s")...)
		i := slices.IndexFunc(s.urls, func(u string) bool { return strings.HasSuffix(u, "/sse") })
		if i < 0 {
			t.Fatalf("no SSE listener among %v", s.urls)
		}
		tr = &mcp.SSEClientTransport{Endpoint: s.urls[i], HTTPClient: s.httpClient()}
	default:
		s := w.serve(1, append(flags, "--approval-timeout", "5s")...)
		tr = &mcp.StreamableClientTransport{Endpoint: s.urls[0], HTTPClient: s.httpClient(), DisableStandaloneSSE: noGET}
	}
	cs, err := c.Connect(ctx, tr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; (got < "2026-07-28") != legacy {
		t.Fatalf("the client negotiated %s, want legacy=%v", got, legacy)
	}
	if legacy {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatal(err)
		}
	}
	ec.cs = cs
	return ec
}

// call calls rly__up__TOOL and returns its text; a 2026-07-28 client asks
// for log messages at debug in the request's _meta.
func (ec *eraClient) call(ctx context.Context, t *testing.T, tool string, args map[string]any, token any) string {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	p := &mcp.CallToolParams{Name: "rly__up__" + tool, Arguments: args}
	if ec.modern {
		p.Meta = mcp.Meta{mcp.MetaKeyLogLevel: "debug"}
	}
	if token != nil {
		p.SetProgressToken(token)
	}
	res, err := ec.cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return fmt.Sprintf("(tool error) %s", b.String())
	}
	return b.String()
}

// A legacy server's request parked for a 2026-07-28 client is answered
// only by the retry that carries berth's requestState, once, for the same
// tool and arguments, with an answer of the right kind; anything else is
// refused and the parked request fails (the server is told), never
// answered with something the client did not give.
func TestEraParkedRequestsFailClosed(t *testing.T) {
	w := newWorld(t)
	w.linkRelay(t)
	w.plugin("rly", "up", testrelay.Name, testrelay.LegacyFlag)
	w.policy("rly__*", "allow")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := w.serve(1, "--http", "127.0.0.1:0", "--stateless", "--approval-timeout", "5s")
	c := mcp.NewClient(&mcp.Implementation{Name: "era-raw", Version: "1"}, &mcp.ClientOptions{
		// The test answers (or not) itself.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.urls[0], HTTPClient: s.httpClient()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	first := func(args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "rly__up__ask", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.InputRequests) != 1 || !strings.HasPrefix(res.RequestState, "berth-relay.") {
			t.Fatalf("first round: %+v, want one input request and berth's requestState", res)
		}
		for _, ir := range res.InputRequests {
			if p, ok := ir.(*mcp.ElicitParams); !ok || !strings.HasPrefix(p.Message, "[plugin rly, server up] ") {
				t.Fatalf("the parked elicitation as an input request: %#v", ir)
			}
		}
		return res
	}
	retry := func(args map[string]any, state string, responses mcp.InputResponseMap) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "rly__up__ask", Arguments: args, RequestState: state, InputResponses: responses})
		if err != nil {
			return "error: " + err.Error()
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	accept := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}
	answer := func(res *mcp.CallToolResult, v mcp.InputResponse) mcp.InputResponseMap {
		m := mcp.InputResponseMap{}
		for k := range res.InputRequests {
			m[k] = v
		}
		return m
	}

	// The right answer: the server gets it, and the state is spent.
	r1 := first(map[string]any{})
	if got := retry(map[string]any{}, r1.RequestState, answer(r1, accept)); got != "elicited: accept Ada" {
		t.Fatalf("the retry with the answer = %q", got)
	}
	if got := retry(map[string]any{}, r1.RequestState, answer(r1, accept)); !strings.Contains(got, "berth refused the retry") {
		t.Errorf("a state used twice = %q, want refused", got)
	}
	// Other arguments than the call's: refused, and the call stays parked
	// for its own retry.
	a := map[string]any{"message": "one"}
	r := first(a)
	if got := retry(map[string]any{"message": "two"}, r.RequestState, answer(r, accept)); !strings.Contains(got, "berth refused the retry") {
		t.Errorf("a retry with other arguments = %q, want refused", got)
	}
	// A forged state: refused.
	if got := retry(a, "berth-relay.forged.x", answer(r, accept)); !strings.Contains(got, "berth refused the retry") {
		t.Errorf("a forged state = %q, want refused", got)
	}
	// An answer of the wrong kind: refused, and the call ends (its
	// server's request fails).
	if got := retry(a, r.RequestState, answer(r, &mcp.ListRootsResult{Roots: []*mcp.Root{}})); !strings.Contains(got, "did not answer berth's input requests") {
		t.Errorf("a retry with a wrong answer = %q, want refused", got)
	}
	// Nothing stays parked: the next call asks again.
	r3 := first(a)
	if got := retry(a, r3.RequestState, answer(r3, accept)); got != "elicited: accept Ada" {
		t.Errorf("a call after the refused ones = %q", got)
	}
}

// tsStdioEraClient is a TypeScript SDK client (legacy protocol only, as
// Claude Desktop's) that starts berth serve over stdio and calls the relay
// server's sample, ask and roots tools, answering sampling and
// elicitation, printing each result.
const tsStdioEraClient = `
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [berth, ws, env] = process.argv.slice(1);
const client = new Client({ name: 'berth-ts-era-test', version: '1.0.0' }, { capabilities: { sampling: {}, elicitation: { form: {} } } });
client.setRequestHandler(CreateMessageRequestSchema, async () => ({ role: 'assistant', model: 'test-model', content: { type: 'text', text: 'Paris' }, stopReason: 'endTurn' }));
client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada' } }));
const transport = new StdioClientTransport({ command: berth, args: ['serve', '--workspace', ws, '--approval-timeout', '5s'], env: JSON.parse(env), stderr: 'ignore' });
await client.connect(transport);
const text = (r) => (r.content || []).map(c => c.text || '').join('\n');
const out = {};
for (const tool of ['sample', 'ask']) {
  out[tool] = text(await client.callTool({ name: 'rly__up__' + tool, arguments: {} }));
}
console.log(JSON.stringify(out));
await client.close();
`

// The headline cell with a real client: the TypeScript SDK's (legacy,
// over stdio, as Claude Desktop speaks) reaches a go-sdk v1.8 server that
// supports 2026-07-28 and asks with the legacy API during a call
// (ss.CreateMessage, ss.Elicit): berth speaks the client's era to it, so
// the requests reach the client and the tool gets the answers.
func TestEraTypeScriptStdioClient(t *testing.T) {
	peers.Require(t)
	if _, err := peers.Node22(); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t)
	w.linkRelay(t)
	w.plugin("rly", "up", testrelay.Name)
	w.policy("rly__*", "allow")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := map[string]string{}
	for _, kv := range w.env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	envJSON, _ := json.Marshal(env)
	cmd := peers.Command(ctx, t, "node", "--input-type=module", "-e", tsStdioEraClient, w.berthPath(), w.ws, string(envJSON))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("TypeScript client: %v\n%s", err, stderr.String())
	}
	var out map[string]string
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("TypeScript client printed %q: %v", stdout.String(), err)
	}
	if out["sample"] != "sampled: Paris" || out["ask"] != "elicited: accept Ada" {
		t.Errorf("through berth serve over stdio: %q", out)
	}
}

// linkRelay puts the relay test server (this test binary under the name
// testrelay.Name, TestMain runs it) on w's PATH.
func (w *world) linkRelay(t *testing.T) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, filepath.Join(w.bin, testrelay.Name)); err != nil {
		t.Fatal(err)
	}
}
