package pool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Tasks on a Streamable HTTP plugin server (docs/relay.md §Tasks). go-sdk's
// client connection for it cannot be wrapped (wire.go), so the stdio
// hooks of tasks.go run in the remote guard's RoundTripper (remote.go),
// on the HTTP messages that carry the JSON-RPC ones:
//
//   - the POST of a tools/call: its body is decoded, tasksOnWrite makes it
//     task-augmented when its context carries a TaskCall (the same code as
//     stdio), and the body is encoded again;
//   - its answer, a JSON body or an event stream, is read before go-sdk
//     reads it: the response to the call goes through tasksOnRead (a
//     CreateTaskResult recorded under a berth task ID and replaced by an
//     empty tool result; one nobody asked for, or whose caller has gone,
//     refused and cancelled), a notifications/tasks/status on the stream
//     goes to the task's owner and is dropped for go-sdk;
//   - berth's own tasks/get, tasks/update and tasks/cancel are POSTs of
//     their own (httpRawRequest), with the headers go-sdk's transport would
//     set: MCP-Protocol-Version, Mcp-Method, the session's Mcp-Session-Id
//     if it has one, and the sign-in's bearer token (the guard adds the
//     declared headers and token as for every request).
//
// A stateless server has no stream after the call's own answer, so its
// status notifications, if it sends any elsewhere, are not read: clients
// poll with tasks/get.

// maxTaskEvent caps an event of a tools/call answer that berth reads for
// a task: a longer one passes unread (a CreateTaskResult is small; a
// task in a longer event is refused by Pool.send, uncancelled).
const maxTaskEvent = 1 << 20

// httpTasks reports whether c is a Streamable HTTP server's connection,
// whose HTTP messages berth reads for tasks (the guard knows c).
func (c *conn) httpTasks() bool {
	return c.guard != nil && c.guard.c == c && c.wire == nil && c.srv != nil
}

// carriesTasks reports whether berth carries tasks on c: stdio, or
// Streamable HTTP.
func (c *conn) carriesTasks() bool { return c.stdio() || c.httpTasks() }

// tasksOnPost sees the POST r before it goes: a tools/call is made
// task-augmented when asked (tasksOnWrite), and reports true: its answer
// is to be read (tasksOnAnswer).
func (c *conn) tasksOnPost(r *http.Request) (bool, error) {
	if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
		return false, nil
	}
	if m := r.Header.Get("Mcp-Method"); m != "" && m != "tools/call" {
		return false, nil
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return false, err
	}
	setBody := func(b []byte) {
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	setBody(body)
	msg, err := jsonrpc.DecodeMessage(body)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok || req.Method != "tools/call" || !req.IsCall() {
		return false, nil
	}
	if taskCallFrom(r.Context()) == nil {
		return true, nil
	}
	if err := c.tasksOnWrite(r.Context(), req); err != nil {
		return false, err
	}
	b, err := jsonrpc.EncodeMessage(req)
	if err != nil {
		return false, err
	}
	setBody(b)
	return true, nil
}

// tasksOnAnswer reads the answer to a tools/call POST before go-sdk does.
func (c *conn) tasksOnAnswer(resp *http.Response) error {
	if resp.Body == nil || resp.StatusCode != http.StatusOK {
		return nil
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		out := body
		if b, changed := c.taskMessage(body); changed {
			out = b
		}
		resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(out)), int64(len(out))
		resp.Header.Del("Content-Length")
	case "text/event-stream":
		pr, pw := io.Pipe()
		src := resp.Body
		resp.Body = &pipeBody{PipeReader: pr, src: src}
		go func() { pw.CloseWithError(c.rewriteEvents(src, pw)) }()
	}
	return nil
}

// pipeBody is an answer's body as rewritten: closing it closes the
// server's.
type pipeBody struct {
	*io.PipeReader
	src io.Closer
}

func (b *pipeBody) Close() error {
	b.PipeReader.Close()
	return b.src.Close()
}

// taskMessage passes one JSON-RPC message of an answer through tasksOnRead:
// the message as go-sdk is to see it, and true when it changed (nil when
// consumed).
func (c *conn) taskMessage(data []byte) ([]byte, bool) {
	if !mayBeTask(data) && !bytes.Contains(data, []byte("tasks")) {
		return nil, false // neither a task nor a status notification
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return nil, false
	}
	switch m := msg.(type) {
	case *jsonrpc.Response:
		if m.Error != nil || !mayBeTask(m.Result) {
			return nil, false
		}
	case *jsonrpc.Request:
		if m.IsCall() || (m.Method != "notifications/tasks/status" && m.Method != "notifications/tasks") {
			return nil, false
		}
	}
	if c.tasksOnRead(msg) {
		return nil, true
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return nil, false
	}
	return b, !bytes.Equal(b, data)
}

// rewriteEvents copies an event stream from src to w, each event whose
// data is a message of the task surface passed through taskMessage (an
// event consumed is dropped). An event over maxTaskEvent passes as it is.
func (c *conn) rewriteEvents(src io.Reader, w io.Writer) error {
	br := bufio.NewReader(src)
	var ev [][]byte // the event's lines, as read
	var data []byte
	size, over := 0, false
	flush := func() error {
		defer func() { ev, data, size, over = ev[:0], nil, 0, false }()
		if !over && len(data) > 0 {
			if b, changed := c.taskMessage(data); changed {
				if b == nil {
					return nil
				}
				var out bytes.Buffer
				for _, l := range ev {
					if !bytes.HasPrefix(l, []byte("data:")) {
						out.Write(l)
					}
				}
				out.WriteString("data: ")
				out.Write(b)
				out.WriteString("\n\n")
				_, err := w.Write(out.Bytes())
				return err
			}
		}
		for _, l := range ev {
			if _, err := w.Write(l); err != nil {
				return err
			}
		}
		_, err := w.Write([]byte("\n"))
		return err
	}
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			trim := bytes.TrimRight(line, "\r\n")
			switch {
			case len(trim) == 0 && line[len(line)-1] == '\n':
				if ferr := flush(); ferr != nil {
					return ferr
				}
			case over:
				if _, werr := w.Write(line); werr != nil {
					return werr
				}
			default:
				ev = append(ev, bytes.Clone(line))
				size += len(line)
				if bytes.HasPrefix(trim, []byte("data:")) {
					v := bytes.TrimPrefix(trim[len("data:"):], []byte(" "))
					if len(data) > 0 {
						data = append(data, '\n')
					}
					data = append(data, v...)
				}
				if size > maxTaskEvent {
					// Too long to hold: what was held goes out, the rest
					// passes as it comes.
					over = true
					for _, l := range ev {
						if _, werr := w.Write(l); werr != nil {
							return werr
						}
					}
					ev, data = ev[:0], nil
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				for _, l := range ev {
					if _, werr := w.Write(l); werr != nil {
						return werr
					}
				}
				return nil
			}
			return err
		}
	}
}

// httpRawRequest sends a request of berth's own (tasks.go's rawRequest)
// to a Streamable HTTP server as a POST of its own, and reads its answer.
func (c *conn) httpRawRequest(ctx context.Context, method string, params []byte) (json.RawMessage, error) {
	g := c.guard
	key := fmt.Sprintf("%s%d", rawPrefix, rawSeq.Add(1))
	rid, err := jsonrpc.MakeID(key)
	if err != nil {
		return nil, err
	}
	body, err := jsonrpc.EncodeMessage(&jsonrpc.Request{ID: rid, Method: method, Params: params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.ep.URL.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", c.protocol)
	req.Header.Set("Mcp-Method", method)
	if sid, _ := g.session.Load().(string); sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	if g.oauth != nil {
		// go-sdk's transport sets the sign-in's token on its requests
		// (the guard leaves it): berth sets it on its own.
		if ts, err := g.oauth.TokenSource(ctx); err == nil && ts != nil {
			if tok, err := ts.Token(); err == nil {
				tok.SetAuthHeader(req)
			}
		}
	}
	resp, err := g.client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s answered %s with HTTP status %d", c.srv.noun(), c.srv.id, method, resp.StatusCode)
	}
	var msgs [][]byte
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	lr := io.LimitReader(resp.Body, maxTaskEvent)
	switch mt {
	case "application/json":
		b, err := io.ReadAll(lr)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, b)
	case "text/event-stream":
		sc := bufio.NewScanner(lr)
		sc.Buffer(nil, maxTaskEvent)
		var data []byte
		for sc.Scan() {
			line := bytes.TrimRight(sc.Bytes(), "\r")
			if len(line) == 0 {
				if len(data) > 0 {
					msgs = append(msgs, data)
				}
				data = nil
				continue
			}
			if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				if len(data) > 0 {
					data = append(data, '\n')
				}
				data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
			}
		}
		if len(data) > 0 {
			msgs = append(msgs, data)
		}
	default:
		return nil, fmt.Errorf("%s %s answered %s with content type %q", c.srv.noun(), c.srv.id, method, mt)
	}
	for _, b := range msgs {
		msg, err := jsonrpc.DecodeMessage(b)
		if err != nil {
			continue
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			if m.ID != rid {
				continue
			}
			if m.Error != nil {
				return nil, m.Error
			}
			return m.Result, nil
		case *jsonrpc.Request:
			c.taskMessage(b) // a status notification on the way
		}
	}
	return nil, fmt.Errorf("%s %s sent no answer to %s", c.srv.noun(), c.srv.id, method)
}

// taskRoundTrip sends the POST of a task-augmented tools/call on rt, and
// reads its answer for a task (tasksOnAnswer), as taken off the server
// whether or not the caller still waits: the request does not end with
// the caller's context (it ends with the connection, or after the
// server's call timeout). When the caller has gone, the answer is still
// read to its end, so that a CreateTaskResult that comes late, which no
// client can be told of, is refused and cancelled (tasksOnRead), as on
// stdio.
func (c *conn) taskRoundTrip(rt http.RoundTripper, r *http.Request) (*http.Response, error) {
	caller := r.Context()
	limit := c.srv.callTime
	if limit <= 0 {
		limit = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(caller), limit)
	stop := context.AfterFunc(c.ctx, cancel)
	end := func() { stop(); cancel() }
	r = r.WithContext(ctx)
	type answer struct {
		resp *http.Response
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		resp, err := rt.RoundTrip(r)
		if err == nil {
			tapStream(r, resp)
			if err = c.tasksOnAnswer(resp); err != nil {
				resp.Body.Close()
				resp = nil
			}
		}
		ch <- answer{resp, err}
	}()
	select {
	case a := <-ch:
		if a.err != nil {
			end()
			return nil, a.err
		}
		a.resp.Body = &endBody{ReadCloser: a.resp.Body, end: end}
		return a.resp, nil
	case <-caller.Done():
		go func() {
			defer end()
			if a := <-ch; a.resp != nil {
				_, _ = io.Copy(io.Discard, a.resp.Body)
				a.resp.Body.Close()
			}
		}()
		return nil, context.Cause(caller)
	}
}

// endBody is an answer's body whose Close ends its request's context.
type endBody struct {
	io.ReadCloser
	end func()
}

func (b *endBody) Close() error {
	err := b.ReadCloser.Close()
	b.end()
	return err
}
