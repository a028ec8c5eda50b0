package mcpexport

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// DefaultAddr is where the HTTP transports listen unless told otherwise.
const DefaultAddr = "127.0.0.1:8931"

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
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), isLoopbackHost(host), nil
}

func isLoopbackHost(h string) bool {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// ReadTokenFile reads a bearer token for a non-loopback listener. The file
// must be private to its owner and the token long enough to resist
// guessing.
func ReadTokenFile(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("cannot read the token file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("the token file %s is readable by others (mode %v); run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("cannot read the token file: %w", err)
	}
	tok := strings.TrimSpace(string(data))
	if len(tok) < 32 || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("the token in %s must be at least 32 characters with no spaces; make one with: head -c 32 /dev/urandom | base64 > %s", path, path)
	}
	return tok, nil
}

// guard wraps the MCP handlers: it refuses a non-loopback Origin (a web
// page must not drive the server) and, when a token is set, any request
// without "Authorization: Bearer <token>" (401). go-sdk's DNS-rebinding
// protection (a loopback listener reached with a non-loopback Host) stays
// on inside.
func guard(next http.Handler, token, source string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !loopbackOrigin(o) {
			http.Error(w, fmt.Sprintf("Forbidden: cross-origin request from %q; berth serve accepts only loopback origins", o), http.StatusForbidden)
			return
		}
		if token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="berth"`)
				http.Error(w, "Unauthorized: send Authorization: Bearer <"+source+">", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func loopbackOrigin(o string) bool {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return isLoopbackHost(u.Hostname())
}

// healthz answers liveness probes without authentication.
func healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "ok")
}
