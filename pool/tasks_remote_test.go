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
)

// A remote plugin server (Streamable HTTP or SSE) is never told that a
// client supports tasks (tasks.go carries them over stdio only), so a task
// in its answer is one berth did not ask for: the call fails, saying so,
// and is not taken for an empty result. (berth cannot cancel it: go-sdk's
// HTTP client keeps no task ID; docs/relay.md §Tasks.)
func TestRemoteUnaskedTaskRefused(t *testing.T) {
	var calls, declared atomic.Int32
	inner := mcpHandler("streamable-http")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
				calls.Add(1)
				if bytes.Contains(body, []byte(TasksExtension)) {
					declared.Add(1)
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"resultType":"task","taskId":"up-1","status":"working","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttlMs":60000,"pollIntervalMs":100}}`))
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
	// A plain call, and one for a client that declared the
	// extension: neither is made task-augmented for a remote.
	for _, ctx := range []context.Context{t.Context(), WithTaskCall(t.Context(), &TaskCall{Owner: "o", Tool: "web__api__echo"})} {
		res, err := p.Call(ctx, "web__api__echo", json.RawMessage(`{"text":"x"}`), allow)
		if err == nil || !strings.Contains(err.Error(), `with a task (resultType "task"), which berth did not ask of it`) || !strings.Contains(err.Error(), "only for plugin servers over stdio") {
			t.Fatalf("a remote's task answer: %v, %+v; want refused naming why", err, res)
		}
	}
	if calls.Load() != 2 || declared.Load() != 0 {
		t.Fatalf("the remote got %d calls, %d declaring the tasks extension; want 2, none", calls.Load(), declared.Load())
	}
}
