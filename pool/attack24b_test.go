package pool

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// A task-augmented call whose caller gave up (the client went away, its
// request timed out) before the server's CreateTaskResult arrived leaves
// the TaskCall in connTasks.expect; when the late CreateTaskResult comes,
// tasksOnRead records a task that no client was told of and that nobody
// can reach or cancel: it runs on at the server, and holds a slot of the
// pool's task table (maxLiveTasks) until its server stops. Repeating it
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
