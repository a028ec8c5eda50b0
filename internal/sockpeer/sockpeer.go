// Package sockpeer identifies the local user at the other end of a
// connection to one of berth's listeners, as the kernel knows it: the
// peer credentials of a Unix-domain socket (SO_PEERCRED), and on Linux
// the owner of the connecting socket of a loopback TCP connection (the
// kernel's socket diagnostics, sock_diag). A [Listener] accepts only the
// connections of the user berth runs as and closes the others before
// anything is read from them.
package sockpeer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
)

// Method is how a listener identifies its peers.
type Method string

// The methods. None means the listener does not identify its peers (its
// clients are known by the bearer token alone).
const (
	None       Method = ""
	PeerCred   Method = "SO_PEERCRED"
	SockDiag   Method = "sock_diag"
	methodNone        = "none"
)

func (m Method) String() string {
	if m == None {
		return methodNone
	}
	return string(m)
}

// ErrUnsupported reports that this system cannot identify the peers of a
// kind of listener.
var ErrUnsupported = errors.New("this system does not identify the peers of such a listener")

// Refusal is one connection a Listener closed.
type Refusal struct {
	// Remote is the peer's address as the listener saw it.
	Remote string
	// UID is the peer's user id, or -1 when it could not be found.
	UID int
	// Err says why the peer could not be identified (UID -1).
	Err error
}

// Listener accepts the connections of the user the process runs as and
// closes every other one (another user's, or one whose owner cannot be
// found) as soon as it is accepted. Its connections are *Conn. It is safe
// for concurrent use, as its inner listener is.
type Listener struct {
	net.Listener
	method  Method
	me      int
	refused func(Refusal)
}

// Conn is a connection whose peer the kernel identified.
type Conn struct {
	net.Conn
	// UID is the peer's user id.
	UID int
	// Method is how it was found.
	Method Method
}

// CloseWrite shuts down the writing side of the connection where the
// inner connection can (net/http does so to end a response cleanly).
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// NetConn returns the connection the listener accepted.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// Guard wraps ln (a *net.UnixListener, or a *net.TCPListener on a
// loopback address) so that it identifies every peer, calling refused
// (which may be nil) for each connection it closes. It returns an error
// wrapping ErrUnsupported when this system cannot identify ln's peers,
// or the reason a first lookup (of ln's own socket) failed; ln is then
// left as it is, for the caller to serve with the token alone or close.
func Guard(ln net.Listener, refused func(Refusal)) (*Listener, error) {
	m, err := probe(ln)
	if err != nil {
		return nil, err
	}
	if refused == nil {
		refused = func(Refusal) {}
	}
	return &Listener{Listener: ln, method: m, me: os.Geteuid(), refused: refused}, nil
}

// Method is how l identifies its peers.
func (l *Listener) Method() Method { return l.method }

// Accept returns the next connection of the user the process runs as.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, err := peerUID(c, l.method)
		if err == nil && uid == l.me {
			return &Conn{Conn: c, UID: uid, Method: l.method}, nil
		}
		if err != nil {
			uid = -1
		}
		c.Close()
		l.refused(Refusal{Remote: c.RemoteAddr().String(), UID: uid, Err: err})
	}
}

// Describe says how ln, as returned by a listener constructor, identifies
// its peers.
func Describe(ln net.Listener) Method {
	if l, ok := ln.(*Listener); ok {
		return l.method
	}
	return None
}

type ctxKey struct{}

// ConnContext is an http.Server ConnContext: it marks the context of a
// connection of a Listener with its peer, for FromContext.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if pc, ok := c.(*Conn); ok {
		return context.WithValue(ctx, ctxKey{}, pc)
	}
	return ctx
}

// FromContext returns the identified peer of a request's connection
// (ConnContext), if any.
func FromContext(ctx context.Context) (uid int, m Method, ok bool) {
	pc, ok := ctx.Value(ctxKey{}).(*Conn)
	if !ok {
		return 0, None, false
	}
	return pc.UID, pc.Method, true
}

// Supported reports whether this system identifies peers by m.
func Supported(m Method) bool { return supported(m) }

// ListenerOwner returns the user id of the process's socket that listens
// on addr (a TCP address; a wildcard listener on the same port counts),
// as sock_diag reports it. It wraps ErrUnsupported where sock_diag is
// not available.
func ListenerOwner(addr *net.TCPAddr) (int, error) { return listenerOwner(addr) }

func unixPeer(c net.Conn) (*net.UnixConn, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil, fmt.Errorf("a %T is not a Unix-domain connection", c)
	}
	return uc, nil
}
