package mcpexport

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/pool"
)

// Tasks on the stdio front (`berth serve` over stdio, Claude Desktop's
// path), for a 2026-07-28 client. go-sdk's server cannot serve them
// (tasks.go), so taskConn, a Connection wrapped around berth's stdio
// framing (serveOne), does what the stateless front does in serveTasks
// and taskWriter:
//
//   - tasks/get, tasks/update and tasks/cancel are answered by taskConn,
//     never seen by go-sdk: -32021 without the extension in the request's
//     _meta clientCapabilities; else pool.TaskRequest, for this session's
//     tasks only (another's, or an ID berth did not give, is -32602), and
//     the params read strictly and rebuilt as on the stateless front
//     (parseTaskParams), a task whose tool left the view ended
//     (taskInView), and the input requests of every task-carrying result
//     checked as there (checkTaskInput);
//   - a tool result carrying a CreateTaskResult (taskCreated) is replaced
//     by it on the way out, and the result of server/discover (or of an
//     initialize at 2026-07-28 or later) gets the extension in its
//     capabilities;
//   - notifications/tasks/status of this session's tasks, and of no other
//     session's, are written to the client with berth's task IDs
//     (pool.Pool.NotifyTasks), each after the result that gave its task ID.
//
// The owner of the tasks is the session: one stdio client, named by a
// random owner string for the life of the connection.

// maxTaskNotes bounds the status notifications waiting to be written to
// a stdio client; more are dropped (the client can poll tasks/get).
const maxTaskNotes = 64

// maxTaskRequests bounds the task requests of one stdio client answered
// at once.
const maxTaskRequests = 16

// taskNoteWait is how long a status notification waits for the result
// that gives the client its task ID.
const taskNoteWait = 2 * time.Second

// newStdioTaskOwner names the owner of one stdio session's tasks.
func newStdioTaskOwner() string { return "stdio session " + rand.Text() }

// taskTransport wraps the transport of one stdio client (serveOne).
type taskTransport struct {
	mcp.Transport
	s     *Server
	owner string
	ctx   context.Context // the session's: origin, life
}

// Connect implements mcp.Transport.
func (t *taskTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(t.ctx)
	tc := &taskConn{Connection: c, s: t.s, owner: t.owner, ctx: cctx, cancel: cancel,
		advertise: map[any]bool{}, announced: map[string]chan struct{}{}, notes: make(chan *jsonrpc.Request, maxTaskNotes), inflight: make(chan struct{}, maxTaskRequests)}
	tc.stop = t.s.pool.NotifyTasks(t.owner, tc.deliver)
	go tc.writeNotes()
	return tc, nil
}

// SupportsProtocolVersion passes on what the wrapped transport supports.
func (t *taskTransport) SupportsProtocolVersion(v string) bool {
	if pvs, ok := t.Transport.(mcp.ProtocolVersionSupporter); ok {
		return pvs.SupportsProtocolVersion(v)
	}
	return true
}

type taskConn struct {
	mcp.Connection
	s      *Server
	owner  string
	ctx    context.Context
	cancel context.CancelFunc
	stop   func()
	notes  chan *jsonrpc.Request
	// inflight holds a token per task request being answered.
	inflight chan struct{}

	mu        sync.Mutex
	advertise map[any]bool             // IDs of server/discover and initialize requests
	announced map[string]chan struct{} // berth task ID: closed once the client was given it
}

func (c *taskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			return msg, nil
		}
		switch req.Method {
		case "tasks/get", "tasks/update", "tasks/cancel":
			if req.IsCall() {
				// At most maxTaskRequests at once; past that the pipe
				// waits, as it would for go-sdk.
				select {
				case c.inflight <- struct{}{}:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				go func() {
					defer func() { <-c.inflight }()
					c.serve(req)
				}()
			}
			continue // a notification so named has nothing to do
		case "server/discover", "initialize":
			if req.IsCall() {
				c.mu.Lock()
				c.advertise[req.ID.Raw()] = true
				c.mu.Unlock()
			}
		}
		return msg, nil
	}
}

// serve answers one request of the task surface.
func (c *taskConn) serve(req *jsonrpc.Request) {
	res, werr := c.answer(req)
	out := &jsonrpc.Response{ID: req.ID, Result: res}
	if werr != nil {
		out = &jsonrpc.Response{ID: req.ID, Error: werr}
	}
	_ = c.Connection.Write(c.ctx, out)
}

func (c *taskConn) answer(req *jsonrpc.Request) (json.RawMessage, *jsonrpc.Error) {
	params, taskID, declared, err := parseTaskParams(req.Params)
	if err != nil {
		return nil, &jsonrpc.Error{Code: pool.CodeInvalidParams, Message: "invalid params: " + err.Error()}
	}
	if !declared {
		return nil, missingTasksCapability(req.Method)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	err = c.s.taskInView(c.owner, taskID)
	var res json.RawMessage
	if err == nil {
		res, err = c.s.pool.TaskRequest(ctx, c.owner, req.Method, params)
	}
	if err == nil {
		res, err = c.s.checkTaskInput(ctx, c.owner, req.Method, taskID, params, res)
	}
	if err != nil {
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) {
			werr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "berth: " + err.Error()}
		}
		return nil, werr
	}
	return withCompleteType(res), nil
}

func (c *taskConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.Error == nil && len(resp.Result) > 0 {
		c.mu.Lock()
		adv := c.advertise[resp.ID.Raw()]
		delete(c.advertise, resp.ID.Raw())
		c.mu.Unlock()
		var taskID string
		switch {
		case bytes.Contains(resp.Result, []byte(taskResultKey)):
			r := *resp
			r.Result, taskID = rewriteResult(resp.Result, false)
			msg = &r
		case adv:
			r := *resp
			r.Result, _ = rewriteResult(resp.Result, true)
			msg = &r
		}
		if taskID != "" {
			err := c.Connection.Write(ctx, msg)
			c.announce(taskID)
			return err
		}
	}
	return c.Connection.Write(ctx, msg)
}

func (c *taskConn) Close() error {
	c.stop()
	c.cancel()
	return c.Connection.Close()
}

// announcement returns the channel closed once the client was given task id.
func (c *taskConn) announcement(id string) chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.announced[id]
	if ch == nil {
		ch = make(chan struct{})
		c.announced[id] = ch
	}
	return ch
}

func (c *taskConn) announce(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.announced[id]
	if ch == nil {
		ch = make(chan struct{})
		c.announced[id] = ch
	}
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// deliver queues a status notification of one of this session's tasks
// (pool.NotifyTasks: it must not block).
func (c *taskConn) deliver(method string, params json.RawMessage) {
	select {
	case c.notes <- &jsonrpc.Request{Method: method, Params: params}:
	default:
		c.s.log.Warn("dropped a task status notification: the stdio client is not reading them", "pending", maxTaskNotes)
	}
}

// writeNotes writes the queued status notifications in order, each after
// the result that gave the client its task.
func (c *taskConn) writeNotes() {
	for {
		select {
		case <-c.ctx.Done():
			return
		case n := <-c.notes:
			var p struct {
				TaskID string `json:"taskId"`
				Status string `json:"status"`
			}
			_ = json.Unmarshal(n.Params, &p)
			t := time.NewTimer(taskNoteWait)
			select {
			case <-c.announcement(p.TaskID):
			case <-t.C:
			case <-c.ctx.Done():
				t.Stop()
				return
			}
			t.Stop()
			end := c.s.traceWritten(c.ctx, n.Method)
			end(c.Connection.Write(c.ctx, n))
			if p.Status == "completed" || p.Status == "failed" || p.Status == "cancelled" {
				c.mu.Lock()
				delete(c.announced, p.TaskID)
				c.mu.Unlock()
			}
		}
	}
}

// missingTasksCapability is -32021 for a task request that did not
// declare the extension.
func missingTasksCapability(method string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: pool.CodeMissingRequiredCapability,
		Message: fmt.Sprintf("%s needs the client capability %s: declare it in _meta %q", method, pool.TasksExtension, mcp.MetaKeyClientCapabilities),
		Data:    json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + pool.TasksExtension + `":{}}}}`)}
}
