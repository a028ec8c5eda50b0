package pool

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/store"
)

// Tasks (the 2026-07-28 extension io.modelcontextprotocol/tasks, SEP-2663)
// on the plugin side. go-sdk v1.8.0 has no tasks support: its client
// drops the fields of a CreateTaskResult and has no way to send tasks/get,
// tasks/update or tasks/cancel. berth handles them on the wire of a stdio
// plugin server (wire.go: Write calls tasksOnWrite, onRead tasksOnRead),
// below go-sdk, and on the HTTP messages of a Streamable HTTP one (the
// same hooks, called from the remote guard: tasks_http.go):
//
//   - A tools/call made for a client that negotiated the extension carries
//     a *TaskCall in its context. tasksOnWrite adds the extension to the call's
//     _meta clientCapabilities (the plugin server decides, per request,
//     whether to create a task) and remembers the request's ID.
//   - onRead sees the response first: a CreateTaskResult (resultType
//     "task") is recorded in the pool's task table under a berth task ID
//     (random, 128 bits; the plugin's ID never reaches the client), handed
//     to the TaskCall, and replaced, for go-sdk, by an empty tool result.
//   - Pool.TaskRequest sends tasks/get, tasks/update and tasks/cancel on
//     the wire with IDs of berth's own ("berth-task-N", never one of
//     go-sdk's integers) and onRead takes their responses before go-sdk.
//   - notifications/tasks/status from the server update the table and go,
//     with berth's task ID, to the task's owner alone, when it has a
//     channel for them (Pool.NotifyTasks: a stdio session); go-sdk never
//     sees them.
//
// A task belongs to the owner its TaskCall named: any other owner asking
// for it gets -32602, as for a task that does not exist. When its
// connection ends (the server is stopped, disabled, revoked, or dies) its
// tasks are cancelled at the server while it can still be reached and end
// as cancelled for their clients.

// TasksExtension is the tasks extension's identifier.
const TasksExtension = "io.modelcontextprotocol/tasks"

// JSON-RPC error codes of the task surface.
const (
	CodeInvalidParams             = -32602
	CodeMissingRequiredCapability = -32021
)

// Bounds of the task table. A task over one is refused (its tools/call
// fails with why, and the task is cancelled at its server); a task kept
// is never evicted before taskKeep has passed since it ended.
const (
	// MaxTasksPerOwner is how many tasks one client (an owner) may have
	// in the table, ended ones included until they expire.
	MaxTasksPerOwner = 256
	// MaxTasks is how many all clients may have.
	MaxTasks = 1024
)

// taskKeep is how long an ended task stays in the table for tasks/get.
const taskKeep = 10 * time.Minute

// TaskCall is a tools/call from a client that negotiated the tasks
// extension: what the pool needs to make it task-augmented, and what it
// hands back when the plugin server created a task.
type TaskCall struct {
	// Owner is who may reach the task: the same Owner in TaskRequest.
	Owner string
	// Tool is the exported tool name, for the table and the docs.
	Tool string
	// DecidedBy is who allowed the call (policy, a human): the approval
	// the task runs on, bound to it and ended with it.
	DecidedBy string

	mu      sync.Mutex
	created json.RawMessage
	task    *liveTask
}

// Created is the CreateTaskResult to give the client, with berth's task
// ID, when the plugin server created a task; nil otherwise.
func (tc *TaskCall) Created() json.RawMessage {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.created
}

type taskCallKey struct{}

// WithTaskCall returns ctx carrying tc: a tools/call made with it is
// task-augmented.
func WithTaskCall(ctx context.Context, tc *TaskCall) context.Context {
	return context.WithValue(ctx, taskCallKey{}, tc)
}

func taskCallFrom(ctx context.Context) *TaskCall {
	tc, _ := ctx.Value(taskCallKey{}).(*TaskCall)
	return tc
}

// connTasks is a connection's part of the task surface.
type connTasks struct {
	mu      sync.Mutex
	expect  map[int64]*TaskCall               // task-augmented tools/call in flight, by request ID
	waiting map[string]chan *jsonrpc.Response // berth's own requests in flight
}

var rawSeq atomic.Uint64

const rawPrefix = "berth-task-"

// tasksOnWrite sees a message before it is written to the server
// (wireConn.Write): a task-augmented tools/call to a stdio server declares
// the extension to it.
func (c *conn) tasksOnWrite(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" && req.IsCall() && c.carriesTasks() {
		if tc := taskCallFrom(ctx); tc != nil {
			id, isInt := req.ID.Raw().(int64)
			if !isInt {
				return fmt.Errorf("berth could not make tools/call %v task-augmented for %s: its JSON-RPC ID is not an integer (go-sdk's client IDs are)", req.ID.Raw(), c.srv.id)
			}
			params, err := withTasksExtension(req.Params)
			if err != nil {
				return fmt.Errorf("berth could not make tools/call %v task-augmented for %s: %w", id, c.srv.id, err)
			}
			req.Params = params
			t := &c.tasks
			t.mu.Lock()
			if t.expect == nil {
				t.expect = map[int64]*TaskCall{}
			}
			t.expect[id] = tc
			t.mu.Unlock()
		}
	}
	return nil
}

// stdio reports whether c is a stdio plugin server's connection, the
// only kind whose wire berth sees (wire.go).
func (c *conn) stdio() bool { return c.proc != nil && c.wire != nil && c.srv != nil }

// foldTwin refuses an object with a key that differs from key only in
// case: Go's decoder (go-sdk's, in the plugin server) would match either.
func foldTwin(m map[string]json.RawMessage, key string) error {
	for k := range m {
		if k != key && strings.EqualFold(k, key) {
			return fmt.Errorf("ambiguous keys %q and %q", k, key)
		}
	}
	return nil
}

// withTasksExtension adds the tasks extension to the clientCapabilities
// in params._meta (go-sdk put them there).
func withTasksExtension(params json.RawMessage) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	if err := foldTwin(p, "_meta"); err != nil {
		return nil, err
	}
	var meta map[string]json.RawMessage
	if raw, ok := p["_meta"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, err
		}
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	if err := foldTwin(meta, mcp.MetaKeyClientCapabilities); err != nil {
		return nil, err
	}
	var caps map[string]json.RawMessage
	if raw, ok := meta[mcp.MetaKeyClientCapabilities]; ok && !bytes.Equal(raw, []byte("null")) {
		if err := json.Unmarshal(raw, &caps); err != nil {
			return nil, err
		}
	}
	if caps == nil {
		caps = map[string]json.RawMessage{}
	}
	if err := foldTwin(caps, "extensions"); err != nil {
		return nil, err
	}
	var ext map[string]json.RawMessage
	if raw, ok := caps["extensions"]; ok && !bytes.Equal(raw, []byte("null")) {
		if err := json.Unmarshal(raw, &ext); err != nil {
			return nil, err
		}
	}
	if ext == nil {
		ext = map[string]json.RawMessage{}
	}
	ext[TasksExtension] = json.RawMessage("{}")
	var err error
	if caps["extensions"], err = json.Marshal(ext); err != nil {
		return nil, err
	}
	if meta[mcp.MetaKeyClientCapabilities], err = json.Marshal(caps); err != nil {
		return nil, err
	}
	if p["_meta"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	return json.Marshal(p)
}

// tasksOnRead sees a message from the server before go-sdk does; true
// consumes it.
func (c *conn) tasksOnRead(msg jsonrpc.Message) bool {
	switch m := msg.(type) {
	case *jsonrpc.Response:
		t := &c.tasks
		if s, ok := m.ID.Raw().(string); ok && strings.HasPrefix(s, rawPrefix) {
			t.mu.Lock()
			ch := t.waiting[s]
			delete(t.waiting, s)
			t.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			return true // berth's own: never go-sdk's
		}
		id, ok := m.ID.Raw().(int64)
		if !ok {
			return false
		}
		// t.mu is held to the end, so that a call returning meanwhile
		// (taskCallReturned) either finds its task recorded or its
		// expect entry still there.
		t.mu.Lock()
		defer t.mu.Unlock()
		tc := t.expect[id]
		delete(t.expect, id)
		if tc == nil && m.Error == nil && c.carriesTasks() && mayBeTask(m.Result) {
			// Not asked for a task, or its caller has gone (it cannot
			// be told of the task): refused and cancelled.
			c.refuseUnaskedTask(m)
		}
		if tc != nil && m.Error == nil {
			created, upstream, lt, err := c.taskCreated(tc, m.Result)
			switch {
			case err != nil:
				// The table is full for this owner or for all: the task
				// is refused and cancelled, rather than an ended task the
				// docs promise to keep evicted.
				c.srv.out.event("refused a task of %s: %v", tc.Tool, err)
				m.Result, m.Error = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
				c.cancelUpstream(upstream)
			case created != nil:
				tc.mu.Lock()
				tc.created, tc.task = created, lt
				tc.mu.Unlock()
				m.Result = json.RawMessage(`{"content":[]}`)
			}
		}
		return false
	case *jsonrpc.Request:
		if m.IsCall() || (m.Method != "notifications/tasks/status" && m.Method != "notifications/tasks") {
			return false
		}
		var n struct {
			TaskID string `json:"taskId"`
			Status string `json:"status"`
		}
		if json.Unmarshal(m.Params, &n) == nil && c.carriesTasks() && n.TaskID != "" {
			c.srv.p.tasks.noteStatus(c, n.TaskID, n.Status, m.Method, m.Params)
		}
		return true
	}
	return false
}

// taskResult reports whether a tool result go-sdk decoded is a
// CreateTaskResult: go-sdk keeps the resultType (unexported) and writes it
// back when the result is encoded. The resultType alone decides, whatever
// content the result also carries (a server may add some to pass a task
// off as a result): a shallow copy without the content is encoded to
// look, so a large result costs no more than a small one.
func taskResult(res *mcp.CallToolResult) bool {
	if res == nil {
		return false
	}
	look := *res // copies the unexported resultType with the rest
	look.Content, look.StructuredContent, look.InputRequests, look.Meta = nil, nil, nil, nil
	b, err := json.Marshal(&look)
	if err != nil {
		return false
	}
	// go-sdk's own encoding: one resultType key, no twins to fear.
	var r struct {
		ResultType string `json:"resultType"`
	}
	return json.Unmarshal(b, &r) == nil && r.ResultType == "task"
}

// taskKeys reads a result's resultType and taskId by their exact keys, as
// go-sdk and a client read them; err when the result has a key that
// differs from one of them only in case (foldTwin: a reader that matches
// keys without case, Go's decoder among them, may take either), which
// berth refuses as malformed. anyTask reports whether any spelling of
// resultType says "task", ids the string values of every spelling of
// taskId: what to cancel when the result is refused.
func taskKeys(result json.RawMessage) (rt, id string, anyTask bool, ids []string, err error) {
	var m map[string]json.RawMessage
	if json.Unmarshal(result, &m) != nil {
		return "", "", false, nil, nil
	}
	_ = json.Unmarshal(m["resultType"], &rt)
	_ = json.Unmarshal(m["taskId"], &id)
	err = errors.Join(foldTwin(m, "resultType"), foldTwin(m, "taskId"))
	for k, v := range m {
		var s string
		if json.Unmarshal(v, &s) != nil {
			continue
		}
		switch {
		case strings.EqualFold(k, "resultType") && s == "task":
			anyTask = true
		case strings.EqualFold(k, "taskId") && s != "" && !slices.Contains(ids, s):
			ids = append(ids, s)
		}
	}
	return rt, id, anyTask, ids, err
}

// mayBeTask is the cheap test of a result for a CreateTaskResult: the
// bytes "task", or a \u escape (JSON may spell "task" with them), else
// it cannot be one.
func mayBeTask(result json.RawMessage) bool {
	return bytes.Contains(result, []byte(`"task"`)) || bytes.Contains(result, []byte(`\u`))
}

// taskCallReturned is called when the tools/call of tc on c returned
// (err its error): its expect entries go, so that a CreateTaskResult
// arriving later, which no client can be told of, is refused and
// cancelled (tasksOnRead); a task recorded for a call that then failed
// is ended.
func (c *conn) taskCallReturned(tc *TaskCall, err error) {
	if tc == nil {
		return
	}
	t := &c.tasks
	t.mu.Lock()
	for id, x := range t.expect {
		if x == tc {
			delete(t.expect, id)
		}
	}
	t.mu.Unlock()
	if err == nil {
		return
	}
	tc.mu.Lock()
	lt := tc.task
	tc.created, tc.task = nil, nil
	tc.mu.Unlock()
	if lt != nil {
		go lt.srv.endTask(lt, fmt.Sprintf("the call that created it returned without it (%v)", err))
	}
}

// refuseUnaskedTask turns a CreateTaskResult answering a request that
// did not declare the extension into an error (the client cannot follow
// the task), and cancels the task at the server. The keys are read
// exactly (taskKeys); a result with case twins of resultType or taskId is
// refused as malformed, and any task one of its spellings names is
// cancelled.
func (c *conn) refuseUnaskedTask(m *jsonrpc.Response) {
	rt, _, anyTask, ids, twin := taskKeys(m.Result)
	var msg string
	switch {
	case rt == "task" && twin != nil:
		msg = fmt.Sprintf("%s %s answered with a task a call whose client did not declare %s, in a malformed result (%v); berth refused it and cancelled the task", c.srv.noun(), c.srv.id, TasksExtension, twin)
	case rt == "task":
		msg = fmt.Sprintf("%s %s answered with a task a call whose client did not declare %s; berth refused it and cancelled the task", c.srv.noun(), c.srv.id, TasksExtension)
	case twin != nil:
		msg = fmt.Sprintf("%s %s answered a call with a malformed result (%v; a client may read either): berth refused it", c.srv.noun(), c.srv.id, twin)
		if anyTask {
			msg += " and cancelled the task it names"
		}
	default:
		return
	}
	m.Result, m.Error = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
	if rt == "task" || anyTask {
		for _, id := range ids {
			c.cancelUpstream(id)
		}
	}
}

// cancelUpstream sends tasks/cancel for the server's task upstream, in
// the background (bounded by a second): berth refused the task.
func (c *conn) cancelUpstream(upstream string) {
	if upstream == "" {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, _ = c.rawRequest(ctx, "tasks/cancel", map[string]any{"taskId": upstream})
	}()
}

// taskCreated records a CreateTaskResult and returns it with berth's task
// ID, and the task; nil when result is not one. upstream is the server's
// task ID; err says why berth refused to keep the task.
func (c *conn) taskCreated(tc *TaskCall, result json.RawMessage) (created json.RawMessage, upstream string, lt *liveTask, err error) {
	var m map[string]json.RawMessage
	if json.Unmarshal(result, &m) != nil {
		return nil, "", nil, nil
	}
	rt, upstream, anyTask, ids, twin := taskKeys(result)
	if twin != nil && (rt == "task" || anyTask) && c.carriesTasks() {
		// Refused and cancelled (the caller cancels upstream; the other
		// spellings' IDs here).
		for _, id := range ids {
			if id != upstream {
				c.cancelUpstream(id)
			}
		}
		if upstream == "" && len(ids) > 0 {
			upstream = ids[0]
		}
		return nil, upstream, nil, fmt.Errorf("%s %s made a task of %s in a malformed result (%v; a client may read either), and berth refused it", c.srv.noun(), c.srv.id, tc.Tool, twin)
	}
	var status string
	if rt != "task" || upstream == "" || !c.carriesTasks() {
		return nil, "", nil, nil
	}
	_ = json.Unmarshal(m["status"], &status)
	lt = &liveTask{id: "berth-" + rand.Text(), upstream: upstream, owner: tc.Owner, tool: tc.Tool, by: tc.DecidedBy, srv: c.srv, c: c, status: status, updated: time.Now()}
	_ = json.Unmarshal(m["createdAt"], &lt.createdAt)
	if err := c.srv.p.tasks.add(lt); err != nil {
		return nil, upstream, nil, fmt.Errorf("%s %s made a task of %s, and berth refused it: %w", c.srv.noun(), c.srv.id, tc.Tool, err)
	}
	m["taskId"], _ = json.Marshal(lt.id)
	out, err := json.Marshal(m)
	if err != nil {
		return nil, upstream, nil, err
	}
	return out, upstream, lt, nil
}

// liveTask is one task in the pool's table.
type liveTask struct {
	id, upstream, owner, tool, by string
	srv                           *server
	c                             *conn
	createdAt                     string

	// guarded by taskTable.mu
	status  string
	updated time.Time
	ended   string // why berth ended it (its server stopped); "" while the server has it
}

func taskTerminal(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}

// taskTable is the pool's tasks, by berth task ID.
type taskTable struct {
	mu     sync.Mutex
	m      map[string]*liveTask
	notify map[string]func(method string, params json.RawMessage) // by owner: where its status notifications go
}

// expired reports whether t ended more than taskKeep ago (tt.mu held).
func (t *liveTask) expired(now time.Time) bool {
	return (taskTerminal(t.status) || t.ended != "") && now.Sub(t.updated) > taskKeep
}

// add records lt, within the bounds: MaxTasksPerOwner tasks of its owner
// and MaxTasks in all, ended ones counted until taskKeep has passed (the
// docs promise tasks/get that long). Tasks past it are dropped first; a
// task over a bound is refused, never an older one evicted.
func (tt *taskTable) add(lt *liveTask) error {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.m == nil {
		tt.m = map[string]*liveTask{}
	}
	now := time.Now()
	mine := 0
	for id, t := range tt.m {
		switch {
		case t.expired(now):
			delete(tt.m, id)
		case t.owner == lt.owner:
			mine++
		}
	}
	if mine >= MaxTasksPerOwner {
		return fmt.Errorf("%s already has %d tasks, the most berth keeps for one client (ended ones count for %v after they end); cancel some with tasks/cancel or wait for them to end and expire", lt.owner, mine, taskKeep)
	}
	if len(tt.m) >= MaxTasks {
		return fmt.Errorf("berth already keeps %d tasks for all its clients, the most it keeps (ended ones count for %v after they end); cancel some with tasks/cancel or wait for them to end and expire", len(tt.m), taskKeep)
	}
	tt.m[lt.id] = lt
	return nil
}

// get returns the task id of owner, or nil; ended tasks past taskKeep are
// dropped.
func (tt *taskTable) get(owner, id string) *liveTask {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	t := tt.m[id]
	if t == nil || t.owner != owner {
		return nil
	}
	if t.expired(time.Now()) {
		delete(tt.m, id)
		return nil
	}
	return t
}

// noteStatus records a status notification of c's server for its task
// upstream, and passes it, with berth's task ID in place of the server's,
// to the one owner of the task, when that owner has a channel for it
// (Pool.NotifyTasks); no other owner is told.
func (tt *taskTable) noteStatus(c *conn, upstream, status, method string, params json.RawMessage) {
	type delivery struct {
		to     func(string, json.RawMessage)
		params json.RawMessage
	}
	var out []delivery
	tt.mu.Lock()
	for _, t := range tt.m {
		if t.c != c || t.upstream != upstream || t.ended != "" {
			continue
		}
		if status != "" {
			t.status, t.updated = status, time.Now()
		}
		to := tt.notify[t.owner]
		if to == nil {
			continue
		}
		var p map[string]json.RawMessage
		if json.Unmarshal(params, &p) != nil || p == nil {
			continue
		}
		p["taskId"], _ = json.Marshal(t.id)
		if b, err := json.Marshal(p); err == nil {
			out = append(out, delivery{to, b})
		}
	}
	tt.mu.Unlock()
	for _, d := range out {
		d.to(method, d.params)
	}
}

// NotifyTasks sends the status notifications (notifications/tasks/status)
// of owner's tasks to to, with berth's task IDs, until the returned stop
// is called. to is called on the plugin server's read loop: it must not
// block. An owner has one channel; a second replaces the first.
func (p *Pool) NotifyTasks(owner string, to func(method string, params json.RawMessage)) (stop func()) {
	tt := &p.tasks
	tt.mu.Lock()
	if tt.notify == nil {
		tt.notify = map[string]func(string, json.RawMessage){}
	}
	tt.notify[owner] = to
	tt.mu.Unlock()
	return func() {
		tt.mu.Lock()
		delete(tt.notify, owner)
		tt.mu.Unlock()
	}
}

// Tasks counts the tasks in the table that a server still runs.
func (p *Pool) Tasks() int {
	p.tasks.mu.Lock()
	defer p.tasks.mu.Unlock()
	n := 0
	for _, t := range p.tasks.m {
		if t.ended == "" && !taskTerminal(t.status) {
			n++
		}
	}
	return n
}

// endTasks ends the tasks of a connection that is going: tasks/cancel to
// the server while its process is still there (bounded by a second in
// all), then each is cancelled for its client with why.
func (s *server) endTasks(c *conn, why string) {
	tt := &s.p.tasks
	tt.mu.Lock()
	var live []*liveTask
	for _, t := range tt.m {
		if t.c == c && t.ended == "" {
			if !taskTerminal(t.status) {
				live = append(live, t)
			}
			t.ended, t.updated = why, time.Now()
		}
	}
	tt.mu.Unlock()
	if len(live) == 0 || !c.carriesTasks() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, t := range live {
		wg.Go(func() {
			_, _ = c.rawRequest(ctx, "tasks/cancel", map[string]any{"taskId": t.upstream})
		})
	}
	wg.Wait()
	s.out.event("cancelled %d task(s): %s", len(live), why)
}

// endTask ends one task of the server for why: tasks/cancel to the
// server (bounded by a second), then cancelled for its client.
func (s *server) endTask(t *liveTask, why string) {
	tt := &s.p.tasks
	tt.mu.Lock()
	if t.ended != "" {
		tt.mu.Unlock()
		return
	}
	live := !taskTerminal(t.status)
	t.ended, t.updated = why, time.Now()
	tt.mu.Unlock()
	if !live {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = t.c.rawRequest(ctx, "tasks/cancel", map[string]any{"taskId": t.upstream})
	s.out.event("cancelled a task of %s: %s", t.tool, why)
}

// rawRequest sends a request of berth's own on the wire and waits for its
// response.
func (c *conn) rawRequest(ctx context.Context, method string, params map[string]any) (json.RawMessage, error) {
	if !c.carriesTasks() {
		return nil, errors.New("tasks need a plugin server over stdio or Streamable HTTP")
	}
	meta := map[string]any{
		mcp.MetaKeyProtocolVersion:    c.protocol,
		mcp.MetaKeyClientCapabilities: map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}},
	}
	params["_meta"] = meta
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	if c.httpTasks() {
		return c.httpRawRequest(ctx, method, b) // tasks_http.go
	}
	key := fmt.Sprintf("%s%d", rawPrefix, rawSeq.Add(1))
	ch := make(chan *jsonrpc.Response, 1)
	t := &c.tasks
	t.mu.Lock()
	if t.waiting == nil {
		t.waiting = map[string]chan *jsonrpc.Response{}
	}
	t.waiting[key] = ch
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.waiting, key)
		t.mu.Unlock()
	}()
	rid, err := jsonrpc.MakeID(key)
	if err != nil {
		return nil, err
	}
	if err := c.wire.Connection.Write(ctx, &jsonrpc.Request{ID: rid, Method: method, Params: b}); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-c.ctx.Done():
		return nil, fmt.Errorf("the server's connection ended: %w", context.Cause(c.ctx))
	}
}

// unknownTask is the error for a task ID the asker may not reach.
func unknownTask(id string) error {
	return &jsonrpc.Error{Code: CodeInvalidParams, Message: fmt.Sprintf("unknown task %q", id)}
}

// TaskRequest passes tasks/get, tasks/update or tasks/cancel (method) of
// owner to the plugin server that has the task, with the server's task
// ID, and returns the result with berth's. A task of another owner, or
// none, is -32602. A task berth ended (its server stopped) is answered by
// berth: cancelled.
func (p *Pool) TaskRequest(ctx context.Context, owner, method string, params json.RawMessage) (json.RawMessage, error) {
	switch method {
	case "tasks/get", "tasks/update", "tasks/cancel":
	default:
		return nil, &jsonrpc.Error{Code: -32601, Message: fmt.Sprintf("method %q not found", method)}
	}
	var in map[string]json.RawMessage
	if err := json.Unmarshal(params, &in); err != nil {
		return nil, &jsonrpc.Error{Code: CodeInvalidParams, Message: "invalid params: " + err.Error()}
	}
	for _, k := range []string{"taskId", "inputResponses"} {
		if err := foldTwin(in, k); err != nil {
			return nil, &jsonrpc.Error{Code: CodeInvalidParams, Message: "invalid params: " + err.Error()}
		}
	}
	var id string
	if json.Unmarshal(in["taskId"], &id) != nil || id == "" {
		return nil, &jsonrpc.Error{Code: CodeInvalidParams, Message: "invalid params: taskId must be a string"}
	}
	t := p.tasks.get(owner, id)
	if t == nil {
		return nil, unknownTask(id)
	}
	// The task runs on the approval of the call that made it, which does
	// not outlive the operator's policy nor the tool's surface: a tool the
	// policy now denies, whose surface changed (withheld until accepted)
	// or that berth no longer offers has its tasks cancelled. (A revoke or
	// disable stops the server: endTasks.) When the policy cannot be read,
	// the task is not served.
	if err := p.generation(ctx); err != nil {
		return nil, fmt.Errorf("reading the policy for task %s: %w", id, err)
	}
	if pm := p.policyFor(t.srv, t.tool); pm.Action == store.ActionDeny {
		t.srv.endTask(t, fmt.Sprintf("the operator's policy now denies %s (rule %q)", t.tool, pm.Pattern))
	} else if why := p.taskToolGone(t); why != "" {
		t.srv.endTask(t, why)
	}
	p.tasks.mu.Lock()
	ended, status := t.ended, t.status
	p.tasks.mu.Unlock()
	if ended == "" && t.c.ctx.Err() != nil {
		ended = "its server's connection ended"
	}
	if ended != "" {
		switch method {
		case "tasks/cancel":
			return json.RawMessage(`{"resultType":"complete"}`), nil
		case "tasks/update":
			return nil, &jsonrpc.Error{Code: CodeInvalidParams, Message: fmt.Sprintf("task %s has ended (berth ended it: %s): the approval it ran on ended with it", id, ended)}
		}
		if !taskTerminal(status) {
			status = "cancelled"
		}
		return json.Marshal(map[string]any{"resultType": "complete", "taskId": t.id, "status": status,
			"statusMessage": "berth ended the task: " + ended, "createdAt": t.createdAt, "lastUpdatedAt": time.Now().UTC().Format(time.RFC3339Nano)})
	}
	if method == "tasks/update" && taskTerminal(status) {
		return nil, &jsonrpc.Error{Code: CodeInvalidParams, Message: fmt.Sprintf("task %s has ended (%s): the approval it ran on ended with it", id, status)}
	}
	out := map[string]any{"taskId": t.upstream}
	if method == "tasks/update" {
		out["inputResponses"] = in["inputResponses"]
	}
	cctx, cancel := context.WithTimeout(ctx, t.srv.callTime)
	defer cancel()
	res, err := t.c.rawRequest(cctx, method, out)
	if err != nil {
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			if werr.Code == CodeInvalidParams {
				// The server forgot it (its TTL): so does berth.
				return nil, unknownTask(id)
			}
			return nil, werr
		}
		return nil, fmt.Errorf("%s %s did not answer %s for task %s: %w", t.srv.noun(), t.srv.id, method, id, err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(res, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s %s answered %s with something that is not an object", t.srv.noun(), t.srv.id, method)
	}
	if _, ok := m["taskId"]; ok {
		m["taskId"], _ = json.Marshal(t.id)
	}
	var st string
	if json.Unmarshal(m["status"], &st) == nil && st != "" {
		p.tasks.mu.Lock()
		t.status, t.updated = st, time.Now()
		p.tasks.mu.Unlock()
	}
	return json.Marshal(m)
}

// taskToolGone says why berth no longer offers the tool of t as it was
// when the task was created; "" while it does.
func (p *Pool) taskToolGone(t *liveTask) string {
	idx := p.index()
	if ch, ok := idx.withheld[t.tool]; ok {
		return (&SurfaceError{Tool: t.tool, Change: ch}).Error()
	}
	if e := idx.tools[t.tool]; e == nil || e.s != t.srv {
		t.srv.mu.Lock()
		listed := t.srv.conn == t.c && (t.srv.state == StateRunning || t.srv.state == StateChanged)
		t.srv.mu.Unlock()
		if !listed || t.c.ctx.Err() != nil {
			return "" // not listing now: its connection ended (endTasks) or is changing
		}
		return fmt.Sprintf("berth no longer offers %s", t.tool)
	}
	return ""
}

// tasksEndReason says why a connection's tasks end.
func (s *server) tasksEndReason(c *conn) string {
	if sc := s.stopped(); sc != nil {
		return fmt.Sprintf("%s %s was stopped (%v)", s.noun(), s.id, sc.err)
	}
	if cause := context.Cause(c.ctx); cause != nil {
		return fmt.Sprintf("%s %s stopped (%v)", s.noun(), s.id, cause)
	}
	return fmt.Sprintf("%s %s stopped", s.noun(), s.id)
}

// TaskOrigin is the plugin server that has owner's task id, and the tool
// whose call made it; ok is false for a task owner may not reach.
func (p *Pool) TaskOrigin(owner, id string) (from Origin, tool string, ok bool) {
	t := p.tasks.get(owner, id)
	if t == nil {
		return Origin{}, "", false
	}
	return Origin{Plugin: t.srv.pl.name, Server: t.srv.name, ID: t.srv.id}, t.tool, true
}

// EndTask ends owner's task id for why, as endTasks does: tasks/cancel to
// the server, and cancelled, with why, for its owner.
func (p *Pool) EndTask(owner, id, why string) {
	if t := p.tasks.get(owner, id); t != nil {
		t.srv.endTask(t, why)
	}
}
