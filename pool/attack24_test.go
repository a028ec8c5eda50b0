package pool

import (
	"fmt"
	"testing"
	"time"
)

// The task table's bound was one for the whole pool, and a task that
// never ends is never dropped: one client (or one plugin server that
// answers every task-augmented call with a task and never finishes it)
// filled the table, and every other client, on any listener, was then
// refused every task. The bound is now per owner (MaxTasksPerOwner) as
// well, so that one cannot starve the others.
func TestAttack24TaskTableStarvesOtherOwners(t *testing.T) {
	var tt taskTable
	for i := range MaxTasksPerOwner {
		if err := tt.add(&liveTask{id: fmt.Sprintf("berth-a%d", i), owner: "stateless /profiles/evil/mcp", status: "working", updated: time.Now()}); err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
	}
	if err := tt.add(&liveTask{id: "berth-b", owner: "stateless /mcp", status: "working", updated: time.Now()}); err != nil {
		t.Fatalf("another owner's first task was refused because one owner holds %d live tasks: %v", MaxTasksPerOwner, err)
	}
}
