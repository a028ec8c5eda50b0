// Package testrelay is the plugin server of the relay tests: a test binary
// runs it under the name berth-relay-upstream over stdio. Its tools send
// what berth relays (progress, log messages, sampling, elicitation, roots,
// input requests), some of it the way a hostile server would.
//
//lint:file-ignore SA1019 the relay tests exercise the SEP-2577 features (roots, sampling, logging) on purpose
package testrelay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Name is the program name under which a test binary serves Main.
const Name = "berth-relay-upstream"

// LegacyFlag, as an argument, makes Main a legacy server: it speaks the
// protocol versions before 2026-07-28 only (2025-11-25 and older).
const LegacyFlag = "-legacy"

// WatchedURI is the resource that supports subscriptions.
const WatchedURI = "relay://watched"

// SpanID is the span ID of the server's own span, as an instrumented
// server names it in the W3C trace context (traceparent) of the sampling
// request of its tool sample: a child of the traceparent its call came
// with, when it came with one.
const SpanID = "00f067aa0ba902b7"

// childTrace is the _meta of a request the server sends while serving a
// request whose _meta is m: the traceparent of m with SpanID as the
// span, when m has a well-formed one; nil otherwise.
func childTrace(m mcp.Meta) mcp.Meta {
	tp, _ := m["traceparent"].(string)
	if len(tp) != 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' {
		return nil
	}
	return mcp.Meta{"traceparent": tp[:36] + SpanID + tp[52:]}
}

type nArgs struct {
	N int `json:"n"`
}

// askArgs are the arguments of ask and mrtr: the message to ask with
// ("your name?" when empty) and the schema.
type askArgs struct {
	Message string `json:"message,omitempty"`
	// Schema is the requested schema to ask with (a string property
	// "name" when empty).
	Schema map[string]any `json:"schema,omitempty"`
}

func (a askArgs) schema() any {
	if a.Schema == nil {
		return map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}
	}
	return a.Schema
}

func (a askArgs) message() string {
	if a.Message == "" {
		return "your name?"
	}
	return a.Message
}

var (
	cancelled atomic.Int32
	later     atomic.Value // string: what the late sampling request got
	level     atomic.Value // string: the last logging/setLevel
	// subscribed counts the subscriptions to relay://watched berth holds
	// (subscribe minus unsubscribe).
	subscribed atomic.Int32
)

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// Main serves the relay tools over stdio until stdin closes:
//
//   - progress {n}: n progress notifications 1..n of n, under the
//     request's token, plus ones berth must drop: a repeated value, and a
//     token of its own guess;
//   - flood: 1000 progress notifications at once;
//   - log: log messages at debug, info and error (logger "lg\x1b[31m"), one
//     with 100 KB of data;
//   - sample, ask {message, schema}, roots: sampling/createMessage,
//     elicitation/create and roots/list during the call (legacy sessions
//     only); sample's request carries a child of its call's traceparent
//     (SpanID), as an instrumented server's would;
//   - meta: the params._meta of its request, as JSON;
//   - ask-twice: elicits twice during the call, and sends a progress
//     (1, 2, 3 of 3, under the request's token, if it has one) and a log
//     message at info ("round 1", "round 2", "round 3") before the first
//     elicitation, between them and after the second: what reaches a
//     2026-07-28 client through berth's flight in every round;
//   - mrtr {message, schema}: asks for a name with an input request (2026-07-28),
//     answers with it on the retry;
//   - input {kind, rounds}: asks with an input request of kind (elicit,
//     sample or roots: 2026-07-28) in each of rounds rounds, and answers
//     with what each round got ("input: Ada | Ada");
//   - caps: the client capabilities the server was told;
//   - block: waits until the call is cancelled; cancelled reports how many
//     were;
//   - touch: notifies an update of relay://watched;
//   - touch-burst {n}: n updates of relay://item/0, 1 and 2 in turn, at
//     once;
//   - level: the logging level berth last set (logging/setLevel), which
//     it sends asynchronously: the event a test waits for;
//   - subscribed: how many subscriptions to relay://watched berth holds
//     on this server (subscribe minus unsubscribe).
//
// A prompt greet {name} and a template relay://item/{id} complete their
// arguments; relay://watched can be subscribed to. The prompt asking
// elicits while it is got (legacy sessions only), and says what it got.
func Main() {
	var versions []string
	if slices.Contains(os.Args[1:], LegacyFlag) {
		for _, v := range mcp.SupportedProtocolVersions() {
			if v < "2026-07-28" {
				versions = append(versions, v)
			}
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "relay-upstream", Version: "1"}, &mcp.ServerOptions{
		SupportedProtocolVersions: versions,
		CompletionHandler: func(_ context.Context, r *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{r.Params.Ref.Type + ":" + r.Params.Ref.Name + r.Params.Ref.URI + ":" + r.Params.Argument.Value + "-done"}}}, nil
		},
		SubscribeHandler: func(_ context.Context, r *mcp.SubscribeRequest) error {
			if r.Params.URI == WatchedURI {
				subscribed.Add(1)
			}
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, r *mcp.UnsubscribeRequest) error {
			if r.Params.URI == WatchedURI {
				subscribed.Add(-1)
			}
			return nil
		},
	})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && method == "logging/setLevel" && err == nil {
				level.Store(string(p.Level))
			}
			return res, err
		}
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "greet someone", Arguments: []*mcp.PromptArgument{{Name: "name"}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi " + r.Params.Arguments["name"]}}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "asking", Description: "elicit while getting the prompt"},
		func(ctx context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			res, err := r.Session.Elicit(ctx, &mcp.ElicitParams{Message: "your name?", RequestedSchema: askArgs{}.schema()})
			got := ""
			if err != nil {
				got = "elicitation failed: " + err.Error()
			} else {
				got = fmt.Sprintf("elicited: %s %v", res.Action, res.Content["name"])
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: got}}}}, nil
		})
	read := func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "content of " + r.Params.URI}}}, nil
	}
	s.AddResource(&mcp.Resource{URI: WatchedURI, Name: "watched"}, read)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "relay://item/{id}", Name: "item"}, read)

	mcp.AddTool(s, &mcp.Tool{Name: "progress", Description: "send progress"}, func(ctx context.Context, r *mcp.CallToolRequest, a nArgs) (*mcp.CallToolResult, any, error) {
		tok := r.Params.GetProgressToken()
		if tok == nil {
			return text("no progress token"), nil, nil
		}
		total := float64(a.N)
		for i := 1; i <= a.N; i++ {
			_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: total, Message: fmt.Sprintf("step %d", i)})
			if i == 1 {
				// Not increasing: dropped.
				_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: total, Message: "again"})
				// A token of its own guess: dropped.
				_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "berth-00000000000000000000000000000000", Progress: 99, Message: "forged"})
				_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "client-token", Progress: 98, Message: "forged"})
			}
		}
		return text(fmt.Sprintf("token %v", tok)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "flood", Description: "flood progress"}, func(ctx context.Context, r *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		tok := r.Params.GetProgressToken()
		for i := 1; i <= 1000; i++ {
			_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Message: strings.Repeat("x", 5000)})
		}
		return text("flooded"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "log-flood", Description: "flood log messages"}, func(ctx context.Context, r *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		for i := range 1000 {
			_ = r.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "error", Logger: "flood", Data: i})
		}
		return text("flooded"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "foreign-progress", Description: "progress under tokens that are not this call's"}, func(ctx context.Context, r *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		for i, tok := range []any{"client-token", "berth-00000000000000000000000000000000", 7} {
			_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i + 1)})
		}
		return text("sent"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "log", Description: "log"}, func(ctx context.Context, r *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		for _, lv := range []mcp.LoggingLevel{"debug", "info", "error"} {
			_ = r.Session.Log(ctx, &mcp.LoggingMessageParams{Level: lv, Logger: "lg\x1b[31m", Data: "message at " + string(lv)})
		}
		_ = r.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "error", Logger: "big", Data: strings.Repeat("y", 100<<10)})
		return text("logged"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sample", Description: "sample"}, func(ctx context.Context, r *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		res, err := r.Session.CreateMessage(ctx, &mcp.CreateMessageParams{Meta: childTrace(r.Params.Meta), MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "capital of France?"}}}})
		if err != nil {
			return text("sampling failed: " + err.Error()), nil, nil
		}
		t, _ := res.Content.(*mcp.TextContent)
		if t == nil {
			return text("sampled: (no text)"), nil, nil
		}
		return text("sampled: " + t.Text), nil, nil
	})
	s.AddTool(&mcp.Tool{Name: "meta", Description: "the params._meta of its request, as JSON", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			b, _ := json.Marshal(r.Params.Meta)
			return text(string(b)), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "elicit"}, func(ctx context.Context, r *mcp.CallToolRequest, a askArgs) (*mcp.CallToolResult, any, error) {
		res, err := r.Session.Elicit(ctx, &mcp.ElicitParams{Message: a.message(), RequestedSchema: a.schema()})
		if err != nil {
			return text("elicitation failed: " + err.Error()), nil, nil
		}
		return text(fmt.Sprintf("elicited: %s %v", res.Action, res.Content["name"])), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ask-twice", Description: "elicit twice, with progress and logs around"}, func(ctx context.Context, r *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		tok := r.Params.GetProgressToken()
		note := func(i int) {
			if tok != nil {
				_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3, Message: fmt.Sprintf("round %d", i)})
			}
			_ = r.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "rounds", Data: fmt.Sprintf("round %d", i)})
		}
		var got []string
		for i := 1; i <= 2; i++ {
			note(i)
			res, err := r.Session.Elicit(ctx, &mcp.ElicitParams{Message: fmt.Sprintf("your name (round %d)?", i), RequestedSchema: askArgs{}.schema()})
			if err != nil {
				return text("elicitation failed: " + err.Error()), nil, nil
			}
			got = append(got, fmt.Sprintf("%s %v", res.Action, res.Content["name"]))
		}
		note(3)
		return text("elicited twice: " + strings.Join(got, " | ")), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "roots", Description: "list roots"}, func(ctx context.Context, r *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		res, err := r.Session.ListRoots(ctx, nil)
		if err != nil {
			return text("roots failed: " + err.Error()), nil, nil
		}
		var uris []string
		for _, rt := range res.Roots {
			uris = append(uris, rt.URI)
		}
		return text("roots: " + strings.Join(uris, " ")), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "mrtr", Description: "ask with an input request"}, func(ctx context.Context, r *mcp.CallToolRequest, a askArgs) (*mcp.CallToolResult, any, error) {
		if res, ok := r.Params.InputResponses["name"].(*mcp.ElicitResult); ok {
			if r.Params.RequestState != "state-1" {
				return nil, nil, fmt.Errorf("tampered state %q", r.Params.RequestState)
			}
			return text(fmt.Sprintf("mrtr: %s %v", res.Action, res.Content["name"])), nil, nil
		}
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: a.message(), RequestedSchema: a.schema()}},
			RequestState:  "state-1",
		}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "input", Description: "ask with input requests over several rounds"}, func(ctx context.Context, r *mcp.CallToolRequest, a inputArgs) (*mcp.CallToolResult, any, error) {
		return inputRound(r, a)
	})
	mcp.AddTool(s, &mcp.Tool{Name: "caps", Description: "client capabilities"}, func(ctx context.Context, r *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		b, _ := json.Marshal(r.ClientCapabilities())
		return text(string(b)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "block", Description: "wait until cancelled"}, func(ctx context.Context, r *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		<-ctx.Done()
		cancelled.Add(1)
		return nil, nil, ctx.Err()
	})
	mcp.AddTool(s, &mcp.Tool{Name: "cancelled", Description: "how many calls were cancelled", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		return text(fmt.Sprint(cancelled.Load())), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sample-later", Description: "sample after the call returned"}, func(_ context.Context, r *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		ss := r.Session
		go func() {
			time.Sleep(300 * time.Millisecond)
			_, err := ss.CreateMessage(context.Background(), &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "later"}}}})
			later.Store(fmt.Sprint(err))
		}()
		return text("scheduled"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "later-result", Description: "what the late sampling got", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		v, _ := later.Load().(string)
		return text(v), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "touch", Description: "update relay://watched"}, func(ctx context.Context, r *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		_ = s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: WatchedURI})
		return text("touched"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "touch-burst", Description: "update relay://item/0, 1 and 2, n times in turn"}, func(ctx context.Context, r *mcp.CallToolRequest, a nArgs) (*mcp.CallToolResult, any, error) {
		for i := range a.N {
			_ = s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: fmt.Sprintf("relay://item/%d", i%3)})
		}
		return text("touched"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "level", Description: "the logging level berth set", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		v, _ := level.Load().(string)
		return text(v), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "subscribed", Description: "how many subscriptions to relay://watched berth holds", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		return text(fmt.Sprint(subscribed.Load())), nil, nil
	})
	var t mcp.Transport = &mcp.StdioTransport{}
	if path := os.Getenv(WireEnv); path != "" {
		t = wireTransport(path)
	}
	_ = s.Run(context.Background(), t)
}

// WireEnv names a file to which Main, when it is set, appends every
// message it reads ("> " and the line) and writes ("< " and the line),
// each when the whole line was read or before it is written: the golden
// transcripts' plugin side.
const WireEnv = "BERTH_TEST_RELAY_WIRE"

func wireTransport(path string) mcp.Transport {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	w := &wireLog{f: f}
	return &mcp.IOTransport{
		Reader: &wireReader{ReadCloser: os.Stdin, log: w},
		Writer: &wireWriter{WriteCloser: os.Stdout, log: w},
	}
}

// wireLog writes whole lines, one at a time, in the order they come.
type wireLog struct {
	mu sync.Mutex
	f  *os.File
}

// lines logs each complete line of *buf with prefix and keeps the rest.
func (l *wireLog) lines(prefix string, buf *[]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		i := bytes.IndexByte(*buf, '\n')
		if i < 0 {
			return
		}
		l.f.Write(append([]byte(prefix), (*buf)[:i+1]...))
		*buf = (*buf)[i+1:]
	}
}

type wireReader struct {
	io.ReadCloser
	log     *wireLog
	partial []byte
}

func (r *wireReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.partial = append(r.partial, p[:n]...)
	r.log.lines("> ", &r.partial)
	return n, err
}

type wireWriter struct {
	io.WriteCloser
	log     *wireLog
	partial []byte
}

func (w *wireWriter) Write(p []byte) (int, error) {
	w.partial = append(w.partial, p...)
	w.log.lines("< ", &w.partial)
	return w.WriteCloser.Write(p)
}

// inputArgs are the arguments of input.
type inputArgs struct {
	Kind   string `json:"kind"`
	Rounds int    `json:"rounds,omitempty"`
}

// inputRound is one round of the tool input: the requestState names the
// round and carries the answers so far.
func inputRound(r *mcp.CallToolRequest, a inputArgs) (*mcp.CallToolResult, any, error) {
	rounds := max(a.Rounds, 1)
	var got []string
	round := 0
	if st := r.Params.RequestState; st != "" {
		if err := json.Unmarshal([]byte(st), &got); err != nil {
			return nil, nil, fmt.Errorf("tampered state %q", st)
		}
		round = len(got)
		key := fmt.Sprintf("r%d", round)
		switch res := r.Params.InputResponses[key].(type) {
		case *mcp.ElicitResult:
			got = append(got, fmt.Sprintf("%s %v", res.Action, res.Content["name"]))
		case *mcp.CreateMessageWithToolsResult:
			var b strings.Builder
			for _, c := range res.Content {
				if t, ok := c.(*mcp.TextContent); ok {
					b.WriteString(t.Text)
				}
			}
			got = append(got, b.String())
		case *mcp.ListRootsResult:
			var uris []string
			for _, rt := range res.Roots {
				uris = append(uris, rt.URI)
			}
			got = append(got, strings.Join(uris, " "))
		default:
			return nil, nil, fmt.Errorf("round %d: no answer to %s (%T)", round, key, res)
		}
		round++
	}
	if round >= rounds {
		return text("input: " + strings.Join(got, " | ")), nil, nil
	}
	var ir mcp.InputRequest
	switch a.Kind {
	case "elicit":
		ir = &mcp.ElicitParams{Message: fmt.Sprintf("your name (round %d)?", round+1), RequestedSchema: askArgs{}.schema()}
	case "sample":
		ir = &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "capital of France?"}}}}
	case "roots":
		ir = &mcp.ListRootsParams{}
	default:
		return nil, nil, fmt.Errorf("unknown kind %q", a.Kind)
	}
	if got == nil {
		got = []string{}
	}
	st, _ := json.Marshal(got)
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{fmt.Sprintf("r%d", round): ir}, RequestState: string(st)}, nil, nil
}
