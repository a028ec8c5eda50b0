// Package taskserver is a plugin server over stdio that implements the
// fixtures of the tasks extension (io.modelcontextprotocol/tasks, SEP-2663)
// as the 2026-07-28 conformance suite (conformance-next 0.2.0-alpha.12)
// calls them: greet (sync only), slow_compute, failing_job,
// protocol_error_job, confirm_delete, multi_input (task-supporting) and
// test_tool_with_task (task required, after an input request round).
//
// go-sdk v1.8.0 has no tasks support, so the server is go-sdk's for
// everything else (initialize, server/discover, tools/list, the sync path
// of every tool) and the task surface is served below it: a wrapper of the
// stdio connection answers a task-augmented tools/call with a
// CreateTaskResult, and tasks/get, tasks/update and tasks/cancel, before
// go-sdk sees them. It sends notifications/tasks/status at each change of
// a task's status.
package taskserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Extension is the tasks extension's identifier.
const Extension = "io.modelcontextprotocol/tasks"

const (
	codeInvalidParams      = -32602
	codeInternal           = -32603
	codeMissingCapability  = -32021
	ttlMs                  = 10 * 60 * 1000
	pollIntervalMs         = 100
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
)

// support is how a tool supports tasks.
type support int

const (
	syncOnly support = iota
	optional
	required
)

var tools = map[string]support{
	"greet":               syncOnly,
	"slow_compute":        optional,
	"failing_job":         required,
	"protocol_error_job":  optional,
	"confirm_delete":      optional,
	"multi_input":         optional,
	"test_tool_with_task": required,
}

// Main runs the server on stdin/stdout until the client goes. With
// -always-task it misbehaves: it makes a task of every call to a
// task-supporting tool, whether or not the request declared the extension.
func Main(args []string) int {
	s := New()
	s.alwaysTask = len(args) > 0 && (args[0] == "-always-task" || args[0] == "-always-task-escaped" || args[0] == "-always-task-twin")
	s.escaped = len(args) > 0 && args[0] == "-always-task-escaped"
	s.twin = len(args) > 0 && args[0] == "-always-task-twin"
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "taskserver:", err)
		return 1
	}
	return 0
}

// Server is the fixture: go-sdk's server and the task engine below it.
type Server struct {
	sdk        *mcp.Server
	alwaysTask bool
	escaped    bool // attack24: "task" written as "\u0074ask"
	onCancel   func()
	twin       bool // attack25: a "ResultType":"complete" twin after "resultType":"task"

	mu    sync.Mutex
	tasks map[string]*task
	conn  mcp.Connection
}

// New returns the fixture server.
func New() *Server {
	s := &Server{tasks: map[string]*task{}}
	s.sdk = mcp.NewServer(&mcp.Implementation{Name: "berth-taskserver", Version: "1.0.0"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Extensions: map[string]any{Extension: map[string]any{}}},
	})
	obj := func(props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":{` + props + `}}`)
	}
	s.sdk.AddTool(&mcp.Tool{Name: "greet", Description: "Says hello (sync only).", InputSchema: obj(`"name":{"type":"string"}`)}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct{ Name string }
		_ = json.Unmarshal(req.Params.Arguments, &a)
		return text(fmt.Sprintf("Hello, %s!", a.Name)), nil
	})
	s.sdk.AddTool(&mcp.Tool{Name: "slow_compute", Description: "Sleeps `seconds` seconds, then answers (task-supporting).", InputSchema: obj(`"seconds":{"type":"number"},"label":{"type":"string"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a computeArgs
		_ = json.Unmarshal(req.Params.Arguments, &a)
		select {
		case <-time.After(a.duration()):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return text(a.done()), nil
	})
	s.sdk.AddTool(&mcp.Tool{Name: "protocol_error_job", Description: "Fails with a protocol error (task-supporting).", InputSchema: obj("")}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: codeInternal, Message: "protocol_error_job: internal failure"}
	})
	for _, name := range []string{"failing_job", "test_tool_with_task"} {
		// Task support required: the sync path is never taken (Read
		// refuses the call first); listed for tools/list.
		s.sdk.AddTool(&mcp.Tool{Name: name, Description: "Task support required.", InputSchema: obj("")}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, missingCapability()
		})
	}
	s.sdk.AddTool(&mcp.Tool{Name: "confirm_delete", Description: "Asks to confirm, then deletes nothing (task-supporting).", InputSchema: obj(`"filename":{"type":"string"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("confirm_delete needs the tasks extension to ask"), nil
	})
	s.sdk.AddTool(&mcp.Tool{Name: "multi_input", Description: "Asks two questions at once (task-supporting).", InputSchema: obj("")}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("multi_input needs the tasks extension to ask"), nil
	})
	return s
}

// Run serves one connection.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.sdk.Run(ctx, &transport{Transport: t, s: s})
}

type computeArgs struct {
	Seconds float64 `json:"seconds"`
	Label   string  `json:"label"`
}

func (a computeArgs) duration() time.Duration {
	return time.Duration(a.Seconds * float64(time.Second))
}

func (a computeArgs) done() string {
	return fmt.Sprintf("computed %s after %gs", a.Label, a.Seconds)
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func missingCapability() *jsonrpc.Error {
	return &jsonrpc.Error{Code: codeMissingCapability, Message: "this request needs the client capability " + Extension,
		Data: json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + Extension + `":{}}}}`)}
}

type transport struct {
	mcp.Transport
	s *Server
}

func (t *transport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.s.mu.Lock()
	t.s.conn = c
	t.s.mu.Unlock()
	return &connection{Connection: c, s: t.s}, nil
}

// connection answers the task surface itself; go-sdk reads the rest.
type connection struct {
	mcp.Connection
	s *Server
}

func (c *connection) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return nil, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			return msg, nil
		}
		res, handled := c.s.handle(req)
		if !handled {
			return msg, nil
		}
		if err := c.Connection.Write(ctx, res); err != nil {
			return nil, err
		}
	}
}

// params is what the task surface reads of a request's params.
type params struct {
	Name           string                     `json:"name"`
	Arguments      json.RawMessage            `json:"arguments"`
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	RequestState   string                     `json:"requestState"`
	Meta           map[string]json.RawMessage `json:"_meta"`
}

// negotiated reports whether the request declares the tasks extension.
func (p *params) negotiated() bool {
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(p.Meta[metaClientCapabilities], &caps) != nil {
		return false
	}
	_, ok := caps.Extensions[Extension]
	return ok
}

func reply(id jsonrpc.ID, result any, err *jsonrpc.Error) *jsonrpc.Response {
	if err != nil {
		return &jsonrpc.Response{ID: id, Error: err}
	}
	b, merr := json.Marshal(result)
	if merr != nil {
		return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: codeInternal, Message: merr.Error()}}
	}
	return &jsonrpc.Response{ID: id, Result: b}
}

// handle answers a request of the task surface (handled), or leaves it to
// go-sdk.
func (s *Server) handle(req *jsonrpc.Request) (*jsonrpc.Response, bool) {
	var p params
	switch req.Method {
	case "tools/call", "tasks/get", "tasks/update", "tasks/cancel":
		if json.Unmarshal(req.Params, &p) != nil {
			return nil, false
		}
	default:
		return nil, false
	}
	if req.Method != "tools/call" {
		if !p.negotiated() {
			return reply(req.ID, nil, missingCapability()), true
		}
		t := s.task(p.TaskID)
		if t == nil {
			return reply(req.ID, nil, &jsonrpc.Error{Code: codeInvalidParams, Message: fmt.Sprintf("unknown task %q", p.TaskID)}), true
		}
		switch req.Method {
		case "tasks/get":
			return reply(req.ID, t.detailed(), nil), true
		case "tasks/update":
			t.update(p.InputResponses)
		case "tasks/cancel":
			t.cancel()
		}
		return reply(req.ID, map[string]string{"resultType": "complete"}, nil), true
	}
	sup, known := tools[p.Name]
	if !known || sup == syncOnly {
		return nil, false
	}
	if !p.negotiated() && !s.alwaysTask {
		if sup == required {
			return reply(req.ID, nil, missingCapability()), true
		}
		return nil, false
	}
	var run func(*task)
	switch p.Name {
	case "slow_compute":
		var a computeArgs
		_ = json.Unmarshal(p.Arguments, &a)
		if a.Label == "late" {
			// attack24: the CreateTaskResult comes after the caller gave up.
			time.Sleep(700 * time.Millisecond)
		}
		run = func(t *task) {
			select {
			case <-time.After(a.duration()):
				t.finish(text(a.done()), nil)
			case <-t.ctx.Done():
			}
		}
	case "failing_job":
		run = func(t *task) {
			select {
			case <-time.After(500 * time.Millisecond):
				t.finish(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "failing_job failed, as it always does"}}}, nil)
			case <-t.ctx.Done():
			}
		}
	case "protocol_error_job":
		run = func(t *task) {
			t.finish(nil, &jsonrpc.Error{Code: codeInternal, Message: "protocol_error_job: internal failure"})
		}
	case "confirm_delete":
		var a struct{ Filename string }
		_ = json.Unmarshal(p.Arguments, &a)
		run = func(t *task) {
			ans := t.ask(map[string]any{"confirm": elicit(fmt.Sprintf("Delete %s?", a.Filename), `"confirm":{"type":"boolean"}`, "confirm")})
			if ans == nil {
				return
			}
			t.finish(text(fmt.Sprintf("confirm_delete %s: %s", a.Filename, ans["confirm"])), nil)
		}
	case "multi_input":
		run = func(t *task) {
			ans := t.ask(map[string]any{
				"first":  elicit("First name?", `"name":{"type":"string"}`, "name"),
				"second": elicit("Second name?", `"name":{"type":"string"}`, "name"),
			})
			if ans == nil {
				return
			}
			t.finish(text(fmt.Sprintf("multi_input: %s, %s", ans["first"], ans["second"])), nil)
		}
	case "test_tool_with_task":
		raw, ok := p.InputResponses["user_name"]
		if !ok {
			// Round 1: an input request (SEP-2322), no task yet.
			return reply(req.ID, map[string]any{
				"resultType":    "input_required",
				"inputRequests": map[string]any{"user_name": elicit("What is your name?", `"name":{"type":"string"}`, "name")},
				"requestState":  "round-1",
			}, nil), true
		}
		var ans struct {
			Action  string `json:"action"`
			Content struct {
				Name string `json:"name"`
			} `json:"content"`
		}
		_ = json.Unmarshal(raw, &ans)
		run = func(t *task) { t.finish(text(fmt.Sprintf("Hello, %s!", ans.Content.Name)), nil) }
	}
	t := s.create()
	go run(t)
	r := reply(req.ID, t.created(), nil)
	if s.escaped && r.Error == nil {
		r.Result = bytes.ReplaceAll(r.Result, []byte(`"task"`), []byte(`"\u0074ask"`))
	}
	if s.twin && r.Error == nil {
		if i := bytes.LastIndexByte(r.Result, '}'); i > 0 {
			r.Result = append(append([]byte{}, r.Result[:i]...), []byte(`,"ResultType":"complete"}`)...)
		}
	}
	return r, true
}

func elicit(message, props, req string) map[string]any {
	return map[string]any{"method": "elicitation/create", "params": map[string]any{
		"mode":            "form",
		"message":         message,
		"requestedSchema": json.RawMessage(`{"type":"object","properties":{` + props + `},"required":["` + req + `"]}`),
	}}
}

func (s *Server) task(id string) *task {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tasks[id]
}

func (s *Server) create() *task {
	ctx, cancel := context.WithCancel(context.Background())
	now := time.Now().UTC()
	t := &task{s: s, id: "task-" + strings.ToLower(rand.Text()[:16]), ctx: ctx, stop: cancel, status: "working", createdAt: now, updatedAt: now}
	s.mu.Lock()
	s.tasks[t.id] = t
	s.mu.Unlock()
	return t
}

// notify sends notifications/tasks/status for t (fields: its status).
func (s *Server) notify(fields map[string]any) {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c == nil {
		return
	}
	b, err := json.Marshal(fields)
	if err == nil {
		_ = c.Write(context.Background(), &jsonrpc.Request{Method: "notifications/tasks/status", Params: b})
	}
}

type task struct {
	s    *Server
	id   string
	ctx  context.Context
	stop context.CancelFunc

	mu                   sync.Mutex
	status               string
	createdAt, updatedAt time.Time
	result               *mcp.CallToolResult
	err                  *jsonrpc.Error
	asked                map[string]any // pending input requests
	answers              map[string]string
	answered             chan struct{}
}

func (t *task) base() map[string]any {
	return map[string]any{
		"taskId":         t.id,
		"status":         t.status,
		"createdAt":      t.createdAt.Format(time.RFC3339Nano),
		"lastUpdatedAt":  t.updatedAt.Format(time.RFC3339Nano),
		"ttlMs":          ttlMs,
		"pollIntervalMs": pollIntervalMs,
	}
}

func (t *task) created() map[string]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.base()
	m["resultType"] = "task"
	return m
}

func (t *task) detailed() map[string]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.base()
	m["resultType"] = "complete"
	switch {
	case t.result != nil:
		m["result"] = t.result
	case t.err != nil:
		m["error"] = t.err
	case len(t.asked) > 0:
		m["inputRequests"] = t.asked
	}
	return m
}

// setStatus changes the status under mu and says so.
func (t *task) setStatusLocked(status string) map[string]any {
	t.status, t.updatedAt = status, time.Now().UTC()
	n := t.base()
	if t.result != nil {
		n["result"] = t.result
	}
	if t.err != nil {
		n["error"] = t.err
	}
	return n
}

func terminal(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}

func (t *task) finish(res *mcp.CallToolResult, err *jsonrpc.Error) {
	t.mu.Lock()
	if terminal(t.status) {
		t.mu.Unlock()
		return
	}
	t.asked = nil
	t.result, t.err = res, err
	status := "completed"
	if err != nil {
		status = "failed"
	}
	n := t.setStatusLocked(status)
	t.mu.Unlock()
	t.stop()
	t.s.notify(n)
}

func (t *task) cancel() {
	t.mu.Lock()
	if terminal(t.status) {
		t.mu.Unlock()
		return
	}
	t.asked = nil
	n := t.setStatusLocked("cancelled")
	t.mu.Unlock()
	t.stop()
	fmt.Fprintf(os.Stderr, "taskserver: task %s cancelled\n", t.id)
	if t.s.onCancel != nil {
		t.s.onCancel()
	}
	t.s.notify(n)
}

// ask parks the task in input_required until every request is answered
// (tasks/update); nil when the task ended first.
func (t *task) ask(reqs map[string]any) map[string]string {
	t.mu.Lock()
	t.asked, t.answers, t.answered = reqs, map[string]string{}, make(chan struct{})
	done := t.answered
	n := t.setStatusLocked("input_required")
	t.mu.Unlock()
	t.s.notify(n)
	select {
	case <-done:
	case <-t.ctx.Done():
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.answers
}

// update takes the answers to the pending input requests; unknown keys
// are ignored.
func (t *task) update(responses map[string]json.RawMessage) {
	t.mu.Lock()
	if t.status != "input_required" {
		t.mu.Unlock()
		return
	}
	for k, v := range responses {
		if _, ok := t.asked[k]; !ok {
			continue
		}
		var r struct {
			Action  string                     `json:"action"`
			Content map[string]json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(v, &r)
		var parts []string
		for _, c := range r.Content {
			parts = append(parts, strings.Trim(string(c), `"`))
		}
		t.answers[k] = strings.Join(parts, " ")
		delete(t.asked, k)
	}
	var n map[string]any
	if len(t.asked) == 0 {
		n = t.setStatusLocked("working")
		close(t.answered)
	}
	t.mu.Unlock()
	if n != nil {
		t.s.notify(n)
	}
}
