package mcpexport

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/internal/sockpeer"
)

// UnixPrefix marks an HTTP listen address that is a Unix-domain socket:
// "unix:PATH".
const UnixPrefix = "unix:"

// UnixPath returns the socket path of a "unix:PATH" address.
func UnixPath(addr string) (string, bool) {
	return strings.CutPrefix(addr, UnixPrefix)
}

// PeerCheck says how a listener of Listen identifies the user at the
// other end of each connection: SO_PEERCRED on a Unix-domain socket, the
// kernel's socket diagnostics (sock_diag) on loopback TCP on Linux, or
// none (the bearer token alone: non-loopback addresses, and loopback TCP
// on other systems).
func PeerCheck(ln net.Listener) sockpeer.Method { return sockpeer.Describe(ln) }

// listenUnix listens on the Unix-domain socket path. Its directory is
// made (mode 0700) when missing and must be the user's alone: owned by
// the user, not a symbolic link, no access for group or others. A socket
// left at path by an earlier run of the same user is removed when nothing
// answers on it; anything else there is refused.
func listenUnix(path string, o *HTTPOptions) (net.Listener, error) {
	if path == "" {
		return nil, errors.New("unix: needs a socket path (for example unix:$XDG_RUNTIME_DIR/berth/serve.sock)")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if err := privateSocketDir(filepath.Dir(abs)); err != nil {
		return nil, err
	}
	if err := removeStaleSocket(abs); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", abs)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(abs, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return guardPeers(ln, o), nil
}

// privateSocketDir makes dir (mode 0700) when it is missing and checks
// that no one but the user can reach into it.
func privateSocketDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot make the socket's directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	q := fsx.ShellQuote(dir)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("the socket's directory %s is a symbolic link; berth serves a socket only in a directory of the user's own (mode 0700); use the directory the link points to", dir)
	case !fi.IsDir():
		return fmt.Errorf("the socket's directory %s is not a directory", dir)
	}
	if owner, me, ok := fsx.Owner(fi); ok && owner != me {
		return fmt.Errorf("the socket's directory %s belongs to user %s, not to you (%s), who could then reach or replace the socket; use a directory of your own, such as $XDG_RUNTIME_DIR/berth", dir, fsx.UserName(owner), fsx.UserName(me))
	}
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		return fmt.Errorf("the socket's directory %s can be reached by group or others (mode %04o); the socket must sit in a directory of the user's alone: chmod 700 %s", dir, m, q)
	}
	return nil
}

// removeStaleSocket removes the socket an earlier run left at path: only
// a socket, only the user's own, only when no server answers on it.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	q := fsx.ShellQuote(path)
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket; berth serve does not replace it: choose another path or remove it (rm %s)", path, q)
	}
	if owner, me, ok := fsx.Owner(fi); ok && owner != me {
		return fmt.Errorf("the socket %s belongs to user %s, not to you (%s); berth serve does not replace it: remove it (rm %s) or choose another path", path, fsx.UserName(owner), fsx.UserName(me), q)
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("a server already listens on %s (another berth serve?); stop it or choose another path", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("cannot tell whether a server listens on %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// guardPeers wraps ln in a sockpeer.Listener when the system can
// identify its peers: a connection of another user is then closed before
// any byte of it is read, and logged. When it cannot, ln is served as it
// is (the token alone), and why is logged once, as a warning where a
// check was expected to work.
func guardPeers(ln net.Listener, o *HTTPOptions) net.Listener {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	l, err := sockpeer.Guard(ln, func(r sockpeer.Refusal) {
		if r.Err != nil {
			log.Warn("berth serve: refused a connection whose user could not be identified", "listener", ln.Addr().String(), "remote", r.Remote, "error", r.Err)
			return
		}
		log.Warn("berth serve: refused a connection of another user", "listener", ln.Addr().String(), "remote", r.Remote, "uid", r.UID, "user", fsx.UserName(r.UID))
	})
	if err == nil {
		return l
	}
	if !errors.Is(err, sockpeer.ErrUnsupported) {
		log.Warn("berth serve: CANNOT IDENTIFY the users who connect; any local user who holds the token gets in", "listener", ln.Addr().String(), "error", err)
	}
	return ln
}

// PortTakenError reports that the address berth serve was to listen on
// is in use by another user's socket, or by a socket whose owner could
// not be found (UID -1: no sock_diag, as on macOS, or it did not find the
// socket). Clients that connected to it while berth was not listening
// may have sent it the bearer token. A socket of berth's own user is not
// reported so: its error is the bind's (EADDRINUSE).
type PortTakenError struct {
	// Addr is the address (HOST:PORT).
	Addr string
	// UID is the user id that owns the listening socket, or -1 when it
	// could not be found.
	UID int
	// Why says why the owner could not be found (UID -1).
	Why error
	// Err is the error of the bind (EADDRINUSE).
	Err error
}

func (e *PortTakenError) Error() string {
	if e.UID < 0 {
		return fmt.Sprintf("%s is in use, and berth cannot tell by whom (%v): if another user's program listens there, a client that connected to it while berth serve was not listening has sent it the bearer token", e.Addr, e.Why)
	}
	return fmt.Sprintf("%s is taken by another user's program (user %s): a client that connected to it while berth serve was not listening has sent it the bearer token", e.Addr, fsx.UserName(e.UID))
}

func (e *PortTakenError) Unwrap() error { return e.Err }

// listenerOwner finds the owner of the socket listening on an address;
// a variable for tests.
var listenerOwner = sockpeer.ListenerOwner

// portTaken turns the error of a TCP listen on hostport into a
// *PortTakenError when the address is in use by another user's socket or
// by one whose owner cannot be found.
func portTaken(hostport string, err error) error {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return err
	}
	a, rerr := net.ResolveTCPAddr("tcp", hostport)
	if rerr != nil {
		return &PortTakenError{Addr: hostport, UID: -1, Why: rerr, Err: err}
	}
	if a.IP == nil {
		return &PortTakenError{Addr: hostport, UID: -1, Why: errors.New("the address names no host"), Err: err}
	}
	uid, lerr := listenerOwner(a)
	switch {
	case errors.Is(lerr, sockpeer.ErrUnsupported):
		return &PortTakenError{Addr: hostport, UID: -1, Why: errors.New("this system does not name the owner of a socket"), Err: err}
	case lerr != nil:
		return &PortTakenError{Addr: hostport, UID: -1, Why: lerr, Err: err}
	case uid == os.Geteuid():
		return err
	}
	return &PortTakenError{Addr: hostport, UID: uid, Err: err}
}
