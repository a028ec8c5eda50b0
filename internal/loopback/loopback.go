// Package loopback holds the checks that keep berth's local HTTP servers
// (berth serve's transports, berth marketplace serve) to this machine:
// which hosts and origins are loopback ones, and the Host check against
// DNS rebinding.
package loopback

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// IsHost reports whether h (a host name or IP address, without a port) is
// a loopback one: localhost, 127.0.0.0/8 or ::1.
func IsHost(h string) bool {
	h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// IsOrigin reports whether an Origin header names an http or https origin
// on a loopback host.
func IsOrigin(o string) bool {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return IsHost(u.Hostname())
}

// hostOf is the host of a Host header or an address, without its port.
func hostOf(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// ArrivedOnLoopback reports whether r came in on a loopback address of a
// server (http.LocalAddrContextKey).
func ArrivedOnLoopback(r *http.Request) bool {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || a == nil {
		return false
	}
	return IsHost(hostOf(a.String()))
}

// CheckRequest refuses what a web page on another site could send to a
// server that listens on loopback only: a request whose Host header is
// not a loopback name (DNS rebinding: a name the attacker controls now
// resolving to 127.0.0.1), and a request with an Origin header that is not
// a loopback origin. These are the checks berth serve makes (its Host
// check is go-sdk's, for requests that arrived on a loopback address;
// here every request must have arrived on one).
func CheckRequest(r *http.Request) error {
	if !IsHost(hostOf(r.Host)) {
		return fmt.Errorf("invalid Host header %q: this server answers only to loopback names (localhost, 127.0.0.1, [::1])", r.Host)
	}
	if o := r.Header.Get("Origin"); o != "" && !IsOrigin(o) {
		return fmt.Errorf("cross-origin request from %q; this server accepts only loopback origins", o)
	}
	return nil
}
