package mcpexport

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/internal/loopback"
	"github.com/berth-mcp/berth/internal/sockpeer"
)

// DefaultAddr is where the HTTP transports listen unless told otherwise.
const DefaultAddr = "127.0.0.1:8931"

// MinTokenLen is the shortest bearer token berth accepts.
const MinTokenLen = 32

// ListenAddr normalizes an --http/--sse address: an empty host means the
// loopback address, never every interface. It reports whether the address
// is a loopback one.
func ListenAddr(addr string) (string, bool, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false, fmt.Errorf("%q is not HOST:PORT (for example 127.0.0.1:8931): %v", addr, err)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || strconv.FormatUint(n, 10) != port {
		return "", false, fmt.Errorf("%q has the port %q, which is not a number from 0 to 65535 (for example 127.0.0.1:8931; 0 picks a free port)", addr, port)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), loopback.IsHost(host), nil
}

// ReadTokenFile reads the bearer token of the HTTP listeners from path.
// The file must be a regular file owned by the current user and readable
// by no one else (mode 0600 or stricter), and the token at least
// MinTokenLen characters with no spaces.
func ReadTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cannot read the token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("cannot read the token file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("the token file %s is not a regular file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("the token file %s is readable or writable by group or others (mode %v), so another user could use the token; run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	if owner, me, ok := fsx.Owner(fi); ok && owner != me {
		// Another user could replace the token at will.
		return "", fmt.Errorf("the token file %s is owned by uid %d, not by you (uid %d); make your own with: head -c 32 /dev/urandom | base64 > FILE && chmod 600 FILE", path, owner, me)
	}
	data := make([]byte, 4096)
	n, err := f.Read(data)
	if err != nil && n == 0 {
		return "", fmt.Errorf("cannot read the token file %s: %w", path, err)
	}
	tok := strings.TrimSpace(string(data[:n]))
	if len(tok) < MinTokenLen || strings.ContainsAny(tok, " \t\r\n") || !printableASCII(tok) {
		return "", fmt.Errorf("the token in %s must be at least %d printable characters with no spaces; make one with: head -c 32 /dev/urandom | base64 > %s", path, MinTokenLen, path)
	}
	return tok, nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// LoadOrCreateToken returns the token in path, creating the file first
// when it does not exist: 32 random bytes, base64url (43 characters),
// mode 0600. Creation is atomic and exclusive, so concurrent first runs
// agree on one token, and a crash never leaves a partial file. A path that
// is a symbolic link is refused. created reports whether this call made
// the file.
func LoadOrCreateToken(path string) (token string, created bool, err error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", false, fmt.Errorf("the token file %s is a symbolic link; remove it (berth makes a new token) or pass a token file of your own", path)
		}
		tok, err := ReadTokenFile(path)
		return tok, false, err
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", false, fmt.Errorf("cannot read the token file: %w", err)
	}
	tok, tmp, err := newTokenFile(path)
	if err != nil {
		return "", false, err
	}
	defer os.Remove(tmp)
	// A hard link fails when path exists: the first of two racing runs
	// wins and the other reads its token.
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			tok, err := ReadTokenFile(path)
			return tok, false, err
		}
		return "", false, fmt.Errorf("cannot create the token file: %w", err)
	}
	return tok, true, nil
}

// newTokenFile writes a new token (32 random bytes, base64url, mode
// 0600) to a temporary file beside path, for the caller to link or rename
// into place and then remove.
func newTokenFile(path string) (tok, tmpName string, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", "", fmt.Errorf("cannot create the token file: %w", err)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", "", err
	}
	tok = base64.RawURLEncoding.EncodeToString(raw[:])
	tmp, err := os.CreateTemp(filepath.Dir(path), ".serve.token-*")
	if err != nil {
		return "", "", fmt.Errorf("cannot create the token file: %w", err)
	}
	werr := tmp.Chmod(0o600)
	if werr == nil {
		_, werr = tmp.WriteString(tok + "\n")
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return "", "", fmt.Errorf("cannot write the token file: %w", werr)
	}
	return tok, tmp.Name(), nil
}

// RotateToken replaces the token in path with a new random one, as
// LoadOrCreateToken makes it, atomically (a reader sees the old token
// or the new one, never a part): for when the old one may have leaked.
func RotateToken(path string) (string, error) {
	tok, tmp, err := newTokenFile(path)
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("cannot replace the token file: %w", err)
	}
	return tok, nil
}

// origin is how a session reached berth, for the approval queue and the
// audit log. It rides on the context a session's handlers get.
type origin struct {
	Transport     string
	Authenticated bool
}

type originKey struct{}

func withOrigin(ctx context.Context, o origin) context.Context {
	return context.WithValue(ctx, originKey{}, o)
}

func originOf(ctx context.Context) origin {
	if o, ok := ctx.Value(originKey{}).(origin); ok {
		return o
	}
	return origin{Transport: "in-process"}
}

// Transports as the approval queue and audit log name them.
const (
	TransportStdio     = "stdio"
	TransportSSE       = "sse"
	TransportHTTP      = "streamable-http"
	TransportStateless = "streamable-http-stateless"
)

// authorized reports whether r carries "Authorization: Bearer <token>".
// The comparison is of fixed-length digests, in constant time, so neither
// the token's content nor its length leaks through timing.
func authorized(r *http.Request, want []byte) bool {
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
	return subtle.ConstantTimeCompare(sum[:], want) == 1
}

// guard wraps the MCP handlers. It refuses a non-loopback Origin (a web
// page must not drive the server) and, unless the listener runs with
// UnsafeNoToken, any request without "Authorization: Bearer <token>"
// (401, WWW-Authenticate: Bearer); on a Unix-domain socket whose peer the
// OS identified as the user berth runs as (Listen), a request without an
// Authorization header is the owner's and needs no token. Without a
// token it serves only requests that arrived on a loopback address or a
// Unix-domain socket. It marks the request's context with
// the transport and whether it was authenticated. go-sdk's DNS-rebinding
// protection (a loopback listener reached with a non-loopback Host) stays
// on inside.
func guard(next http.Handler, o *HTTPOptions, transport, source string) http.Handler {
	var want []byte
	if o.Token != "" {
		sum := sha256.Sum256([]byte(o.Token))
		want = sum[:]
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if orig := r.Header.Get("Origin"); orig != "" && !loopback.IsOrigin(orig) {
			http.Error(w, fmt.Sprintf("Forbidden: cross-origin request from %q; berth serve accepts only loopback origins", orig), http.StatusForbidden)
			return
		}
		// The owner on a Unix socket whose peers the OS identifies
		// needs no token; one it sends must still be right.
		ownerOnUnix := osIdentifiedUnix(r) && r.Header.Get("Authorization") == ""
		if want == nil {
			if !loopback.ArrivedOnLoopback(r) && !arrivedOnUnix(r) {
				http.Error(w, "Forbidden: this listener has no token and serves loopback addresses only", http.StatusForbidden)
				return
			}
		} else if !ownerOnUnix && !authorized(r, want) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="berth"`)
			http.Error(w, "Unauthorized: send Authorization: Bearer <"+source+">", http.StatusUnauthorized)
			return
		}
		r = r.WithContext(withOrigin(r.Context(), origin{Transport: transport, Authenticated: want != nil || osIdentifiedUnix(r)}))
		next.ServeHTTP(w, r)
	})
}

// osIdentifiedUnix reports whether r came over a Unix-domain socket
// whose peer the OS identified as the user berth runs as (Listen closes
// every other connection of such a listener).
func osIdentifiedUnix(r *http.Request) bool {
	_, m, ok := sockpeer.FromContext(r.Context())
	return ok && m == sockpeer.PeerCred
}

// arrivedOnUnix reports whether r came over a Unix-domain socket.
func arrivedOnUnix(r *http.Request) bool {
	_, ok := r.Context().Value(http.LocalAddrContextKey).(*net.UnixAddr)
	return ok
}

// healthz answers liveness probes without authentication.
func healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "ok")
}
