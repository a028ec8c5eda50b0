//go:build unix

package pool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/internal/testkit/taskserver"
	"github.com/berth-mcp/berth/store"
)

// A Streamable HTTP plugin server is told that a client supports tasks
// only on the calls of a client that declared the extension
// (tasks_http.go): a task in the answer to any other call is one berth
// did not ask for. The call fails, saying so, and the task is cancelled
// at the server (tasks/cancel with its ID); however "task" is spelled.
// The call of a client that declared the extension gets the task, under
// a berth task ID.
func TestRemoteUnaskedTaskRefused(t *testing.T) {
	for _, escaped := range []bool{false, true} {
		var calls, declared, cancels atomic.Int32
		inner := mcpHandler("streamable-http")
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
					Params struct {
						TaskID string `json:"taskId"`
					} `json:"params"`
				}
				if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
					calls.Add(1)
					if bytes.Contains(body, []byte(TasksExtension)) {
						declared.Add(1)
					}
					rt := `"task"`
					if escaped {
						rt = `"\u0074ask"`
					}
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"resultType":` + rt + `,"taskId":"up-1","status":"working","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttlMs":60000,"pollIntervalMs":100}}`))
					return
				}
				if m.Method == "tasks/cancel" {
					if m.Params.TaskID == "up-1" && r.Header.Get("Mcp-Method") == "tasks/cancel" && r.Header.Get("Mcp-Protocol-Version") != "" {
						cancels.Add(1)
					}
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"resultType":"complete"}}`))
					return
				}
			}
			inner.ServeHTTP(w, r)
		})
		ts := httptest.NewServer(h)
		t.Cleanup(ts.Close)
		f := newFixture(t)
		f.plugin("web", map[string]any{"api": remoteServer(ts.URL, "streamable-http", nil)})
		p := f.open(nil)
		res, err := p.Call(t.Context(), "web__api__echo", json.RawMessage(`{"text":"x"}`), allow)
		if err == nil || !strings.Contains(err.Error(), "answered with a task a call whose client did not declare "+TasksExtension+"; berth refused it and cancelled the task") {
			t.Fatalf("escaped %v: a remote's unasked task: %v, %+v; want refused naming why", escaped, err, res)
		}
		testkit.Eventually(t, 10*time.Second, "tasks/cancel of the unasked task upstream", func() bool { return cancels.Load() == 1 })
		tc := &TaskCall{Owner: "o", Tool: "web__api__echo"}
		if _, err := p.Call(WithTaskCall(t.Context(), tc), "web__api__echo", json.RawMessage(`{"text":"x"}`), allow); err != nil {
			t.Fatalf("escaped %v: a task-augmented call: %v", escaped, err)
		}
		var m struct{ TaskID string }
		if err := json.Unmarshal(tc.Created(), &m); err != nil || !strings.HasPrefix(m.TaskID, "berth-") {
			t.Fatalf("escaped %v: CreateTaskResult %s: want a berth task ID", escaped, tc.Created())
		}
		if calls.Load() != 2 || declared.Load() != 1 {
			t.Fatalf("escaped %v: the remote got %d calls, %d declaring the tasks extension; want 2, 1", escaped, calls.Load(), declared.Load())
		}
	}
}

// remoteTaskPool is a pool with the tasks fixture as a stateless
// Streamable HTTP remote (plugin "tasks", server "srv": the tool names of
// taskPool), answering its task surface in JSON bodies or event streams.
func remoteTaskPool(t *testing.T, sse bool) (*fixture, *Pool, *taskserver.HTTP) {
	t.Helper()
	h := taskserver.NewHTTP(sse, false)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	f := newFixture(t)
	f.plugin("tasks", map[string]any{"srv": remoteServer(ts.URL, "streamable-http", nil)})
	return f, f.open(nil), h
}

// Tasks pass through a Streamable HTTP plugin server as through a stdio
// one: a berth task ID, reachable by its owner only, cancelled upstream by
// its owner's tasks/cancel and when the plugin is disabled.
func TestRemoteTasks(t *testing.T) {
	for _, sse := range []bool{false, true} {
		f, p, h := remoteTaskPool(t, sse)
		var notes atomic.Value
		for _, owner := range []string{"alice", "mallory"} {
			defer p.NotifyTasks(owner, func(method string, params json.RawMessage) {
				notes.Store(owner + " " + method + " " + string(params))
			})()
		}
		id := startTask(t, p, "alice", 60)
		got, err := taskGet(t, p, "alice", id)
		if err != nil || got["taskId"] != id || got["status"] != "working" {
			t.Fatalf("sse %v: tasks/get by its owner: %v %v", sse, got, err)
		}
		// Over an event stream, the fixture sends the task's status before
		// the answer to tasks/get: it goes to the task's owner alone, with
		// berth's task ID.
		if want := `alice notifications/tasks/status {"status":"working","taskId":"` + id + `"}`; sse && notes.Load() != want {
			t.Fatalf("status notification %v, want %s", notes.Load(), want)
		}
		ctx := context.Background()
		for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
			params, _ := json.Marshal(map[string]any{"taskId": id, "inputResponses": map[string]any{}})
			_, err := p.TaskRequest(ctx, "mallory", method, params)
			wantUnknown(t, "another owner's "+method, err)
		}
		p.tasks.mu.Lock()
		upstream := p.tasks.m[id].upstream
		p.tasks.mu.Unlock()
		if upstream == id || strings.HasPrefix(upstream, "berth-") {
			t.Fatalf("sse %v: upstream %q, berth's %q", sse, upstream, id)
		}
		_, err = taskGet(t, p, "alice", upstream)
		wantUnknown(t, "the plugin server's task ID", err)
		params, _ := json.Marshal(map[string]any{"taskId": id})
		if _, err := p.TaskRequest(ctx, "alice", "tasks/cancel", params); err != nil {
			t.Fatal(err)
		}
		if got, err := taskGet(t, p, "alice", id); err != nil || got["status"] != "cancelled" || h.Cancelled() != 1 {
			t.Fatalf("sse %v: after its owner's tasks/cancel: %v %v, %d cancelled upstream", sse, got, err, h.Cancelled())
		}
		// A synchronous call still answers.
		res, err := p.Call(ctx, "tasks__srv__greet", json.RawMessage(`{"name":"x"}`), allow)
		if err != nil || len(res.Content) != 1 {
			t.Fatalf("sse %v: greet: %v %+v", sse, err, res)
		}
		id2 := startTask(t, p, "alice", 60)
		if _, err := Disable(ctx, f.store, f.ws, "tasks"); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Tools(ctx); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 10*time.Second, "the disabled plugin's task to end", func() bool {
			got, err := taskGet(t, p, "alice", id2)
			return err == nil && got["status"] == "cancelled" && strings.Contains(got["statusMessage"].(string), "stopped")
		})
		testkit.Eventually(t, 10*time.Second, "tasks/cancel upstream on disable", func() bool { return h.Cancelled() == 2 })
	}
}

// A CreateTaskResult that comes after its caller gave up is still read
// off the remote's answer: refused (no orphan in the table) and cancelled
// at the server, as on stdio (TestAttack24LateTaskOfGoneCallerIsOrphaned).
func TestRemoteLateTaskOfGoneCaller(t *testing.T) {
	for _, sse := range []bool{false, true} {
		_, p, h := remoteTaskPool(t, sse)
		tc := &TaskCall{Owner: "o", Tool: "tasks__srv__slow_compute"}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		args, _ := json.Marshal(map[string]any{"seconds": 60, "label": "late"})
		if _, err := p.Call(WithTaskCall(ctx, tc), "tasks__srv__slow_compute", args, allow); err == nil {
			t.Fatal("the call returned before the fixture answered")
		}
		cancel()
		testkit.Eventually(t, 10*time.Second, "the late task to be cancelled upstream", func() bool { return h.Cancelled() == 1 })
		if n := p.Tasks(); n != 0 || tc.Created() != nil {
			t.Fatalf("sse %v: %d task(s) live after their caller gave up (created=%s)", sse, n, tc.Created())
		}
	}
}

// The event stream of an answer is passed on as it came, but for the
// events of the task surface: a CreateTaskResult nobody asked for is
// rewritten (refused), a status notification dropped for go-sdk.
func TestRewriteEvents(t *testing.T) {
	c := &conn{}
	in := "id: 1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"a\",\"progress\":1}}\n\n" +
		": comment\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tasks/status\",\"params\":{\"taskId\":\"up\",\"status\":\"working\"}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[]}}\n\npartial"
	var out bytes.Buffer
	if err := c.rewriteEvents(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(in, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tasks/status\",\"params\":{\"taskId\":\"up\",\"status\":\"working\"}}\n\n", "", 1)
	if out.String() != want {
		t.Fatalf("rewritten:\n%q\nwant\n%q", out.String(), want)
	}
}

// FuzzRewriteEvents: any stream is copied without a panic, and one
// without the task surface's bytes or a carriage return passes unchanged.
func FuzzRewriteEvents(f *testing.F) {
	f.Add([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resultType\":\"task\",\"taskId\":\"x\"}}\n\n"))
	f.Add([]byte("data: a\ndata: b\n\ndata:\n\n\n\nid: 3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := &conn{}
		var out bytes.Buffer
		if err := c.rewriteEvents(bytes.NewReader(b), &out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("task")) && !bytes.Contains(b, []byte(`\u`)) && !bytes.ContainsRune(b, '\r') && !bytes.Equal(out.Bytes(), b) {
			t.Fatalf("%q became %q", b, out.Bytes())
		}
	})
}

// BenchmarkRewriteEvents is the cost, on a remote's tools/call answered
// as an event stream, of reading it for tasks: a progress event and a
// 4 KiB tool result, neither of the task surface.
func BenchmarkRewriteEvents(b *testing.B) {
	in := []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"a\",\"progress\":1}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"" + strings.Repeat("x", 4096) + "\"}]}}\n\n")
	c := &conn{}
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if err := c.rewriteEvents(bytes.NewReader(in), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// Over Streamable HTTP too, a task runs on its call's approval (a policy
// that now denies the tool cancels it, at the server too), and a task
// over the owner's bound is refused and cancelled at the server.
func TestRemoteTaskApprovalAndBound(t *testing.T) {
	f, p, h := remoteTaskPool(t, false)
	ctx := context.Background()
	id := startTask(t, p, "alice", 60)
	if err := f.store.SetPolicy(ctx, store.PolicyRule{Pattern: "tasks__srv__slow_compute", Action: store.ActionDeny}); err != nil {
		t.Fatal(err)
	}
	got, err := taskGet(t, p, "alice", id)
	if err != nil || got["status"] != "cancelled" || !strings.Contains(fmt.Sprint(got["statusMessage"]), "policy now denies") || h.Cancelled() != 1 {
		t.Fatalf("after the policy denied the tool: %v %v, %d cancelled upstream", got, err, h.Cancelled())
	}
	if err := f.store.SetPolicy(ctx, store.PolicyRule{Pattern: "tasks__srv__slow_compute", Action: store.ActionAllow}); err != nil {
		t.Fatal(err)
	}
	p.tasks.mu.Lock()
	for i := range MaxTasksPerOwner {
		id := fmt.Sprintf("berth-fill-%d", i)
		p.tasks.m[id] = &liveTask{id: id, owner: "A", status: "completed", updated: time.Now()}
	}
	p.tasks.mu.Unlock()
	tc := &TaskCall{Owner: "A", Tool: "tasks__srv__slow_compute"}
	if _, err := p.Call(WithTaskCall(ctx, tc), "tasks__srv__slow_compute", json.RawMessage(`{"seconds":60}`), allow); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("A already has %d tasks", MaxTasksPerOwner)) || tc.Created() != nil {
		t.Fatalf("a task over the owner's bound: %v, created %s", err, tc.Created())
	}
	testkit.Eventually(t, 10*time.Second, "the refused task's cancel upstream", func() bool { return h.Cancelled() == 2 })
}
