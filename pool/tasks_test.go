package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/store"
)

// taskPool is a pool with the tasks fixture server enabled as plugin
// "tasks" (server "srv").
func taskPool(t *testing.T) (*fixture, *Pool) {
	t.Helper()
	f := newFixture(t)
	f.plugin("tasks", map[string]any{"srv": map[string]any{"stdio": map[string]any{"command": "berth-taskserver"}}})
	return f, f.open(nil)
}

// startTask calls slow_compute for owner as a task-augmented call and
// returns berth's task ID.
func startTask(t *testing.T, p *Pool, owner string, seconds int) string {
	t.Helper()
	tc := &TaskCall{Owner: owner, Tool: "tasks__srv__slow_compute"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args, _ := json.Marshal(map[string]any{"seconds": seconds, "label": "t"})
	if _, err := p.Call(WithTaskCall(ctx, tc), "tasks__srv__slow_compute", args, allow); err != nil {
		t.Fatal(err)
	}
	created := tc.Created()
	if created == nil {
		t.Fatal("the server made no task of a task-augmented call")
	}
	var m struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
		Status     string `json:"status"`
	}
	if err := json.Unmarshal(created, &m); err != nil {
		t.Fatal(err)
	}
	// A job of 0 seconds may have ended before the fixture wrote its
	// CreateTaskResult (seen once under -race).
	if m.ResultType != "task" || !strings.HasPrefix(m.TaskID, "berth-") || m.Status != "working" && (seconds > 0 || m.Status != "completed") {
		t.Fatalf("CreateTaskResult %s: want resultType task, a berth task ID, status working", created)
	}
	return m.TaskID
}

func taskGet(t *testing.T, p *Pool, owner, id string) (map[string]any, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	params, _ := json.Marshal(map[string]any{"taskId": id})
	res, err := p.TaskRequest(ctx, owner, "tasks/get", params)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(res, &m); err != nil {
		t.Fatal(err)
	}
	return m, nil
}

func wantUnknown(t *testing.T, what string, err error) {
	t.Helper()
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != CodeInvalidParams {
		t.Fatalf("%s: %v, want -32602 (unknown task)", what, err)
	}
}

// A task is reached only by the owner whose call made it: any other owner
// gets -32602 for tasks/get, tasks/update and tasks/cancel, as for a task
// that does not exist, and cannot end it; the plugin server's own task ID
// is never a key.
func TestTaskIsolation(t *testing.T) {
	_, p := taskPool(t)
	id := startTask(t, p, "alice", 60)
	got, err := taskGet(t, p, "alice", id)
	if err != nil || got["taskId"] != id || got["status"] != "working" {
		t.Fatalf("tasks/get by its owner: %v %v", got, err)
	}
	ctx := context.Background()
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		params, _ := json.Marshal(map[string]any{"taskId": id, "inputResponses": map[string]any{}})
		_, err := p.TaskRequest(ctx, "mallory", method, params)
		wantUnknown(t, "another owner's "+method, err)
	}
	if got, err := taskGet(t, p, "alice", id); err != nil || got["status"] != "working" {
		t.Fatalf("after another owner's tasks/cancel: %v %v, want still working", got, err)
	}
	// The server's own ID is not berth's.
	p.tasks.mu.Lock()
	upstream := p.tasks.m[id].upstream
	p.tasks.mu.Unlock()
	_, err = taskGet(t, p, "alice", upstream)
	wantUnknown(t, "the plugin server's task ID", err)
	_, err = taskGet(t, p, "alice", "berth-nonexistent")
	wantUnknown(t, "an unknown task ID", err)
	// Its owner can cancel it.
	params, _ := json.Marshal(map[string]any{"taskId": id})
	if _, err := p.TaskRequest(ctx, "alice", "tasks/cancel", params); err != nil {
		t.Fatal(err)
	}
	if got, err := taskGet(t, p, "alice", id); err != nil || got["status"] != "cancelled" {
		t.Fatalf("after its owner's tasks/cancel: %v %v", got, err)
	}
}

// Disabling a plugin cancels its tasks: tasks/cancel reaches the server
// before it is stopped, and the task's owner sees it cancelled, with why.
func TestTasksEndWithDisable(t *testing.T) {
	f, p := taskPool(t)
	id := startTask(t, p, "alice", 60)
	ctx := context.Background()
	if _, err := Disable(ctx, f.store, f.ws, "tasks"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Tools(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the disabled plugin's task to end", func() bool {
		got, err := taskGet(t, p, "alice", id)
		return err == nil && got["status"] == "cancelled" && strings.Contains(got["statusMessage"].(string), "stopped")
	})
	if n := p.Tasks(); n != 0 {
		t.Errorf("%d tasks still live", n)
	}
	params, _ := json.Marshal(map[string]any{"taskId": id, "inputResponses": map[string]any{}})
	if _, err := p.TaskRequest(ctx, "alice", "tasks/update", params); err == nil || !strings.Contains(err.Error(), "ended") {
		t.Errorf("tasks/update of a task berth ended: %v, want refused", err)
	}
	if res, err := p.TaskRequest(ctx, "alice", "tasks/cancel", params); err != nil || string(res) != `{"resultType":"complete"}` {
		t.Errorf("tasks/cancel of a task berth ended: %s %v, want the empty acknowledgement", res, err)
	}
	p.tasks.mu.Lock()
	upstream := p.tasks.m[id].upstream
	p.tasks.mu.Unlock()
	testkit.Eventually(t, 10*time.Second, "the server to log the tasks/cancel", func() bool {
		b, _ := os.ReadFile(filepath.Join(f.paths.Logs(), "tasks__srv.log"))
		return strings.Contains(string(b), "task "+upstream+" cancelled")
	})
}

// A call without a TaskCall is not task-augmented: the server runs it
// synchronously.
func TestTaskCallOnlyWhenAsked(t *testing.T) {
	_, p := taskPool(t)
	if got := callText(t, p, "tasks__srv__slow_compute", `{"seconds":0,"label":"sync"}`); got != "computed sync after 0s" {
		t.Fatalf("sync call: %q", got)
	}
	if n := p.Tasks(); n != 0 {
		t.Fatalf("%d tasks made by a call that did not ask", n)
	}
}

func FuzzWithTasksExtension(f *testing.F) {
	f.Add([]byte(`{"name":"x","_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"a":{}}}}}`))
	f.Add([]byte(`{"name":"x"}`))
	f.Add([]byte(`{"_meta":null}`))
	f.Add([]byte(`{"_meta":{"io.modelcontextprotocol/clientCapabilities":null}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := withTasksExtension(b)
		if err != nil {
			return
		}
		var p struct {
			Meta struct {
				Caps struct {
					Extensions map[string]json.RawMessage `json:"extensions"`
				} `json:"io.modelcontextprotocol/clientCapabilities"`
			} `json:"_meta"`
		}
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatalf("%s: output %s does not decode: %v", b, out, err)
		}
		if _, ok := p.Meta.Caps.Extensions[TasksExtension]; !ok {
			t.Fatalf("%s: output %s lacks the extension", b, out)
		}
	})
}

// A task runs on the approval of the call that made it, and that approval
// does not outlive the operator's policy: when the tool becomes denied,
// the task is cancelled at the server and for its owner. A tasks/update
// of a task that ended is refused: its approval ended with it.
func TestTaskApprovalDiesWithPolicyAndTask(t *testing.T) {
	f, p := taskPool(t)
	ctx := context.Background()
	id := startTask(t, p, "alice", 60)
	if err := f.store.SetPolicy(ctx, store.PolicyRule{Pattern: "tasks__srv__slow_compute", Action: store.ActionDeny}); err != nil {
		t.Fatal(err)
	}
	got, err := taskGet(t, p, "alice", id)
	if err != nil || got["status"] != "cancelled" || !strings.Contains(fmt.Sprint(got["statusMessage"]), "policy now denies") {
		t.Fatalf("after the policy denied the tool: %v %v", got, err)
	}
	p.tasks.mu.Lock()
	upstream := p.tasks.m[id].upstream
	p.tasks.mu.Unlock()
	testkit.Eventually(t, 10*time.Second, "the server to log the tasks/cancel", func() bool {
		b, _ := os.ReadFile(filepath.Join(f.paths.Logs(), "tasks__srv.log"))
		return strings.Contains(string(b), "task "+upstream+" cancelled")
	})

	if err := f.store.SetPolicy(ctx, store.PolicyRule{Pattern: "tasks__srv__slow_compute", Action: store.ActionAllow}); err != nil {
		t.Fatal(err)
	}
	id = startTask(t, p, "alice", 0)
	testkit.Eventually(t, 10*time.Second, "the task to complete", func() bool {
		got, err := taskGet(t, p, "alice", id)
		return err == nil && got["status"] == "completed"
	})
	params, _ := json.Marshal(map[string]any{"taskId": id, "inputResponses": map[string]any{"k": map[string]any{}}})
	_, err = p.TaskRequest(ctx, "alice", "tasks/update", params)
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || !strings.Contains(werr.Message, "ended") {
		t.Fatalf("tasks/update of a completed task: %v, want refused", err)
	}
}

// A plugin server that makes a task of a call whose client did not
// declare the extension is refused: the client could not follow the
// task. The task is cancelled at the server.
func TestUnaskedTaskRefused(t *testing.T) {
	f := newFixture(t)
	f.plugin("tasks", map[string]any{"srv": map[string]any{"stdio": map[string]any{"command": "berth-taskserver", "args": []string{"-always-task"}}}})
	p := f.open(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := p.Call(ctx, "tasks__srv__slow_compute", json.RawMessage(`{"seconds":60}`), allow)
	if err == nil || !strings.Contains(err.Error(), "answered with a task a call whose client did not declare") {
		t.Fatalf("call: %v, want refused", err)
	}
	testkit.Eventually(t, 10*time.Second, "the server to log the tasks/cancel", func() bool {
		b, _ := os.ReadFile(filepath.Join(f.paths.Logs(), "tasks__srv.log"))
		return strings.Contains(string(b), "cancelled")
	})
}

// TestTaskBounds: one owner may keep MaxTasksPerOwner tasks and all
// owners MaxTasks; a task over a bound is refused, its call fails with
// why, and the server's task is cancelled. Ended tasks are kept for
// taskKeep, never evicted to make room, and dropped once it has passed.
func TestTaskBounds(t *testing.T) {
	f, p := taskPool(t)
	fill := func(owner string, n int, ended time.Time) {
		p.tasks.mu.Lock()
		defer p.tasks.mu.Unlock()
		if p.tasks.m == nil {
			p.tasks.m = map[string]*liveTask{}
		}
		for i := range n {
			id := fmt.Sprintf("berth-fill-%s-%d", owner, i)
			p.tasks.m[id] = &liveTask{id: id, owner: owner, status: "completed", updated: ended}
		}
	}
	// A's ended tasks, a second old: kept (tasks/get is promised them).
	fill("A", MaxTasksPerOwner, time.Now().Add(-time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tc := &TaskCall{Owner: "A", Tool: "tasks__srv__slow_compute"}
	_, err := p.Call(WithTaskCall(ctx, tc), "tasks__srv__slow_compute", json.RawMessage(`{"seconds":60}`), allow)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("A already has %d tasks", MaxTasksPerOwner)) || !strings.Contains(err.Error(), "tasks/cancel") || tc.Created() != nil {
		t.Fatalf("a task over the owner's bound: %v, created %s; want refused, naming the owner, the bound and the fix", err, tc.Created())
	}
	if p.tasks.get("A", "berth-fill-A-0") == nil {
		t.Fatal("an ended task was evicted a second after it ended; the docs keep it for tasks/get")
	}
	testkit.Eventually(t, 10*time.Second, "the server to log the refused task's cancel", func() bool {
		b, _ := os.ReadFile(filepath.Join(f.paths.Logs(), "tasks__srv.log"))
		return strings.Contains(string(b), "cancelled")
	})
	// Another owner is not held by A's bound.
	startTask(t, p, "B", 60)
	// All owners: MaxTasks.
	size := func() int {
		p.tasks.mu.Lock()
		defer p.tasks.mu.Unlock()
		return len(p.tasks.m)
	}
	for i := 0; size() < MaxTasks; i++ {
		fill(fmt.Sprintf("O%d", i), min(MaxTasksPerOwner-1, MaxTasks-size()), time.Now())
	}
	tc = &TaskCall{Owner: "C", Tool: "tasks__srv__slow_compute"}
	if _, err := p.Call(WithTaskCall(ctx, tc), "tasks__srv__slow_compute", json.RawMessage(`{"seconds":60}`), allow); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("berth already keeps %d tasks", MaxTasks)) {
		t.Fatalf("a task over the global bound: %v", err)
	}
	// Once taskKeep has passed, A's ended tasks go and make room.
	p.tasks.mu.Lock()
	for _, lt := range p.tasks.m {
		if lt.owner == "A" {
			lt.updated = time.Now().Add(-taskKeep - time.Second)
		}
	}
	p.tasks.mu.Unlock()
	startTask(t, p, "A", 60)
}

// TestTaskCallErrorsSayWhy: a task-augmented tools/call berth cannot
// declare the extension on says which call, which server and why.
func TestTaskCallErrorsSayWhy(t *testing.T) {
	c := &conn{proc: &process{}, wire: &wireConn{}, srv: &server{id: "tasks/srv"}}
	ctx := WithTaskCall(context.Background(), &TaskCall{Owner: "A", Tool: "x"})
	sid, _ := jsonrpc.MakeID("s1")
	err := c.tasksOnWrite(ctx, &jsonrpc.Request{ID: sid, Method: "tools/call", Params: json.RawMessage(`{}`)})
	if err == nil || !strings.Contains(err.Error(), "tools/call s1") || !strings.Contains(err.Error(), "is not an integer") || strings.Contains(err.Error(), "<nil>") {
		t.Fatalf("a string ID: %v", err)
	}
	iid, _ := jsonrpc.MakeID(float64(7))
	err = c.tasksOnWrite(ctx, &jsonrpc.Request{ID: iid, Method: "tools/call", Params: json.RawMessage(`{"_meta":{},"_META":{}}`)})
	var se *json.SyntaxError
	if err == nil || !strings.Contains(err.Error(), "tools/call 7 task-augmented for tasks/srv: ambiguous keys") || errors.As(err, &se) {
		t.Fatalf("ambiguous params: %v", err)
	}
	err = c.tasksOnWrite(ctx, &jsonrpc.Request{ID: iid, Method: "tools/call", Params: json.RawMessage(`[`)})
	if !errors.As(err, &se) {
		t.Fatalf("bad params: %v, want the JSON error wrapped (%%w)", err)
	}
}

// A task whose tool's surface changed (withheld until accepted) is
// cancelled at its next request, as a deny cancels it: it ran on an
// approval of the surface that was pinned.
func TestTaskEndsWhenItsToolIsWithheld(t *testing.T) {
	_, p := taskPool(t)
	id := startTask(t, p, "alice", 60)
	p.tasks.mu.Lock()
	s := p.tasks.m[id].srv
	p.tasks.mu.Unlock()
	s.mu.Lock()
	s.changes = append(s.changes, ToolChange{Plugin: "tasks", Server: "srv", ID: s.id, Tool: "slow_compute", Kind: ChangeChanged})
	s.mu.Unlock()
	p.invalidate()
	got, err := taskGet(t, p, "alice", id)
	if err != nil || got["status"] != "cancelled" || !strings.Contains(fmt.Sprint(got["statusMessage"]), "is withheld") {
		t.Fatalf("after its tool's surface changed: %v %v", got, err)
	}
}

// When berth cannot read its state (the policy), a task is not served.
func TestTaskRequestFailsClosedOnState(t *testing.T) {
	f, p := taskPool(t)
	id := startTask(t, p, "alice", 60)
	if err := os.WriteFile(f.paths.State(), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := taskGet(t, p, "alice", id); err == nil || !strings.Contains(err.Error(), "reading the policy") {
		t.Fatalf("tasks/get with an unreadable state: %v %v, want refused", got, err)
	}
}
