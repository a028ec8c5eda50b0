//lint:file-ignore SA1019 a task's input requests are relayed as a call's are, sampling (SEP-2577) included during its deprecation window

package mcpexport

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// Tasks (io.modelcontextprotocol/tasks, SEP-2663) on the client side.
// go-sdk v1.8.0's server knows nothing of them: it rejects tasks/get,
// tasks/update and tasks/cancel as unknown methods, and its CallToolResult
// cannot carry a CreateTaskResult. berth passes them through on
// `berth serve --http --stateless` (here) and, for a 2026-07-28 client,
// over stdio (tasks_stdio.go), the front being the place:
//
//   - front.serveTasks answers tasks/get, tasks/update and tasks/cancel
//     itself, before go-sdk: the request must declare the extension in its
//     _meta clientCapabilities (else -32021) and carry Mcp-Method and
//     Mcp-Name headers that match its body (else -32020); the pool passes
//     it to the plugin server that has the task (pool.TaskRequest).
//   - A tools/call whose request declares the extension goes through
//     go-sdk and the same policy, approval and audit as any call
//     (runTool), with a pool.TaskCall in its context. When the plugin
//     server created a task, runTool returns a tool result whose _meta
//     holds the CreateTaskResult under a key random to this process, and
//     taskWriter puts the CreateTaskResult in its place on the way out.
//   - taskWriter adds the extension to the capabilities of server/discover.
//
// A task's owner is the path of the listener it was created at (each
// profile's path its own): stateless requests have no session, so the
// task ID, 128 random bits only its creator is told, is the capability;
// another path, or an ID berth did not give, is -32602 unknown.

// taskResultKey is the _meta key of a CreateTaskResult on its way to
// taskWriter: random, so that no plugin server or client can forge one.
var taskResultKey = "berth-task-result-" + rand.Text()

type taskOwnerKey struct{}

// taskOwner is who may reach a task created through ctx's request; "" when
// the request came some way tasks are not passed through.
func taskOwner(ctx context.Context) string {
	o, _ := ctx.Value(taskOwnerKey{}).(string)
	return o
}

// declaresTasks reports whether a client's capabilities include the tasks
// extension.
func declaresTasks(caps *mcp.ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[pool.TasksExtension]
	return ok
}

// taskCall returns the pool.TaskCall for a tools/call, or nil when the
// call is not task-augmented: the client did not declare the extension,
// or it came some way tasks are not passed through.
func (c *call) taskCall(ctx context.Context) *pool.TaskCall {
	owner := taskOwner(ctx)
	if owner == "" || !declaresTasks(c.req.ClientCapabilities()) {
		return nil
	}
	switch c.origin.Transport {
	case TransportStateless:
	case TransportStdio:
		if c.req.ProtocolVersion() < modernProtocol {
			return nil // the extension is 2026-07-28's
		}
	default:
		return nil
	}
	return &pool.TaskCall{Owner: owner, Tool: c.tool}
}

// taskCreated is the result that carries a created task to taskWriter.
func taskCreated(raw json.RawMessage) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{}, Meta: mcp.Meta{taskResultKey: raw}}
}

// taskRequest is what serveTasks reads of a request.
type taskRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	// Params, once parseTaskRequest read them, are the keys berth reads
	// (taskId, inputResponses, _meta) and nothing else: what is checked
	// (the Mcp-Name header, the input requests) and what is served
	// (pool.TaskRequest) are the same task.
	Params json.RawMessage `json:"params"`

	// bad says why the params are refused (-32602); "" when they are not.
	bad string
}

// taskParamKeys are the params of tasks/get, tasks/update and
// tasks/cancel that berth reads.
var taskParamKeys = []string{"taskId", "inputResponses", "_meta"}

// parseTaskRequest reads a body that is one request of the task surface
// (tasks/get, tasks/update, tasks/cancel); ok is false for anything else.
// The params are read once, with exact keys: a key that differs from one
// berth reads only in case is refused (req.bad), since Go's decoders
// (go-sdk's, the plugin server's) would match either. The body is
// untrusted: FuzzParseTaskRequest.
func parseTaskRequest(body []byte) (req taskRequest, taskID string, declared bool, ok bool) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return req, "", false, false
	}
	if json.Unmarshal(body, &req) != nil {
		return req, "", false, false
	}
	switch req.Method {
	case "tasks/get", "tasks/update", "tasks/cancel":
	default:
		return req, "", false, false
	}
	params, taskID, declared, err := parseTaskParams(req.Params)
	if err != nil {
		req.bad, req.Params = "invalid params: "+err.Error(), nil
		return req, "", false, true
	}
	req.Params = params
	return req, taskID, declared, true
}

// parseTaskParams reads the params of a task request (tasks/get,
// tasks/update, tasks/cancel) once, with exact keys: a key that differs
// from one berth reads only in case is refused, since Go's decoders
// (go-sdk's, the plugin server's) would match either. It returns the
// params rebuilt from the keys berth reads (taskId, inputResponses,
// _meta) and nothing else, so that what is checked and what is served
// are the same task; the task ID; and whether the _meta
// clientCapabilities declare the extension. Untrusted:
// FuzzParseTaskRequest.
func parseTaskParams(raw json.RawMessage) (params json.RawMessage, taskID string, declared bool, err error) {
	bad := func(why string) (json.RawMessage, string, bool, error) {
		return nil, "", false, errors.New(why)
	}
	var p map[string]json.RawMessage
	if len(raw) > 0 && json.Unmarshal(raw, &p) != nil {
		return bad("params must be an object")
	}
	for _, k := range taskParamKeys {
		if err := foldTwin(p, k); err != nil {
			return bad(err.Error())
		}
	}
	var meta map[string]json.RawMessage
	if raw, has := p["_meta"]; has && json.Unmarshal(raw, &meta) != nil {
		return bad("_meta must be an object")
	}
	for _, k := range []string{mcp.MetaKeyClientCapabilities, mcp.MetaKeyClientInfo} {
		if err := foldTwin(meta, k); err != nil {
			return bad("_meta: " + err.Error())
		}
	}
	var caps map[string]json.RawMessage
	if raw, has := meta[mcp.MetaKeyClientCapabilities]; has && json.Unmarshal(raw, &caps) != nil {
		return bad("_meta " + mcp.MetaKeyClientCapabilities + " must be an object")
	}
	if err := foldTwin(caps, "extensions"); err != nil {
		return bad("client capabilities: " + err.Error())
	}
	var ext map[string]json.RawMessage
	if raw, has := caps["extensions"]; has && json.Unmarshal(raw, &ext) != nil {
		return bad("client capabilities: extensions must be an object")
	}
	_, declared = ext[pool.TasksExtension]
	if raw, has := p["taskId"]; has && json.Unmarshal(raw, &taskID) != nil {
		return bad("taskId must be a string")
	}
	kept := map[string]json.RawMessage{}
	for _, k := range taskParamKeys {
		if raw, has := p[k]; has {
			kept[k] = raw
		}
	}
	if params, err = json.Marshal(kept); err != nil {
		return bad(err.Error())
	}
	return params, taskID, declared, nil
}

// foldTwin refuses an object with a key that differs from key only in
// case.
func foldTwin(m map[string]json.RawMessage, key string) error {
	for k := range m {
		if k != key && strings.EqualFold(k, key) {
			return fmt.Errorf("ambiguous keys %q and %q: send each key once, spelled exactly", k, key)
		}
	}
	return nil
}

// serveTasks answers a request of the task surface; false leaves the
// request to go-sdk.
func (f *front) serveTasks(w http.ResponseWriter, r *http.Request, body []byte) bool {
	req, taskID, declared, ok := parseTaskRequest(body)
	if !ok {
		return false
	}
	id := req.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	fail := func(status int, e *jsonrpc.Error) bool {
		writeRPC(w, status, id, nil, e)
		return true
	}
	if len(req.ID) == 0 || bytes.Equal(req.ID, []byte("null")) {
		return fail(http.StatusBadRequest, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: req.Method + " is a request: it needs an id"})
	}
	if req.bad != "" {
		return fail(http.StatusBadRequest, &jsonrpc.Error{Code: pool.CodeInvalidParams, Message: req.bad})
	}
	if m := strings.TrimSpace(r.Header.Get("Mcp-Method")); m != req.Method {
		return fail(http.StatusBadRequest, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf("the Mcp-Method header (%q) must name the body's method %q", m, req.Method)})
	}
	if n := strings.TrimSpace(r.Header.Get("Mcp-Name")); n != taskID {
		return fail(http.StatusBadRequest, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf("the Mcp-Name header (%q) must be the body's params.taskId (%q)", n, taskID)})
	}
	if !declared {
		return fail(http.StatusBadRequest, missingTasksCapability(req.Method))
	}
	ctx, stop := f.s.requests.bind(r.Context(), r.Header)
	defer stop()
	owner := f.taskOwner()
	err := f.s.taskInView(owner, taskID)
	var res json.RawMessage
	if err == nil {
		res, err = f.s.pool.TaskRequest(ctx, owner, req.Method, req.Params)
	}
	if err == nil {
		res, err = f.s.checkTaskInput(ctx, owner, req.Method, taskID, req.Params, res)
	}
	if err != nil {
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) {
			werr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "berth: " + err.Error()}
		}
		return fail(http.StatusOK, werr)
	}
	writeRPC(w, http.StatusOK, id, withCompleteType(res), nil)
	return true
}

// taskInView ends owner's task id when its tool is no longer in f's view
// (the profile was narrowed or removed), as a deny does: the task ran on
// a call the view allowed. An error is a view berth could not read (the
// request is refused).
func (s *Server) taskInView(owner, id string) error {
	from, tool, ok := s.pool.TaskOrigin(owner, id)
	if !ok {
		return nil // pool.TaskRequest says unknown
	}
	err := s.viewRefusal(pool.RequestTool, from.Plugin, tool)
	var niv *notInViewError
	var rp *RemovedProfileError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &niv) || errors.As(err, &rp):
		s.pool.EndTask(owner, id, "berth no longer offers "+tool+" here: "+err.Error())
		return nil
	default:
		return fmt.Errorf("reading the view of task %s: %w", id, err)
	}
}

// taskOwner is the owner of the tasks created at f (see the package
// comment above).
func (f *front) taskOwner() string { return "stateless " + f.path }

// withCompleteType gives a result that has no resultType "complete".
func withCompleteType(res json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(res, &m) != nil || m == nil {
		return res
	}
	if _, ok := m["resultType"]; ok {
		return res
	}
	m["resultType"] = json.RawMessage(`"complete"`)
	out, err := json.Marshal(m)
	if err != nil {
		return res
	}
	return out
}

func writeRPC(w http.ResponseWriter, status int, id, result json.RawMessage, e *jsonrpc.Error) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if e != nil {
		msg["error"] = e
	} else {
		msg["result"] = result
	}
	b, _ := json.Marshal(msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// taskWriter is go-sdk's response writer on the stateless front: it puts
// a CreateTaskResult in place of the tool result that carries it, and the
// tasks extension into server/discover's capabilities. JSON bodies are
// held to the end (finish); SSE events pass one by one.
type taskWriter struct {
	http.ResponseWriter
	sse     bool
	held    bool
	buf     []byte
	written bool
}

func (w *taskWriter) WriteHeader(code int) {
	if w.written {
		return
	}
	w.written = true
	ct := w.Header().Get("Content-Type")
	w.sse = strings.HasPrefix(ct, "text/event-stream")
	w.held = strings.HasPrefix(ct, "application/json")
	if w.held || w.sse {
		w.Header().Del("Content-Length")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *taskWriter) Write(p []byte) (int, error) {
	if !w.written {
		w.WriteHeader(http.StatusOK)
	}
	switch {
	case w.held:
		w.buf = append(w.buf, p...)
		return len(p), nil
	case w.sse:
		w.buf = append(w.buf, p...)
		for {
			i := bytes.Index(w.buf, []byte("\n\n"))
			if i < 0 {
				return len(p), nil
			}
			ev := rewriteEvent(w.buf[:i+2])
			w.buf = w.buf[i+2:]
			if _, err := w.ResponseWriter.Write(ev); err != nil {
				return 0, err
			}
		}
	default:
		return w.ResponseWriter.Write(p)
	}
}

func (w *taskWriter) Flush() {
	if w.held {
		return
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *taskWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes what is held.
func (w *taskWriter) finish() {
	if len(w.buf) == 0 {
		return
	}
	out := w.buf
	if w.held && (bytes.Contains(out, []byte(taskResultKey)) || bytes.Contains(out, []byte(`"supportedVersions"`))) {
		out = rewriteMessage(out)
	}
	w.buf = nil
	_, _ = w.ResponseWriter.Write(out)
}

// rewriteEvent rewrites the data of one SSE event.
func rewriteEvent(ev []byte) []byte {
	if !bytes.Contains(ev, []byte(taskResultKey)) && !bytes.Contains(ev, []byte(`"supportedVersions"`)) {
		return ev
	}
	lines := bytes.Split(ev, []byte("\n"))
	for i, l := range lines {
		if d, ok := bytes.CutPrefix(l, []byte("data: ")); ok {
			lines[i] = append([]byte("data: "), rewriteMessage(d)...)
		} else if d, ok := bytes.CutPrefix(l, []byte("data:")); ok {
			lines[i] = append([]byte("data:"), rewriteMessage(d)...)
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

// rewriteMessage rewrites one JSON-RPC response: a tool result carrying a
// CreateTaskResult becomes it; server/discover's capabilities get the
// tasks extension. Anything else is returned as is.
func rewriteMessage(b []byte) []byte {
	var msg map[string]json.RawMessage
	if json.Unmarshal(b, &msg) != nil {
		return b
	}
	res, _ := rewriteResult(msg["result"], true)
	if bytes.Equal(res, msg["result"]) {
		return b
	}
	msg["result"] = res
	out, err := json.Marshal(msg)
	if err != nil {
		return b
	}
	return out
}

// rewriteResult rewrites one result: a tool result carrying a
// CreateTaskResult becomes it (taskID is berth's ID of the task); with
// discover, a server/discover or initialize result gets the tasks
// extension in its capabilities. Anything else is returned as is.
func rewriteResult(b json.RawMessage, discover bool) (out json.RawMessage, taskID string) {
	var res map[string]json.RawMessage
	if json.Unmarshal(b, &res) != nil || res == nil {
		return b, ""
	}
	var meta map[string]json.RawMessage
	_ = json.Unmarshal(res["_meta"], &meta)
	if created, ok := meta[taskResultKey]; ok {
		var t struct {
			TaskID string `json:"taskId"`
		}
		_ = json.Unmarshal(created, &t)
		return created, t.TaskID
	}
	if !discover {
		return b, ""
	}
	_, discovered := res["supportedVersions"]
	var v string
	_ = json.Unmarshal(res["protocolVersion"], &v)
	if !discovered && v < modernProtocol {
		return b, ""
	}
	var caps map[string]json.RawMessage
	if json.Unmarshal(res["capabilities"], &caps) != nil || caps == nil {
		return b, ""
	}
	var ext map[string]json.RawMessage
	_ = json.Unmarshal(caps["extensions"], &ext)
	if ext == nil {
		ext = map[string]json.RawMessage{}
	}
	ext[pool.TasksExtension] = json.RawMessage("{}")
	caps["extensions"], _ = json.Marshal(ext)
	res["capabilities"], _ = json.Marshal(caps)
	out, err := json.Marshal(res)
	if err != nil {
		return b, ""
	}
	return out, ""
}

// serveStateless serves a request on the stateless front: the task
// surface first, then go-sdk through taskWriter.
func (f *front) serveStateless(w http.ResponseWriter, r *http.Request, body []byte) {
	if body != nil && f.serveTasks(w, r, body) {
		return
	}
	tw := &taskWriter{ResponseWriter: w}
	defer tw.finish()
	ctx := context.WithValue(r.Context(), taskOwnerKey{}, f.taskOwner())
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ctx = context.WithValue(ctx, flightClientKey{}, host) // era.go flightOwner
	f.sdk.ServeHTTP(tw, r.WithContext(ctx))
}

// checkTaskInput applies to the input requests of a task-carrying result
// (of tasks/get, tasks/update or tasks/cancel: its inputRequests, and a
// completed task's result's) what a tool call's input requests get
// (relay_input.go): the plugin's sampling and elicitation policy, the
// client's declared capabilities, an elicitation's message and schema
// escaped and marked with their origin, each audited. When one is
// refused the task is cancelled (at the server and for the client, with
// why) and the result says so. It fails closed: input requests of a task
// berth cannot place are not passed on.
func (s *Server) checkTaskInput(ctx context.Context, owner, method, taskID string, params, res json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if json.Unmarshal(res, &m) != nil {
		return res, nil
	}
	var nested map[string]json.RawMessage
	if raw, ok := m["result"]; ok {
		_ = json.Unmarshal(raw, &nested)
	}
	if !hasInputRequests(m) && !hasInputRequests(nested) {
		return res, nil
	}
	from, tool, ok := s.pool.TaskOrigin(owner, taskID)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("berth cannot check the input requests of task %s: it no longer knows the task, so it did not pass them on", taskID)}
	}
	var p struct {
		Meta struct {
			Caps *mcp.ClientCapabilities `json:"io.modelcontextprotocol/clientCapabilities"`
			Info *mcp.Implementation     `json:"io.modelcontextprotocol/clientInfo"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(params, &p)
	o := originOf(ctx)
	r := &callRelay{s: s, client: printableClient(p.Meta.Info), caps: p.Meta.Caps, modern: true,
		entry: AuditEntry{Tool: tool, Client: printableClient(p.Meta.Info), Transport: o.Transport, Authenticated: o.Authenticated}}
	refused := s.checkInputRequests(r, from, m)
	if refused == nil && nested != nil && hasInputRequests(nested) {
		if refused = s.checkInputRequests(r, from, nested); refused == nil {
			m["result"], refused = json.Marshal(nested)
		}
	}
	if refused != nil {
		why := "berth did not pass on what " + tool + " asked for: " + refused.Error()
		s.pool.EndTask(owner, taskID, why)
		if method != "tasks/get" {
			delete(m, "inputRequests")
			delete(m, "result")
			return json.Marshal(m)
		}
		return s.pool.TaskRequest(ctx, owner, "tasks/get", params)
	}
	return json.Marshal(m)
}

// hasInputRequests reports whether a result has input requests.
func hasInputRequests(m map[string]json.RawMessage) bool {
	raw := bytes.TrimSpace(m["inputRequests"])
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// checkInputRequests checks m's inputRequests (checkTaskInput) and puts
// them back escaped and marked; an error is the first one refused.
func (s *Server) checkInputRequests(r *callRelay, from pool.Origin, m map[string]json.RawMessage) error {
	if !hasInputRequests(m) {
		return nil
	}
	caps := r.caps
	var reqs map[string]json.RawMessage
	if err := json.Unmarshal(m["inputRequests"], &reqs); err != nil {
		return fmt.Errorf("the inputRequests are not an object: %v", err)
	}
	var refused error
	for key, raw := range reqs {
		var ir struct {
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
		}
		if err := json.Unmarshal(raw, &ir); err != nil {
			return fmt.Errorf("the input request %q is not one: %v", key, err)
		}
		if ir.Params == nil {
			ir.Params = map[string]any{}
		}
		var kind pool.RequestKind
		declared := false
		switch ir.Method {
		case "elicitation/create":
			kind, declared = pool.RequestElicitation, elicitsForms(caps)
			method := fmt.Sprintf("the input request %q", key)
			msg, _ := ir.Params["message"].(string)
			msg, err := relayedMessage(from, method, msg)
			var schema any
			if err == nil {
				schema, err = relayedSchema(from, method, ir.Params["requestedSchema"])
			}
			if err != nil {
				r.audit(from, kind, s.pool.RelayPolicy(from.Plugin, kind), OutcomeRefused, err.Error())
				refused = err
				continue
			}
			ir.Params["message"], ir.Params["requestedSchema"] = msg, schema
			meta, _ := ir.Params["_meta"].(map[string]any)
			ir.Params["_meta"] = map[string]any(metaWithOrigin(mcp.Meta(meta), from))
		case "sampling/createMessage":
			kind, declared = pool.RequestSampling, caps != nil && caps.Sampling != nil
		default:
			refused = fmt.Errorf("the server asked for %q (%q) during the task, which berth does not pass on during a task", ir.Method, key)
			continue
		}
		pm := s.pool.RelayPolicy(from.Plugin, kind)
		switch {
		case pm.Action == store.ActionDeny:
			refused = fmt.Errorf("the operator's policy denies %s for plugin %s (rule %q); change it with `berth policy set %s ask`", kind, from.Plugin, pm.Pattern, pool.RelayPolicyName(from.Plugin, kind))
			r.audit(from, kind, pm, OutcomeRefused, refused.Error())
			continue
		case !declared:
			refused = fmt.Errorf("the server asked for %s (%q), and the client did not declare the %s capability", kind, key, kind)
			r.audit(from, kind, pm, OutcomeRefused, refused.Error())
			continue
		}
		r.audit(from, kind, pm, OutcomeRan, "passed to the client as an input request of a task")
		var err error
		if reqs[key], err = json.Marshal(ir); err != nil {
			return err
		}
	}
	if refused != nil {
		return refused
	}
	var err error
	m["inputRequests"], err = json.Marshal(reqs)
	return err
}
