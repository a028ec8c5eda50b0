package mcpexport

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// requestHeader carries, from front to the tool handler, the key of the
// HTTP request a JSON-RPC request came in (go-sdk hands a handler the
// request's header). A client cannot set it: front replaces it.
const requestHeader = "Berth-Internal-Request"

// front sits between the guard and go-sdk's handler of one path of one
// listener (/mcp, /profiles/NAME/mcp, or their /sse). It bounds what a
// client can hold: the time to send a body, a response that cannot be
// written, the number of sessions (with every other path of the
// listener: sessionCap) and their idle time. It checks request bodies for
// ambiguous JSON before go-sdk decodes them, and it records each POST's
// context, so that a call whose HTTP request went away is withdrawn. Each
// path has a go-sdk handler of its own, so a session made at one path is
// unknown at every other.
type front struct {
	s    *Server
	o    *HTTPOptions
	sdk  http.Handler
	path string
	cap  *sessionCap
}

// sessionCap is what the paths of one listener share: their sessions,
// which HTTPOptions.MaxSessions counts together.
type sessionCap struct {
	mu       sync.Mutex
	sessions map[sessionAt]*sessionUse
	reserved int // sessions being created
}

// sessionAt names a session: the path it was made at and its session ID
// (streamable) or sessionid (SSE).
type sessionAt struct{ path, id string }

// sessionUse is what front knows of one session: requests in flight and
// the last activity, for the idle timeout and eviction.
type sessionUse struct {
	f     *front // the path the session was made at
	id    string
	busy  int
	last  time.Time
	life  *sessionLife       // ends the calls of the session
	stop  context.CancelFunc // SSE: ends the session's stream
	timer *time.Timer        // SSE: the idle timer
}

var errTooManySessions = errors.New("too many sessions")

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	iw := &idleWriter{ResponseWriter: w, rc: rc, idle: f.o.WriteIdleTimeout}
	defer iw.finish()
	r.Header.Del(requestHeader)
	var body []byte
	if r.Method == http.MethodPost && r.Body != nil {
		var err error
		body, err = f.readBody(iw, r, rc)
		if err != nil {
			return
		}
		if ids, err := checkBody(body); err != nil {
			f.refuse(iw, r, ids, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		key := f.s.requests.add(r.Context())
		defer f.s.requests.remove(key)
		r.Header.Set(requestHeader, key)
	}
	switch {
	case f.o.SSE:
		f.serveSSE(iw, r)
	case f.o.Stateless:
		f.serveStateless(iw, r, body)
	default:
		f.serveStreamable(iw, r)
	}
}

// readBody reads a POST body within the read timeout and go-sdk's size
// limit, and answers the request itself when it cannot.
func (f *front) readBody(w http.ResponseWriter, r *http.Request, rc *http.ResponseController) ([]byte, error) {
	_ = rc.SetReadDeadline(time.Now().Add(f.o.ReadTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, mcp.DefaultMaxRequestBodyBytes))
	// The rest of the request may stream for long: no deadline on it.
	_ = rc.SetReadDeadline(time.Time{})
	if err == nil {
		return body, nil
	}
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
	case errors.As(err, &ne) && ne.Timeout():
		w.Header().Set("Connection", "close")
		http.Error(w, fmt.Sprintf("the request body did not arrive within %s", f.o.ReadTimeout), http.StatusRequestTimeout)
	default:
		http.Error(w, "failed to read body", http.StatusBadRequest)
	}
	return nil, err
}

// refuse answers a body with ambiguous JSON: a JSON-RPC error for each
// request in it (HTTP 200 for the legacy protocol, where clients read
// errors from a normal response; 400 for 2026-07-28, SSE and batches).
func (f *front) refuse(w http.ResponseWriter, r *http.Request, ids []jsonrpc.ID, err error) {
	f.s.logRefused("", err)
	jerr := refusedParams("", err)
	status := http.StatusOK
	if f.o.SSE || r.Header.Get("Mcp-Protocol-Version") >= modernProtocol || len(ids) != 1 {
		status = http.StatusBadRequest
	}
	var out []byte
	switch len(ids) {
	case 0:
		out, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{Error: jerr})
	case 1:
		out, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: ids[0], Error: jerr})
	default:
		var all []json.RawMessage
		for _, id := range ids {
			m, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: jerr})
			all = append(all, m)
		}
		out, _ = json.Marshal(all)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(out)
}

func (f *front) serveStreamable(w http.ResponseWriter, r *http.Request) {
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
		if r.Method == http.MethodDelete {
			f.cap.mu.Lock()
			u := f.cap.sessions[sessionAt{f.path, sid}]
			f.cap.mu.Unlock()
			if u != nil && u.life != nil {
				u.life.end(errSessionEnded)
			}
		}
		f.begin(sid)
		defer f.end(sid)
		f.sdk.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost {
		f.sdk.ServeHTTP(w, r)
		return
	}
	// A POST without a session ID makes a session.
	if err := f.makeRoom(); err != nil {
		f.refuseSession(w)
		return
	}
	// The session's handlers derive their context from this request's,
	// values included: the life of the session rides on it. It must not
	// end with this request, so it is not derived from its cancellation.
	life := newLife()
	r = r.WithContext(context.WithValue(r.Context(), lifeKey{}, life))
	f.sdk.ServeHTTP(w, r)
	f.cap.mu.Lock()
	f.cap.reserved--
	if id := w.Header().Get("Mcp-Session-Id"); id != "" {
		if _, ok := f.cap.sessions[sessionAt{f.path, id}]; !ok {
			f.cap.sessions[sessionAt{f.path, id}] = &sessionUse{f: f, id: id, last: time.Now(), life: life}
		}
	}
	f.cap.mu.Unlock()
}

func (f *front) serveSSE(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		sid := r.URL.Query().Get("sessionid")
		f.begin(sid)
		defer f.end(sid)
		f.sdk.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodGet {
		f.sdk.ServeHTTP(w, r)
		return
	}
	if err := f.makeRoom(); err != nil {
		f.refuseSession(w)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ctx, life := withLife(ctx, errSessionGone)
	u := &sessionUse{f: f, last: time.Now(), stop: cancel, life: life}
	u.timer = time.AfterFunc(f.o.SessionIdleTimeout, cancel)
	defer u.timer.Stop()
	sw := &endpointSniffer{ResponseWriter: w, found: func(id string) {
		f.cap.mu.Lock()
		defer f.cap.mu.Unlock()
		u.id = id
		f.cap.sessions[sessionAt{f.path, id}] = u
		f.cap.reserved--
	}}
	f.sdk.ServeHTTP(sw, r.WithContext(ctx))
	f.cap.mu.Lock()
	if u.id == "" {
		f.cap.reserved--
	} else if f.cap.sessions[sessionAt{f.path, u.id}] == u {
		delete(f.cap.sessions, sessionAt{f.path, u.id})
	}
	f.cap.mu.Unlock()
}

// begin and end bracket a request of a session.
func (f *front) begin(id string) {
	f.cap.mu.Lock()
	defer f.cap.mu.Unlock()
	if u := f.cap.sessions[sessionAt{f.path, id}]; u != nil {
		u.busy++
		if u.timer != nil {
			u.timer.Stop()
		}
	}
}

func (f *front) end(id string) {
	f.cap.mu.Lock()
	defer f.cap.mu.Unlock()
	if u := f.cap.sessions[sessionAt{f.path, id}]; u != nil {
		u.busy--
		u.last = time.Now()
		if u.busy == 0 && u.timer != nil {
			u.timer.Reset(f.o.SessionIdleTimeout)
		}
	}
}

// refuseSession answers a new session that makeRoom found no room for.
func (f *front) refuseSession(w http.ResponseWriter) {
	err := &SessionLimitError{Max: f.o.MaxSessions, Raise: f.s.hints.MaxSessions}
	http.Error(w, "Service Unavailable: "+err.Error()+"; try again later", http.StatusServiceUnavailable)
}

// SessionLimitError refuses a new session of a listener that has Max
// sessions, all busy (HTTPOptions.MaxSessions). Raise is Hints.MaxSessions;
// empty, it is left out of the message.
type SessionLimitError struct {
	Max   int
	Raise string
}

func (e *SessionLimitError) Error() string {
	limit := "the limit"
	if e.Raise != "" {
		limit += ", " + e.Raise
	}
	return fmt.Sprintf("this listener has %d sessions, all busy (%s)", e.Max, limit)
}

// makeRoom reserves a place for a new session: when the listener is at
// its cap (the sessions of all its paths) it closes the session idle the
// longest, of whichever path, and fails when every session is busy.
func (f *front) makeRoom() error {
	f.cap.mu.Lock()
	if !f.o.SSE {
		// Sessions go away on their own (idle timeout, DELETE): forget
		// those. Each path's sessions live in its Server's go-sdk server.
		live := map[*Server]map[string]bool{}
		for at, u := range f.cap.sessions {
			ids := live[u.f.s]
			if ids == nil {
				ids = map[string]bool{}
				for ss := range u.f.s.ms.Sessions() {
					if id := ss.ID(); id != "" {
						ids[id] = true
					}
				}
				live[u.f.s] = ids
			}
			if !ids[at.id] {
				delete(f.cap.sessions, at)
			}
		}
	}
	if len(f.cap.sessions)+f.cap.reserved < f.o.MaxSessions {
		f.cap.reserved++
		f.cap.mu.Unlock()
		return nil
	}
	var oldest *sessionUse
	for _, u := range f.cap.sessions {
		if u.busy == 0 && (oldest == nil || u.last.Before(oldest.last)) {
			oldest = u
		}
	}
	if oldest == nil {
		f.cap.mu.Unlock()
		return errTooManySessions
	}
	delete(f.cap.sessions, sessionAt{oldest.f.path, oldest.id})
	f.cap.reserved++
	f.cap.mu.Unlock()
	f.s.log.Info("closing the session idle the longest, to make room for a new one", "idle", time.Since(oldest.last).Round(time.Second).String(), "max_sessions", f.o.MaxSessions, "path", oldest.f.path)
	if oldest.life != nil {
		oldest.life.end(errSessionEnded)
	}
	if oldest.stop != nil {
		oldest.stop()
		return nil
	}
	for ss := range oldest.f.s.ms.Sessions() {
		if ss.ID() == oldest.id {
			ss.Close()
		}
	}
	return nil
}

// idleWriter gives every write and flush of a response a fresh deadline:
// a response that cannot be written for the idle timeout (its client
// stopped reading) fails, while a stream that is only quiet stays open.
type idleWriter struct {
	http.ResponseWriter
	rc   *http.ResponseController
	idle time.Duration
}

func (w *idleWriter) arm() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.idle)) }

func (w *idleWriter) Write(p []byte) (int, error) {
	w.arm()
	return w.ResponseWriter.Write(p)
}

func (w *idleWriter) WriteHeader(code int) {
	w.arm()
	w.ResponseWriter.WriteHeader(code)
}

func (w *idleWriter) FlushError() error {
	w.arm()
	return w.rc.Flush()
}

func (w *idleWriter) Flush() { _ = w.FlushError() }

func (w *idleWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish gives what net/http writes after the handler (the end of a
// chunked body) a deadline of its own.
func (w *idleWriter) finish() { w.arm() }

// endpointSniffer reads the session ID out of the endpoint event that
// go-sdk's SSE handler writes first ("data: /sse?sessionid=ID").
type endpointSniffer struct {
	http.ResponseWriter
	buf   []byte
	done  bool
	found func(id string)
}

func (w *endpointSniffer) Write(p []byte) (int, error) {
	if !w.done {
		w.buf = append(w.buf, p...)
		if i := bytes.Index(w.buf, []byte("sessionid=")); i >= 0 {
			rest := w.buf[i+len("sessionid="):]
			if j := bytes.IndexAny(rest, "&\r\n"); j >= 0 {
				w.done = true
				w.found(string(rest[:j]))
				w.buf = nil
			}
		} else if len(w.buf) > 4096 {
			w.done = true
			w.buf = nil
		}
	}
	return w.ResponseWriter.Write(p)
}

func (w *endpointSniffer) FlushError() error {
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *endpointSniffer) Flush() { _ = w.FlushError() }

func (w *endpointSniffer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// liveRequests holds the context of each POST in flight, by a random
// key, so that a JSON-RPC request's handler can tell when the HTTP request
// that carried it is gone.
type liveRequests struct {
	mu sync.Mutex
	m  map[string]context.Context
}

func (l *liveRequests) add(ctx context.Context) string {
	key := rand.Text()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]context.Context{}
	}
	l.m[key] = ctx
	return key
}

func (l *liveRequests) remove(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, key)
}

// errConnectionGone is the cause of a call's cancellation when the HTTP
// request that carried it went away.
var errConnectionGone = errors.New("the client's HTTP connection went away")

// bind returns ctx, cancelled also when the HTTP request that carried the
// call (named in its header) is gone. A call whose request is already gone
// gets a cancelled context.
func (l *liveRequests) bind(ctx context.Context, h http.Header) (context.Context, context.CancelFunc) {
	key := ""
	if h != nil {
		key = h.Get(requestHeader)
	}
	if key == "" {
		return ctx, func() {}
	}
	l.mu.Lock()
	hctx, ok := l.m[key]
	l.mu.Unlock()
	cctx, cancel := context.WithCancelCause(ctx)
	if !ok {
		cancel(errConnectionGone)
		return cctx, func() {}
	}
	stop := context.AfterFunc(hctx, func() { cancel(errConnectionGone) })
	return cctx, func() { stop(); cancel(nil) }
}

// withdrawalReason words why a call's context ended.
func withdrawalReason(ctx context.Context) string {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errConnectionGone), errors.Is(cause, errSessionEnded), errors.Is(cause, errSessionGone):
		return cause.Error()
	case errors.Is(cause, context.Canceled):
		return "the client cancelled the request"
	default:
		s := "the client's session ended"
		if cause != nil && !errors.Is(cause, context.DeadlineExceeded) {
			s += " (" + strings.TrimSpace(shortErr(cause)) + ")"
		}
		return s
	}
}

// sessionLife ends when a session does: its client went away or ended
// it. go-sdk closes a session gracefully, waiting for the requests in
// flight, so a call waiting for a human would outlive its session; the
// tool handler watches the session's life instead. It rides on the
// context from which go-sdk derives the session's handler contexts.
type sessionLife struct {
	// ctx is cancelled, with the cause, when the life ends: a call binds
	// to it with context.AfterFunc, no goroutine of its own.
	ctx context.Context
	end context.CancelCauseFunc
}

func newLife() *sessionLife {
	ctx, end := context.WithCancelCause(context.Background())
	return &sessionLife{ctx: ctx, end: end}
}

type lifeKey struct{}

// withLife returns ctx carrying a new life that ends with ctx.
func withLife(ctx context.Context, cause error) (context.Context, *sessionLife) {
	l := newLife()
	context.AfterFunc(ctx, func() { l.end(cause) })
	return context.WithValue(ctx, lifeKey{}, l), l
}

// errSessionEnded and errSessionGone are the causes of a call's
// cancellation when its session ends.
var (
	errSessionEnded = errors.New("the client ended its session")
	errSessionGone  = errors.New("the client's session went away")
)

// bindLife returns ctx, cancelled also when the session's life ends.
func bindLife(ctx context.Context) (context.Context, context.CancelFunc) {
	l, _ := ctx.Value(lifeKey{}).(*sessionLife)
	if l == nil {
		return ctx, func() {}
	}
	cctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(l.ctx, func() { cancel(context.Cause(l.ctx)) })
	return cctx, func() { stop(); cancel(nil) }
}
