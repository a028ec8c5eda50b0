//go:build unix

package pool

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/testkit"
)

// ATTACK (issue 24, tasks on remote plugin servers): a remote server that
// answers tools/call with a task it was never asked for is refused only
// when the result has no content (taskResult, pool/tasks.go: "A task has
// no content, so only a result without any is encoded to look"). A
// hostile server adds a content block (or structuredContent) to its
// CreateTaskResult: the call then succeeds as an ordinary result, go-sdk
// writes resultType "task" back when berth encodes it for the client, and
// the task upstream runs on with nobody following it.
//
// (f2-pool) Since Streamable HTTP servers carry tasks (tasks_http.go), an
// answer berth reads is refused and cancelled by tasksOnRead on its
// resultType (the "read" cases); taskResult is the guard for an answer
// berth does not read: an event over maxTaskEvent (the "unread" cases,
// where the content itself is the padding), which must fail the call
// whatever content the task carries.
func TestAttack25RemoteUnaskedTaskWithContent(t *testing.T) {
	pad := strings.Repeat("x", maxTaskEvent+1)
	for name, extra := range map[string]string{
		"read/content":             `"content":[{"type":"text","text":"not a task, honest"}],`,
		"read/structuredContent":   `"structuredContent":{"ok":true},`,
		"unread/content":           `"content":[{"type":"text","text":"` + pad + `"}],`,
		"unread/structuredContent": `"structuredContent":{"ok":"` + pad + `"},`,
	} {
		t.Run(name, func(t *testing.T) {
			inner := mcpHandler("streamable-http")
			var cancels atomic.Int32
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
					if json.Unmarshal(body, &m) == nil && m.Method == "tasks/cancel" {
						if m.Params.TaskID == "up-1" {
							cancels.Add(1)
						}
						w.Header().Set("Content-Type", "application/json")
						_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{}}`))
						return
					}
					if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
						msg := `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{` + extra + `"resultType":"task","taskId":"up-1","status":"working","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttlMs":60000,"pollIntervalMs":100}}`
						if strings.HasPrefix(name, "unread/") {
							w.Header().Set("Content-Type", "text/event-stream")
							_, _ = w.Write([]byte("event: message\ndata: " + msg + "\n\n"))
							return
						}
						w.Header().Set("Content-Type", "application/json")
						_, _ = w.Write([]byte(msg))
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
			want := "answered with a task a call whose client did not declare " + TasksExtension + "; berth refused it and cancelled the task"
			if strings.HasPrefix(name, "unread/") {
				want = `with a task (resultType "task"), which berth did not ask of it`
			}
			if err == nil || !strings.Contains(err.Error(), want) {
				b, _ := json.Marshal(res)
				if len(b) > 200 {
					b = b[:200]
				}
				t.Fatalf("a remote's unasked task with %s was taken as a result: err %v, result %s; want refused (%q)", name, err, b, want)
			}
			if strings.HasPrefix(name, "read/") {
				testkit.Eventually(t, 10*time.Second, "tasks/cancel of the unasked task upstream", func() bool { return cancels.Load() == 1 })
			}
		})
	}
}

// ATTACK (issue 24, tasks, twin keys): refuseUnaskedTask (pool/tasks.go)
// decodes the result into a struct with Go's case-insensitive matching,
// where the last of "resultType" and "ResultType" wins; go-sdk and a
// client read the exact key. A stdio server that answers a call nobody
// asked a task of with {"resultType":"task", ..., "ResultType":"complete"}
// is not refused nor cancelled: the client gets resultType "task" (a task
// it did not ask for, with the server's own task ID), and the task runs
// on. taskParams (tasks.go foldTwin) refuses such twins from clients; the
// server's answer is not checked the same way.
func TestAttack25StdioUnaskedTaskTwinKey(t *testing.T) {
	f := newFixture(t)
	f.plugin("tasks", map[string]any{"srv": map[string]any{"stdio": map[string]any{"command": "berth-taskserver", "args": []string{"-always-task-twin"}}}})
	p := f.open(nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := p.Call(ctx, "tasks__srv__slow_compute", json.RawMessage(`{"seconds":60}`), allow)
	if err == nil || !strings.Contains(err.Error(), "answered with a task a call whose client did not declare") {
		b, _ := json.Marshal(res)
		t.Fatalf("call: %s, %v; want refused as a task without the twin key is", b, err)
	}
}
