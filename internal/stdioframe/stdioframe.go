// Package stdioframe is the newline-delimited JSON-RPC framing of a stdio
// pipe, as go-sdk's mcp.IOTransport does it, but decoding each message
// once.
//
// go-sdk v1.8.0 decodes every message its ioConn reads three times, each
// time through a fresh streaming decoder that allocates and zeroes a
// 32 KiB buffer (internal/json.Unmarshal): once as a batch (which fails
// for a single message), once as the message, and once more for the
// method name. That is about 96 KiB of garbage per message, most of the
// cost of a relayed call's upstream read (bench/README.md). This package
// reads the stream exactly as ioConn does (encoding/json's stream
// decoder, the same frame-size limit and trailing-data rule) and decodes
// each message with the same JSON library and flags go-sdk uses
// (segmentio/encoding, case-sensitive fields, the same depth bound), in
// one pass without the streaming decoder. Batches are read and answered
// as ioConn reads and answers them.
//
// mcp.Transport and mcp.Connection are go-sdk's public extension points;
// nothing of go-sdk is patched.
package stdioframe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// Transport is a client's or server's end of a newline-delimited stdio
// pipe, a drop-in for mcp.IOTransport.
type Transport struct {
	Reader io.ReadCloser
	Writer io.WriteCloser
	// MaxLineLength bounds the bytes buffered while decoding one inbound
	// frame: 0 is mcp.DefaultMaxLineLength, a negative value no bound.
	MaxLineLength int
}

// Connect implements mcp.Transport.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	return newConn(t.Reader, t.Writer, t.MaxLineLength), nil
}

// Stdio is the process's own stdin and stdout, a drop-in for
// mcp.StdioTransport (closing the connection leaves stdout open).
func Stdio() *Transport {
	return &Transport{Reader: os.Stdin, Writer: nopCloser{os.Stdout}}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// conn is one connection. Read is called by one goroutine at a time
// (go-sdk's reader); Write and Close may be called concurrently.
type conn struct {
	r io.ReadCloser
	w io.WriteCloser

	writeMu sync.Mutex

	incoming <-chan frame
	queue    []jsonrpc.Message // unread messages of the last batch (reader only)

	batchMu sync.Mutex
	batches map[jsonrpc.ID]*batch

	// The protocol version this end negotiated when it answered an
	// initialize request: go-sdk's server tells its ioConn through an
	// unexported method, so berth reads it off the wire. Batches are
	// refused from 2025-06-18 on, as ioConn refuses them.
	versionMu sync.Mutex
	initID    jsonrpc.ID
	initSeen  bool
	version   string

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

type frame struct {
	msg json.RawMessage
	err error
}

// batch tracks the requests of one incoming batch until each has its
// response; the responses then go out as one array.
type batch struct {
	unresolved map[jsonrpc.ID]int
	responses  []*jsonrpc.Response
}

func newConn(r io.ReadCloser, w io.WriteCloser, maxLine int) *conn {
	limit := maxLine
	if limit == 0 {
		limit = mcp.DefaultMaxLineLength
	}
	incoming := make(chan frame)
	closed := make(chan struct{})
	// The read loop is ioConn's: a goroutine, so that Read can return as
	// soon as the connection is closed (a blocked read of a pipe cannot
	// be interrupted portably).
	go func() {
		var reader io.Reader = r
		var limiter *limitReader
		if limit > 0 {
			limiter = &limitReader{r: r, limit: limit}
			reader = limiter
		}
		dec := json.NewDecoder(reader)
		for {
			var raw json.RawMessage
			err := dec.Decode(&raw)
			if err == nil {
				var tr [1]byte
				if n, rerr := dec.Buffered().Read(tr[:]); n > 0 {
					if tr[0] != '\n' && tr[0] != '\r' {
						err = fmt.Errorf("invalid trailing data at the end of stream")
					}
				} else if rerr != nil && rerr != io.EOF {
					err = rerr
				}
			}
			select {
			case incoming <- frame{msg: raw, err: err}:
			case <-closed:
				return
			}
			if err != nil {
				return
			}
			if limiter != nil {
				limiter.count = 0
			}
		}
	}()
	return &conn{r: r, w: w, incoming: incoming, closed: closed}
}

// errFrameTooLarge is go-sdk's error for a frame above the limit.
var errFrameTooLarge = errors.New("inbound JSON-RPC frame exceeded the configured maximum line length")

type limitReader struct {
	r            io.Reader
	limit, count int
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.count >= l.limit {
		return 0, errFrameTooLarge
	}
	if len(p) > l.limit-l.count {
		p = p[:l.limit-l.count]
	}
	n, err := l.r.Read(p)
	l.count += n
	return n, err
}

// SessionID implements mcp.Connection: a pipe has no session id.
func (c *conn) SessionID() string { return "" }

// Read implements mcp.Connection.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	default:
	}
	if len(c.queue) > 0 {
		next := c.queue[0]
		c.queue = c.queue[1:]
		return next, nil
	}
	var raw json.RawMessage
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case f := <-c.incoming:
		if f.err != nil {
			return nil, f.err
		}
		raw = f.msg
	case <-c.closed:
		return nil, io.EOF
	}
	msgs, isBatch, err := DecodeBatch(raw)
	if err != nil {
		return nil, err
	}
	c.queue = msgs[1:]
	if isBatch {
		if v := c.negotiated(); v >= batchlessVersion {
			return nil, fmt.Errorf("JSON-RPC batching is not supported in %s and later (request version: %s)", batchlessVersion, v)
		}
		var b *batch
		for _, m := range msgs {
			// Only calls await a response. (ioConn tracks notifications
			// too, under the zero id, so a batch holding one is never
			// answered and one holding two is refused as a duplicate.)
			if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
				if b == nil {
					b = &batch{unresolved: make(map[jsonrpc.ID]int)}
				}
				if _, dup := b.unresolved[req.ID]; dup {
					return nil, fmt.Errorf("duplicate message ID %q", req.ID)
				}
				b.unresolved[req.ID] = len(b.responses)
				b.responses = append(b.responses, nil)
			}
		}
		if b != nil {
			if err := c.addBatch(b); err != nil {
				return nil, err
			}
		}
	}
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.Method == "initialize" && req.IsCall() {
			c.versionMu.Lock()
			c.initID, c.initSeen = req.ID, true
			c.versionMu.Unlock()
		}
	}
	return msgs[0], nil
}

// batchlessVersion is the first protocol version without JSON-RPC batches.
const batchlessVersion = "2025-06-18"

// negotiated is the protocol version of this end's initialize answer, or
// 2025-03-26 (the last version with batches) before one.
func (c *conn) negotiated() string {
	c.versionMu.Lock()
	defer c.versionMu.Unlock()
	if c.version == "" {
		return "2025-03-26"
	}
	return c.version
}

// answered notes the version an initialize answer negotiated.
func (c *conn) answered(resp *jsonrpc.Response) {
	c.versionMu.Lock()
	defer c.versionMu.Unlock()
	if !c.initSeen || resp.ID != c.initID || resp.Error != nil {
		return
	}
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if unmarshal(resp.Result, &r) == nil {
		c.version = r.ProtocolVersion
	}
	c.initSeen = false
}

func (c *conn) addBatch(b *batch) error {
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	for id := range b.unresolved {
		if _, ok := c.batches[id]; ok {
			return fmt.Errorf("invalid request: batch contains previously seen request %v", id.Raw())
		}
	}
	if c.batches == nil {
		c.batches = make(map[jsonrpc.ID]*batch)
	}
	for id := range b.unresolved {
		c.batches[id] = b
	}
	return nil
}

// updateBatch records resp in its batch: inBatch reports whether it
// belongs to one, and done is the batch's responses once resp was the last.
func (c *conn) updateBatch(resp *jsonrpc.Response) (done []*jsonrpc.Response, inBatch bool) {
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	b, ok := c.batches[resp.ID]
	if !ok {
		return nil, false
	}
	b.responses[b.unresolved[resp.ID]] = resp
	delete(b.unresolved, resp.ID)
	delete(c.batches, resp.ID)
	if len(b.unresolved) == 0 {
		return b.responses, true
	}
	return nil, true
}

// Write implements mcp.Connection.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.answered(resp)
		if done, inBatch := c.updateBatch(resp); inBatch {
			if len(done) == 0 {
				return nil
			}
			raws := make([]json.RawMessage, 0, len(done))
			for _, r := range done {
				raw, err := jsonrpc.EncodeMessage(r)
				if err != nil {
					return fmt.Errorf("encoding batch message: %w", err)
				}
				raws = append(raws, raw)
			}
			data, err := json.Marshal(raws)
			if err != nil {
				return err
			}
			_, err = c.w.Write(append(data, '\n'))
			return err
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %v", err)
	}
	_, err = c.w.Write(append(data, '\n'))
	return err
}

// Close implements mcp.Connection: it closes both ends of the pipe.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		rerr := c.r.Close()
		var werr error
		if c.w != nil {
			werr = c.w.Close()
		}
		c.closeErr = errors.Join(rerr, werr)
		close(c.closed)
	})
	return c.closeErr
}

// maxDepth is go-sdk's bound on the nesting of a decoded message.
const maxDepth = 1000

var errMaxDepth = fmt.Errorf("json: exceeded maximum nesting depth of %d", maxDepth)

// wire is one JSON-RPC message as go-sdk's jsonrpc2 decodes it.
type wire struct {
	VersionTag string          `json:"jsonrpc"`
	ID         any             `json:"id,omitempty"`
	Method     json.RawMessage `json:"method"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error  `json:"error,omitempty"`
}

// unmarshal is go-sdk's internal/json.Unmarshal without the streaming
// decoder: the same depth bound, library and flags.
func unmarshal(data []byte, v any) error {
	if err := checkDepth(data); err != nil {
		return err
	}
	// A streaming decoder reads the first value and ignores what follows;
	// so does Parse (the rest is returned, and dropped).
	_, err := segjson.Parse(data, v, segjson.DontMatchCaseInsensitiveStructFields)
	return err
}

// checkDepth is go-sdk's checkMaxDepth.
func checkDepth(data []byte) error {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxDepth {
				return errMaxDepth
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

// DecodeMessage decodes one message as jsonrpc.DecodeMessage does (same
// result, or an error where it errs), allocating a fraction of it.
func DecodeMessage(data []byte) (jsonrpc.Message, error) {
	var w wire
	if err := unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if w.VersionTag != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", w.VersionTag, "2.0")
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, err
	}
	if len(w.Method) > 0 {
		var method string
		if err := unmarshal(w.Method, &method); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return &jsonrpc.Request{Method: method, ID: id, Params: w.Params}, nil
	}
	if !id.IsValid() {
		return nil, errInvalidRequest
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil { // no typed nil in the error interface
		resp.Error = w.Error
	}
	return resp, nil
}

// errInvalidRequest is jsonrpc2.ErrInvalidRequest.
var errInvalidRequest = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request"}

// DecodeBatch decodes one frame, a message or a batch of them, as go-sdk's
// ioConn does (readBatch): an array is a batch, anything else one message.
func DecodeBatch(data []byte) (msgs []jsonrpc.Message, isBatch bool, _ error) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		var raws []json.RawMessage
		if err := unmarshal(data, &raws); err == nil {
			if len(raws) == 0 {
				return nil, true, fmt.Errorf("empty batch")
			}
			for _, raw := range raws {
				m, err := DecodeMessage(raw)
				if err != nil {
					return nil, true, err
				}
				msgs = append(msgs, m)
			}
			return msgs, true, nil
		}
	}
	m, err := DecodeMessage(data)
	if err != nil {
		return nil, false, err
	}
	return []jsonrpc.Message{m}, false, nil
}
