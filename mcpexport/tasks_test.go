package mcpexport

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/pool"
)

// The CreateTaskResult runTool returns in a tool result's _meta reaches
// the client in the result's place; a _meta key that is not this
// process's secret one leaves a result alone (a plugin server cannot
// forge a task), and server/discover gets the extension.
func TestRewriteMessage(t *testing.T) {
	created := json.RawMessage(`{"resultType":"task","taskId":"berth-X","status":"working"}`)
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 3, "result": taskCreated(created)})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(rewriteMessage(b), &got); err != nil || got.ID != 3 || !bytes.Equal(got.Result, created) {
		t.Fatalf("rewritten: %s (%v), want the CreateTaskResult as the result", rewriteMessage(b), err)
	}
	forged := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[],"_meta":{"berth-task-result-guess":{"resultType":"task"}}}}`)
	if out := rewriteMessage(forged); !bytes.Equal(out, forged) {
		t.Fatalf("a guessed key was taken: %s", out)
	}
	discover := []byte(`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}}}}`)
	var d struct {
		Result struct {
			Capabilities struct {
				Tools      map[string]any            `json:"tools"`
				Extensions map[string]map[string]any `json:"extensions"`
			} `json:"capabilities"`
		} `json:"result"`
	}
	if err := json.Unmarshal(rewriteMessage(discover), &d); err != nil || d.Result.Capabilities.Extensions[pool.TasksExtension] == nil || d.Result.Capabilities.Tools == nil {
		t.Fatalf("server/discover: %s", rewriteMessage(discover))
	}
}

// taskWriter rewrites an SSE event that carries a created task and passes
// the others as they were written.
func TestTaskWriterSSE(t *testing.T) {
	rec := httptest.NewRecorder()
	w := &taskWriter{ResponseWriter: rec}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	progress := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n"
	w.Write([]byte(progress[:20]))
	w.Write([]byte(progress[20:]))
	if rec.Body.String() != progress {
		t.Fatalf("a notification was held or changed: %q", rec.Body.String())
	}
	res, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": taskCreated(json.RawMessage(`{"resultType":"task","taskId":"berth-Y"}`))})
	w.Write([]byte("event: message\ndata: " + string(res) + "\n\n"))
	w.finish()
	if !strings.Contains(rec.Body.String(), `"result":{"resultType":"task","taskId":"berth-Y"}`) || strings.Contains(rec.Body.String(), taskResultKey) {
		t.Fatalf("the result event was not rewritten: %q", rec.Body.String())
	}
}

func TestParseTaskRequest(t *testing.T) {
	req, id, declared, ok := parseTaskRequest([]byte(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"berth-1","_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`))
	if !ok || id != "berth-1" || !declared || req.Method != "tasks/get" {
		t.Fatalf("got %+v %q %v %v", req, id, declared, ok)
	}
	if _, _, declared, ok := parseTaskRequest([]byte(`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"taskId":"b"}}`)); !ok || declared {
		t.Fatalf("undeclared: %v %v", declared, ok)
	}
	for _, b := range []string{`{"method":"tools/call"}`, `[{"method":"tasks/get"}]`, `nope`, ``} {
		if _, _, _, ok := parseTaskRequest([]byte(b)); ok {
			t.Errorf("%q taken as a task request", b)
		}
	}
}

func FuzzParseTaskRequest(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"berth-1","_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`))
	f.Add([]byte(`{"id":"x","method":"tasks/update","params":{"taskId":7}}`))
	f.Add([]byte(`{"method":"tasks/cancel","params":null}`))
	f.Add([]byte(`{"id":1,"method":"tasks/get","params":{"taskId":"berth-REAL","taskid":"x"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		req, id, _, ok := parseTaskRequest(b)
		if ok && req.Method != "tasks/get" && req.Method != "tasks/update" && req.Method != "tasks/cancel" {
			t.Fatalf("%q taken as a task request (%s)", b, req.Method)
		}
		if ok && req.bad == "" {
			// What is dispatched names the task the header was checked
			// against, however a reader matches keys.
			var exact map[string]json.RawMessage
			var folded struct {
				TaskID string `json:"taskId"`
			}
			if json.Unmarshal(req.Params, &exact) != nil || json.Unmarshal(req.Params, &folded) != nil || folded.TaskID != id {
				t.Fatalf("%q: params %s, id %q", b, req.Params, id)
			}
		}
	})
}

func FuzzRewriteMessage(f *testing.F) {
	res, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": taskCreated(json.RawMessage(`{"taskId":"a"}`))})
	f.Add(res)
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":[],"capabilities":{}}}`))
	f.Add([]byte(`{"result":{"supportedVersions":1,"capabilities":null}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out := rewriteMessage(b)
		if !bytes.Equal(out, b) && !json.Valid(out) {
			t.Fatalf("%q rewritten to invalid JSON %q", b, out)
		}
		_ = rewriteEvent(append(append([]byte("data: "), b...), '\n', '\n'))
	})
}

// The params of a task request are read once, with exact keys: a key
// that differs from one berth reads only in case is refused (the header
// check and the dispatch could otherwise name different tasks), and what
// is dispatched is the keys berth read.
func TestParseTaskRequestTwins(t *testing.T) {
	for _, params := range []string{
		`{"taskId":"berth-REAL","taskid":"x"}`,
		`{"taskid":"x","taskId":"berth-REAL"}`,
		`{"taskId":"a","TaskId":"a"}`,
		`{"taskId":"a","_meta":{},"_META":{}}`,
		`{"taskId":"a","inputResponses":{},"inputresponses":{}}`,
		`{"taskId":"a","_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/ClientCapabilities":{}}}`,
		`{"taskId":"a","_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{},"Extensions":{}}}}`,
		`{"taskId":7}`,
		`[1]`,
	} {
		req, id, _, ok := parseTaskRequest([]byte(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":` + params + `}`))
		if !ok || req.bad == "" || id != "" || req.Params != nil {
			t.Errorf("params %s: bad %q, id %q, params %s, want refused", params, req.bad, id, req.Params)
		}
	}
	req, id, _, ok := parseTaskRequest([]byte(`{"jsonrpc":"2.0","id":1,"method":"tasks/update","params":{"taskId":"berth-1","inputResponses":{"k":{}},"other":1}}`))
	if !ok || req.bad != "" || id != "berth-1" || string(req.Params) != `{"inputResponses":{"k":{}},"taskId":"berth-1"}` {
		t.Fatalf("got %q %q %s", req.bad, id, req.Params)
	}
}

// Input requests of a task berth cannot place are not passed on: the
// answer is an error, not the plugin's input requests unchecked.
func TestCheckTaskInputFailsClosed(t *testing.T) {
	e := newEnv(t, nil)
	f := &front{s: e.srv, path: "/mcp"}
	res := json.RawMessage(`{"taskId":"berth-none","status":"input_required","inputRequests":{"k":{"method":"elicitation/create","params":{"message":"Delete a.txt?","requestedSchema":{"type":"object"}}}}}`)
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		out, err := f.s.checkTaskInput(context.Background(), f.taskOwner(), method, "berth-none", json.RawMessage(`{"taskId":"berth-none"}`), res)
		if err == nil {
			t.Errorf("%s: passed on %s", method, out)
		}
	}
	nested := json.RawMessage(`{"taskId":"berth-none","status":"completed","result":{"inputRequests":{"k":{"method":"elicitation/create","params":{"message":"Delete a.txt?"}}}}}`)
	if out, err := f.s.checkTaskInput(context.Background(), f.taskOwner(), "tasks/get", "berth-none", json.RawMessage(`{"taskId":"berth-none"}`), nested); err == nil {
		t.Errorf("a completed task's nested input requests: passed on %s", out)
	}
}
