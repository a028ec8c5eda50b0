package pool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A task-augmented call whose caller gave up (the client went away, its
// request timed out) before the server's CreateTaskResult arrived leaves
// the TaskCall in connTasks.expect; when the late CreateTaskResult comes,
// tasksOnRead records a task that no client was told of and that nobody
// can reach or cancel: it runs on at the server, and holds a slot of the
// pool's task table until its server stops. Repeating it
// fills the table for every client.
func TestAttack24LateTaskOfGoneCallerIsOrphaned(t *testing.T) {
	_, p := taskPool(t)
	tc := &TaskCall{Owner: "o", Tool: "tasks__srv__slow_compute"}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	args, _ := json.Marshal(map[string]any{"seconds": 60, "label": "late"})
	if _, err := p.Call(WithTaskCall(ctx, tc), "tasks__srv__slow_compute", args, allow); err == nil {
		t.Fatal("the call returned before the fixture answered")
	}
	time.Sleep(1500 * time.Millisecond)
	if n := p.Tasks(); n != 0 {
		t.Fatalf("%d task(s) live in the table after their caller gave up before the task was created (created=%s): orphans nobody can reach or cancel", n, tc.Created())
	}
}

// refuseUnaskedTask looks for the bytes `"task"` before parsing: a server
// that writes its CreateTaskResult's resultType as "\u0074ask" (the same
// JSON string) answers a call whose client did not declare the tasks
// extension with a task that berth neither refuses nor cancels: the
// client gets an empty result, and the task runs on at the server.
func TestAttack24EscapedUnaskedTaskNotRefused(t *testing.T) {
	f := newFixture(t)
	f.plugin("tasks", map[string]any{"srv": map[string]any{"stdio": map[string]any{"command": "berth-taskserver", "args": []string{"-always-task-escaped"}}}})
	p := f.open(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := p.Call(ctx, "tasks__srv__slow_compute", json.RawMessage(`{"seconds":60}`), allow)
	if err == nil || !strings.Contains(err.Error(), "answered with a task a call whose client did not declare") {
		t.Fatalf("call: %+v, %v; want refused as the unescaped task is", res, err)
	}
}
