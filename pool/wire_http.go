package pool

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The wire of a Streamable HTTP server (wire.go says why its connection
// is not wrapped): a request with a progress token of berth's is a POST
// whose answer, when the server streams it, is an event stream of its own
// carrying the server's notifications for it and then its answer. berth
// reads that stream as go-sdk reads it (tapStream wraps the response
// body): each notifications/progress is relayed the moment its bytes are
// read, before go-sdk has parsed them, and the answer closes the call, so
// nothing the server sends after it is relayed. go-sdk still handles the
// same progress afterwards (its notification handler): as its value is
// not greater than the last relayed, it is dropped. Progress that does not
// come on the request's own stream (a stream resumed after a break, or the
// session's GET stream) is relayed by go-sdk's handler only, while the
// call is open; it is not ordered with the answer.

// maxTapLine caps a line of an event stream that the tap keeps: a longer
// line's event is not looked at (progress notifications are small; a
// larger answer then closes its call when the caller is done, as go-sdk
// hands it over).
const maxTapLine = 64 << 10

// tapStream wraps the body of resp, the answer to r, if it is the event
// stream of a request with a progress token of berth's.
func tapStream(r *http.Request, resp *http.Response) {
	if resp == nil || resp.Body == nil || r.Method != http.MethodPost {
		return
	}
	oc, _ := r.Context().Value(openCallKey{}).(*openCall)
	if oc == nil || oc.token == "" {
		return
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "text/event-stream" {
		return
	}
	resp.Body = &sseTap{ReadCloser: resp.Body, oc: oc}
}

// sseTap reads an event stream as it passes (text/event-stream: lines
// ending in "\n", a "\r" before it dropped; "data:" lines make up an
// event's data, an empty line ends the event).
type sseTap struct {
	io.ReadCloser
	oc   *openCall
	line []byte // the line read so far
	over bool   // the line is longer than maxTapLine
	data []byte // the event's data so far
	bad  bool   // the event had a line too long: not looked at
	done bool   // the answer was read
}

func (t *sseTap) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if n > 0 && !t.done {
		t.scan(p[:n])
	}
	return n, err
}

func (t *sseTap) scan(b []byte) {
	for len(b) > 0 && !t.done {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if !t.over {
			if len(t.line)+len(chunk) > maxTapLine {
				t.over, t.line = true, t.line[:0]
			} else {
				t.line = append(t.line, chunk...)
			}
		}
		if i < 0 {
			return
		}
		b = b[i+1:]
		t.endLine()
	}
}

func (t *sseTap) endLine() {
	line := bytes.TrimSuffix(t.line, []byte("\r"))
	over := t.over
	t.line, t.over = t.line[:0], false
	switch {
	case over:
		t.bad = true
	case len(line) == 0:
		if !t.bad && len(t.data) > 0 {
			t.event(t.data)
		}
		t.data, t.bad = t.data[:0], false
	case bytes.HasPrefix(line, []byte("data:")):
		v := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
		if len(t.data) > 0 {
			t.data = append(t.data, '\n')
		}
		if len(t.data)+len(v) > maxTapLine {
			t.bad = true
			return
		}
		t.data = append(t.data, v...)
	}
}

// event looks at one event's data: a progress is relayed, the answer
// closes the call.
func (t *sseTap) event(data []byte) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(data, &m) != nil {
		return
	}
	switch {
	case m.Method == "notifications/progress":
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(m.Params, &p) == nil {
			if tok, ok := p.ProgressToken.(string); ok && tok == t.oc.token {
				t.oc.relayProgress(&p)
			}
		}
	case m.Method == "" && len(m.ID) > 0:
		t.oc.close()
		t.done = true
	}
}
