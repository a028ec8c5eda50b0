package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/testkit"
)

// A client that sends tasks/get with params.taskId and a case-fold twin
// (params.taskid) gets berth to check the Mcp-Name header and the task's
// input requests against the twin (parseTaskRequest decodes into a struct,
// case-insensitively, last key wins) while pool.TaskRequest acts on the
// exact "taskId". checkTaskInput then finds no task for the twin and
// passes the plugin's input requests on unchecked: an elicitation the
// operator's policy denies reaches the client, unmarked and unaudited, and
// the -32020 header check named another task than the one served.
func TestAttack24TaskIDTwinBypassesInputPolicy(t *testing.T) {
	w := newWorld(t)
	testkit.Program(t, w.bin, "github.com/berth-mcp/berth/internal/testkit/cmd/berth-taskserver")
	w.plugin(confPlugin, confServer, "berth-taskserver")
	w.policy(confPlugin+"__*", "allow")
	w.policy(confPlugin+"__elicitation", "deny")
	s := w.serve(1, "--http", "127.0.0.1:0", "--stateless", "--approval-timeout", "5s")
	url := withToken(t, s)
	res, e := taskPost(t, url, "tools/call", confPrefix+"confirm_delete", map[string]any{"name": confPrefix + "confirm_delete", "arguments": map[string]any{"filename": "a.txt"}})
	id, _ := res["taskId"].(string)
	if e != nil || res["resultType"] != "task" || !strings.HasPrefix(id, "berth-") {
		t.Fatalf("tools/call: %v %v", res, e)
	}
	var got, rpcErr map[string]any
	testkit.Eventually(t, 10*time.Second, "the task to leave working", func() bool {
		// json.Marshal sorts keys: "taskId" comes before "taskid".
		got, rpcErr = taskPost(t, url, "tasks/get", "twin", map[string]any{"taskId": id, "taskid": "twin"})
		return rpcErr != nil || got["status"] != "working"
	})
	if rpcErr == nil && (got["status"] == "input_required" || got["inputRequests"] != nil) {
		t.Fatalf("tasks/get with a case-fold twin of taskId (Mcp-Name %q) served task %s and passed on an elicitation the policy denies: %v",
			"twin", id, fmt.Sprint(got))
	}
}
