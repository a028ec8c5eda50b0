package signin

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/berth-mcp/berth/internal/sockpeer"
	"github.com/berth-mcp/berth/review"
)

// CallbackPath is the path of the loopback redirect (RFC 8252 section 7.3).
const CallbackPath = "/callback"

// callback is what the authorization server sent to the redirect.
type callback struct {
	code, state, iss string
	err              error
}

// AuthorizationError is the authorization server's error= answer at the
// redirect (RFC 6749 section 4.1.2.1): the human declined, or the server
// refused.
type AuthorizationError struct {
	Code        string // access_denied, invalid_scope, …
	Description string
}

func (e *AuthorizationError) Error() string {
	msg := "the authorization server answered " + e.Code
	if e.Description != "" {
		msg += " (" + e.Description + ")"
	}
	if e.Code == "access_denied" {
		msg += ": the sign-in was declined"
	}
	return msg
}

// redirectListener is the loopback listener of one authorization request:
// 127.0.0.1 on a declared or ephemeral port, path /callback, the expected
// state only, one use, closed after.
type redirectListener struct {
	ln    net.Listener
	srv   *http.Server
	state string // set before the browser is sent; "" refuses all
	mu    sync.Mutex
	done  bool
	ch    chan callback
}

func listenRedirect(port int) (*redirectListener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		if port != 0 {
			return nil, fmt.Errorf("cannot listen for the sign-in's redirect on 127.0.0.1:%d (the manifest's redirectPort): %v; close what uses that port and try again", port, err)
		}
		return nil, fmt.Errorf("cannot listen for the sign-in's redirect on 127.0.0.1: %v", err)
	}
	// Where the kernel names a connection's user (Linux), only this user's
	// connections are served: another local user cannot deliver a code,
	// even one who learned the state. Elsewhere the state alone guards it.
	var serve net.Listener = ln
	if gl, err := sockpeer.Guard(ln, nil); err == nil {
		serve = gl
	}
	r := &redirectListener{ln: ln, ch: make(chan callback, 1)}
	// The answer is a GET with a query (a browser following a 302): no
	// body is read, and a connection that stalls is cut.
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, IdleTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	go r.srv.Serve(serve)
	return r, nil
}

// URL is the redirect URI.
func (r *redirectListener) URL() string {
	return "http://" + r.ln.Addr().String() + CallbackPath
}

func (r *redirectListener) expect(state string) {
	r.mu.Lock()
	r.state = state
	r.mu.Unlock()
}

func (r *redirectListener) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != CallbackPath || req.Method != http.MethodGet {
		http.NotFound(w, req)
		return
	}
	q, err := url.ParseQuery(req.URL.RawQuery)
	if err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		http.Error(w, "This sign-in is already complete; this address accepts one answer only.", http.StatusGone)
		return
	}
	if r.state == "" || q.Get("state") != r.state {
		r.mu.Unlock()
		http.Error(w, "The state of this answer does not match the sign-in berth started; it was ignored.", http.StatusBadRequest)
		return
	}
	r.done = true
	r.mu.Unlock()
	cb := callback{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss")}
	switch {
	case q.Get("error") != "":
		cb.err = &AuthorizationError{Code: clip(q.Get("error")), Description: clip(q.Get("error_description"))}
	case cb.code == "":
		cb.err = errors.New("the authorization server's answer has neither a code nor an error")
	}
	r.ch <- cb
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if cb.err != nil {
		fmt.Fprintf(w, "<!doctype html><title>berth</title><p>The sign-in did not complete: %s</p>", html.EscapeString(cb.err.Error()))
		return
	}
	fmt.Fprint(w, "<!doctype html><title>berth</title><p>Signed in. You can close this window and return to berth.</p>")
}

// clip bounds and cleans text of the authorization server for messages:
// at most 200 characters, C0 controls as spaces, and any other character
// a terminal or a reader would not show as itself (C1 controls, bidi
// overrides, invalid UTF-8) escaped as review.Printable does.
func clip(s string) string { return clipN(s, 200) }

func clipN(s string, n int) string {
	out := make([]rune, 0, min(len(s), n+1))
	for _, c := range s {
		if len(out) >= n {
			out = append(out, '…')
			break
		}
		if c < 0x20 || c == 0x7f {
			c = ' '
		}
		out = append(out, c)
	}
	return review.Printable(string(out))
}

// wait returns the answer, or an error when ctx ends or d passes.
func (r *redirectListener) wait(ctx context.Context, d time.Duration) (callback, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case cb := <-r.ch:
		return cb, cb.err
	case <-t.C:
		return callback{}, fmt.Errorf("no answer from the authorization server at %s within %s; sign in again", r.URL(), d)
	case <-ctx.Done():
		return callback{}, ctx.Err()
	}
}

func (r *redirectListener) close() {
	r.mu.Lock()
	r.done = true
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if r.srv.Shutdown(ctx) != nil {
		r.srv.Close() // Shutdown leaves active connections open
	}
}
