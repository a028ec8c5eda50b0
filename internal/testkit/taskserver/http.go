package taskserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTP is the fixture as a remote plugin server: go-sdk's stateless
// Streamable HTTP handler (protocol 2026-07-28) for everything but the
// task surface, which is answered per POST before the handler sees it.
// With sse set, those answers are event streams (one event) instead of
// JSON bodies; then the answer to tasks/get is preceded, on its stream, by
// a notifications/tasks/status of the task. It sends no other status
// notifications (a stateless server has no stream to send them on).
type HTTP struct {
	s         *Server
	inner     http.Handler
	sse       bool
	cancelled atomic.Int32
}

// NewHTTP returns the fixture's HTTP handler; alwaysTask as -always-task.
func NewHTTP(sse, alwaysTask bool) *HTTP {
	s := New()
	s.alwaysTask = alwaysTask
	h := &HTTP{s: s, sse: sse}
	s.onCancel = func() { h.cancelled.Add(1) }
	h.inner = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.sdk },
		&mcp.StreamableHTTPOptions{Stateless: true, DisableLocalhostProtection: true})
	return h
}

// Cancelled counts the tasks cancelled by tasks/cancel.
func (h *HTTP) Cancelled() int { return int(h.cancelled.Load()) }

func (h *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		h.inner.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	msg, err := jsonrpc.DecodeMessage(body)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok || !req.IsCall() {
		h.inner.ServeHTTP(w, r)
		return
	}
	res, handled := h.s.handle(req)
	if !handled {
		h.inner.ServeHTTP(w, r)
		return
	}
	b, err := jsonrpc.EncodeMessage(res)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if h.sse {
		w.Header().Set("Content-Type", "text/event-stream")
		if req.Method == "tasks/get" && res.Error == nil {
			// The task's status, as a notification on the answer's
			// stream before the answer.
			var st map[string]any
			_ = json.Unmarshal(res.Result, &st)
			n, _ := json.Marshal(map[string]any{"taskId": st["taskId"], "status": st["status"]})
			nb, _ := jsonrpc.EncodeMessage(&jsonrpc.Request{Method: "notifications/tasks/status", Params: n})
			_, _ = w.Write([]byte("event: message\ndata: " + string(nb) + "\n\n"))
		}
		_, _ = w.Write([]byte("event: message\ndata: " + string(b) + "\n\n"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
