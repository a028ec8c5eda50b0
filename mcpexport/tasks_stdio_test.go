package mcpexport

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/berth-mcp/berth/internal/stdioframe"
	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// taskServerName is the program name under which the test binary serves
// the tasks fixture (internal/testkit/taskserver).
const taskServerName = "berth-taskserver"

// rawStdio is a raw JSON-RPC client of one stdio session of berth serve
// (serveOne over a pair of pipes): what a 2026-07-28 client with the
// tasks extension sends, which go-sdk's client cannot.
type rawStdio struct {
	t   *testing.T
	w   io.Writer
	seq int

	mu    sync.Mutex
	resp  map[string]chan map[string]any
	notes []map[string]any
}

func (e *env) rawStdioClient(t *testing.T) *rawStdio {
	t.Helper()
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.srv.serveOne(ctx, &stdioframe.Transport{Reader: c2sR, Writer: s2cW})
	}()
	t.Cleanup(func() { c2sW.Close(); cancel(); s2cR.Close(); <-done })
	r := &rawStdio{t: t, w: c2sW, resp: map[string]chan map[string]any{}}
	go func() {
		sc := bufio.NewScanner(s2cR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			r.mu.Lock()
			if id, ok := m["id"]; ok && m["method"] == nil {
				if ch := r.resp[fmt.Sprint(id)]; ch != nil {
					ch <- m
				}
			} else {
				r.notes = append(r.notes, m)
			}
			r.mu.Unlock()
		}
	}()
	return r
}

// meta is a 2026-07-28 request's _meta; tasks declares the extension.
func stdioMeta(tasks bool) map[string]any {
	caps := map[string]any{}
	if tasks {
		caps["extensions"] = map[string]any{pool.TasksExtension: map[string]any{}}
	}
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    modernProtocol,
		"io.modelcontextprotocol/clientCapabilities": caps,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
	}
}

// call sends one request and returns its response.
func (r *rawStdio) call(method string, params map[string]any) map[string]any {
	r.t.Helper()
	r.mu.Lock()
	r.seq++
	id := r.seq
	ch := make(chan map[string]any, 1)
	r.resp[fmt.Sprint(id)] = ch
	r.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := r.w.Write(append(b, '\n')); err != nil {
		r.t.Fatal(err)
	}
	select {
	case m := <-ch:
		return m
	case <-time.After(30 * time.Second):
		r.t.Fatalf("no answer to %s", method)
		return nil
	}
}

// statusNotes are the notifications/tasks/status the client has read.
func (r *rawStdio) statusNotes() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, n := range r.notes {
		if n["method"] == "notifications/tasks/status" {
			out = append(out, n["params"].(map[string]any))
		}
	}
	return out
}

func rpcCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	if e == nil {
		return 0
	}
	c, _ := e["code"].(float64)
	return int(c)
}

func taskEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	h := newPluginHome(t, "", "conf", taskServerName, "tasks test plugin", []store.PolicyRule{{Pattern: "conf__*", Action: store.ActionAllow}})
	e := h.env(t, nil)
	p := e.pool
	if err := p.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

// startStdioTask calls slow_compute as a task-augmented call and returns
// berth's task ID.
func (r *rawStdio) startTask(seconds int) string {
	r.t.Helper()
	m := r.call("tools/call", map[string]any{"name": "conf__up__slow_compute", "arguments": map[string]any{"seconds": seconds, "label": "x"}, "_meta": stdioMeta(true)})
	res, _ := m["result"].(map[string]any)
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || !strings.HasPrefix(id, "berth-") {
		r.t.Fatalf("a task-augmented call over stdio answered %v, want a CreateTaskResult with berth's task ID", m)
	}
	return id
}

func (r *rawStdio) task(method, id string, declare bool) map[string]any {
	r.t.Helper()
	return r.call(method, map[string]any{"taskId": id, "_meta": stdioMeta(declare)})
}

// TestTasksOverStdio: over stdio (Claude Desktop's path) a 2026-07-28
// client is told of the tasks extension, its task-augmented call gets a
// CreateTaskResult with berth's task ID, and tasks/get, tasks/update and
// tasks/cancel reach the task for that session alone: another session, or
// an ID berth did not give, gets -32602; a request without the extension
// -32021. The task's status notifications reach the session that created
// it, with berth's task ID, and no other session.
func TestTasksOverStdio(t *testing.T) {
	e := taskEnv(t)
	a, b := e.rawStdioClient(t), e.rawStdioClient(t)

	d := a.call("server/discover", map[string]any{"_meta": stdioMeta(true)})
	res, _ := d["result"].(map[string]any)
	caps, _ := res["capabilities"].(map[string]any)
	ext, _ := caps["extensions"].(map[string]any)
	if _, ok := ext[pool.TasksExtension]; !ok {
		t.Fatalf("server/discover over stdio does not advertise %s: %v", pool.TasksExtension, d)
	}

	id := a.startTask(1)
	if c := rpcCode(b.task("tasks/get", id, true)); c != pool.CodeInvalidParams {
		t.Fatalf("another session's tasks/get: code %d, want -32602", c)
	}
	if c := rpcCode(b.task("tasks/cancel", id, true)); c != pool.CodeInvalidParams {
		t.Fatalf("another session's tasks/cancel: code %d, want -32602", c)
	}
	if c := rpcCode(a.task("tasks/get", "berth-nope", true)); c != pool.CodeInvalidParams {
		t.Fatalf("an unknown task: code %d, want -32602", c)
	}
	if c := rpcCode(a.task("tasks/get", id, false)); c != pool.CodeMissingRequiredCapability {
		t.Fatalf("tasks/get without the extension: code %d, want -32021", c)
	}
	g := a.task("tasks/get", id, true)
	gr, _ := g["result"].(map[string]any)
	if gr["taskId"] != id || (gr["status"] != "working" && gr["status"] != "completed") {
		t.Fatalf("tasks/get of the session's task: %v", g)
	}
	testkit.Eventually(t, 20*time.Second, "the task's completed status notification", func() bool {
		for _, n := range a.statusNotes() {
			if n["taskId"] == id && n["status"] == "completed" {
				return true
			}
		}
		return false
	})
	for _, n := range a.statusNotes() {
		if n["taskId"] != id {
			t.Fatalf("a status notification names task %v, not berth's ID %s", n["taskId"], id)
		}
	}
	// b's own task: once b has its completed notification, any of a's
	// that reached b would have been written before it.
	own := b.startTask(1)
	testkit.Eventually(t, 20*time.Second, "the other session's own completed status notification", func() bool {
		for _, n := range b.statusNotes() {
			if n["taskId"] == own && n["status"] == "completed" {
				return true
			}
		}
		return false
	})
	for _, n := range b.statusNotes() {
		if n["taskId"] != own {
			t.Fatalf("another session received a status notification of a task not its own: %v", n)
		}
	}

	long := a.startTask(60)
	if c := rpcCode(a.task("tasks/cancel", long, true)); c != 0 {
		t.Fatalf("tasks/cancel of the session's task failed: code %d", c)
	}
	testkit.Eventually(t, 20*time.Second, "the cancelled task reported cancelled", func() bool {
		r, _ := a.task("tasks/get", long, true)["result"].(map[string]any)
		return r["status"] == "cancelled"
	})
	for _, n := range b.statusNotes() {
		if n["taskId"] != own {
			t.Fatalf("another session received a status notification of a task not its own: %v", n)
		}
	}
}

// TestTasksOverStdioTwinKeys: the stdio front reads a task request's
// params as strictly as the stateless front does (parseTaskParams): a key
// that differs from taskId only in case is refused (-32602), so that
// what berth checks and what the plugin server is asked about are one
// task.
func TestTasksOverStdioTwinKeys(t *testing.T) {
	e := taskEnv(t)
	a := e.rawStdioClient(t)
	id := a.startTask(60)
	m := a.call("tasks/get", map[string]any{"taskId": id, "taskid": "berth-other", "_meta": stdioMeta(true)})
	if c := rpcCode(m); c != pool.CodeInvalidParams || !strings.Contains(fmt.Sprint(m["error"]), "ambiguous keys") {
		t.Fatalf("tasks/get with a case-fold twin of taskId over stdio: %v, want -32602 naming the ambiguous keys", m)
	}
	if c := rpcCode(a.task("tasks/cancel", id, true)); c != 0 {
		t.Fatalf("tasks/cancel: code %d", c)
	}
}

// TestTasksStatusTraced: with telemetry on, each notifications/tasks/status
// berth writes to a stdio client is a CLIENT span (the conventions' span
// of a notification the server initiates), named for the method, with the
// client's transport.
func TestTasksStatusTraced(t *testing.T) {
	ctx := context.Background()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	h := newPluginHome(t, "", "conf", taskServerName, "tasks test plugin", []store.PolicyRule{{Pattern: "conf__*", Action: store.ActionAllow}})
	e := h.env(t, &Options{TracerProvider: tp})
	if err := e.pool.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	a := e.rawStdioClient(t)
	id := a.startTask(1)
	testkit.Eventually(t, 20*time.Second, "the task's completed status notification", func() bool {
		for _, n := range a.statusNotes() {
			if n["taskId"] == id && n["status"] == "completed" {
				return true
			}
		}
		return false
	})
	testkit.Eventually(t, 5*time.Second, "a notifications/tasks/status span", func() bool {
		for _, sp := range rec.Ended() {
			if sp.Name() == "notifications/tasks/status" && sp.SpanKind() == trace.SpanKindClient {
				got := map[string]string{}
				for _, kv := range sp.Attributes() {
					got[string(kv.Key)] = kv.Value.AsString()
				}
				return got["mcp.method.name"] == "notifications/tasks/status" && got["network.transport"] == "pipe" && got["berth.transport"] == "stdio"
			}
		}
		return false
	})
}
