package pool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/testkit"
)

// TestTaskKeys: resultType and taskId are read by their exact keys, and a
// case twin of either is an error (refused as malformed), whatever order
// the twins come in; the IDs of every spelling are there to cancel.
func TestTaskKeys(t *testing.T) {
	for _, c := range []struct {
		in      string
		rt, id  string
		anyTask bool
		twin    bool
	}{
		{`{"resultType":"task","taskId":"a"}`, "task", "a", true, false},
		{`{"resultType":"task","taskId":"a","ResultType":"complete"}`, "task", "a", true, true},
		{`{"ResultType":"complete","resultType":"task","taskId":"a"}`, "task", "a", true, true},
		{`{"resultType":"complete","RESULTTYPE":"task","taskId":"a"}`, "complete", "a", true, true},
		{`{"resultType":"task","taskId":"a","TaskID":"b"}`, "task", "a", true, true},
		{`{"content":[],"resultType":"complete"}`, "complete", "", false, false},
		{`[1]`, "", "", false, false},
	} {
		rt, id, anyTask, ids, err := taskKeys(json.RawMessage(c.in))
		if rt != c.rt || id != c.id || anyTask != c.anyTask || (err != nil) != c.twin {
			t.Errorf("taskKeys(%s) = %q, %q, %v, %v, %v; want %q, %q, %v, twin %v", c.in, rt, id, anyTask, ids, err, c.rt, c.id, c.anyTask, c.twin)
		}
	}
}

// FuzzTaskKeys: when taskKeys finds no twin, a reader that matches keys
// without case (Go's decoder) reads the same resultType and taskId as the
// exact keys say: no spelling can hide a task from berth and show it to
// a client.
func FuzzTaskKeys(f *testing.F) {
	f.Add([]byte(`{"resultType":"task","taskId":"a","ResultType":"complete"}`))
	f.Add([]byte(`{"resulttype":"task","taskId":"a"}`))
	f.Add([]byte(`{"resultT\u0079pe":"task","taskId":"a"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rt, id, _, _, err := taskKeys(b)
		if err != nil {
			return
		}
		var loose struct {
			ResultType any `json:"resultType"`
			TaskID     any `json:"taskId"`
		}
		if json.Unmarshal(b, &loose) != nil {
			return
		}
		if s, ok := loose.ResultType.(string); ok && s != rt {
			t.Fatalf("%s: exact resultType %q, case-insensitive %q", b, rt, s)
		}
		if s, ok := loose.TaskID.(string); ok && s != id {
			t.Fatalf("%s: exact taskId %q, case-insensitive %q", b, id, s)
		}
	})
}

// TestTaskResultContent: a result go-sdk decoded with resultType "task"
// is a task whatever content it also carries.
func TestTaskResultContent(t *testing.T) {
	for _, in := range []string{
		`{"resultType":"task","taskId":"a"}`,
		`{"content":[{"type":"text","text":"hi"}],"resultType":"task","taskId":"a"}`,
		`{"structuredContent":{"ok":true},"resultType":"task"}`,
		`{"content":[],"isError":true,"resultType":"task"}`,
	} {
		var res mcp.CallToolResult
		if err := json.Unmarshal([]byte(in), &res); err != nil {
			t.Fatal(err)
		}
		if !taskResult(&res) {
			t.Errorf("taskResult(%s) = false; want true", in)
		}
	}
	for _, in := range []string{`{"content":[{"type":"text","text":"task"}]}`, `{"content":[],"resultType":"complete"}`} {
		var res mcp.CallToolResult
		if err := json.Unmarshal([]byte(in), &res); err != nil {
			t.Fatal(err)
		}
		if taskResult(&res) {
			t.Errorf("taskResult(%s) = true; want false", in)
		}
	}
}

// TestAskedTaskTwinKeyRefused: a task asked for, in a result with a case
// twin of resultType, is refused as malformed (never recorded, its ID
// never rewritten under one spelling while the other shows the server's)
// and cancelled at the server.
func TestAskedTaskTwinKeyRefused(t *testing.T) {
	f := newFixture(t)
	f.plugin("tasks", map[string]any{"srv": map[string]any{"stdio": map[string]any{"command": "berth-taskserver", "args": []string{"-always-task-twin"}}}})
	p := f.open(nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	tc := &TaskCall{Owner: "o", Tool: "tasks__srv__slow_compute"}
	_, err := p.Call(WithTaskCall(ctx, tc), "tasks__srv__slow_compute", json.RawMessage(`{"seconds":60}`), allow)
	if err == nil || !strings.Contains(err.Error(), "in a malformed result") || tc.Created() != nil {
		t.Fatalf("call: %v, created %s; want refused as malformed", err, tc.Created())
	}
	testkit.Eventually(t, 10*time.Second, "the server to log the tasks/cancel", func() bool {
		b, _ := os.ReadFile(filepath.Join(f.paths.Logs(), "tasks__srv.log"))
		return strings.Contains(string(b), "cancelled")
	})
}

// BenchmarkTaskResult: the look every tools/call result gets in Pool.send
// (a 4 KiB text result, not a task).
func BenchmarkTaskResult(b *testing.B) {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 4096)}}}
	for b.Loop() {
		if taskResult(res) {
			b.Fatal("a task")
		}
	}
}
