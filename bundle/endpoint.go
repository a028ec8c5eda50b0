package bundle

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// Endpoint is a checked remote URL.
type Endpoint struct {
	URL *url.URL
	// Host is the normalized host: lower case, IDNA to ASCII, no trailing
	// dot, no port, IPv6 without brackets.
	Host string
	// Port is the explicit or default port.
	Port string
	// Loopback is true when the host is one of the loopback literals
	// 127.0.0.1, ::1 and localhost.
	Loopback bool
}

// Origin returns scheme://host:port, the unit redirects must stay within.
func (e *Endpoint) Origin() string {
	return e.URL.Scheme + "://" + net.JoinHostPort(e.Host, e.Port)
}

type endpointError struct{ rule, msg string }

func (e *endpointError) Error() string { return e.msg + " [" + e.rule + "]" }

// ParseEndpoint checks a remote URL against the manifest rules: https (http
// only for loopback literals), no userinfo, no fragment, no query parameter
// that looks like a credential.
func ParseEndpoint(rawURL string) (*Endpoint, error) {
	fail := func(rule, format string, args ...any) (*Endpoint, error) {
		return nil, &endpointError{rule: rule, msg: fmt.Sprintf(format, args...)}
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Opaque != "" || u.Host == "" {
		return fail(RuleRemoteURL, "the url is not an absolute http(s) URL with a host; write it like \"https://mcp.example.com/v1\"")
	}
	if u.User != nil {
		return fail(RuleRemoteURLUserinfo, "the url carries a user name or password before '@'; remove it and use \"auth\": {\"bearerFromEnv\": …} or a header fromEnv")
	}
	if strings.Contains(rawURL, "#") {
		return fail(RuleRemoteURLFragment, "the url has a #fragment, which is never sent to a server; remove it")
	}
	host, err := NormalizeHost(u.Hostname())
	if err != nil {
		return fail(RuleRemoteURL, "the url's host %q is not a valid host name: %v", u.Hostname(), err)
	}
	raw := strings.ToLower(u.Hostname())
	loopback := raw == "127.0.0.1" || raw == "::1" || raw == "localhost"
	switch u.Scheme {
	case "https":
	case "http":
		if !loopback {
			return fail(RuleRemoteURLScheme, "the url uses http; use https (plain http is allowed only for the loopback literals 127.0.0.1, [::1] and localhost)")
		}
	default:
		return fail(RuleRemoteURLScheme, "the url's scheme is %q; use https", u.Scheme)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return fail(RuleRemoteURL, "the url's query does not parse: %v", err)
	}
	for name := range q {
		lower := strings.ToLower(name)
		for _, w := range secretQueryWords {
			if strings.Contains(lower, w) {
				return fail(RuleRemoteURLSecretQuery, "the url has the query parameter %q, which looks like a credential (it contains %q); URLs end up in logs and reviews, so pass it with a header {\"fromEnv\": …} or \"auth\" instead", name, w)
			}
		}
	}
	port := u.Port()
	if n, err := strconv.Atoi(port); port != "" && (err != nil || n < 1 || n > 65535 || port[0] == '0') {
		return fail(RuleRemoteURLPort, "the url's port %q is not a port number from 1 to 65535 (without leading zeros); a larger number would wrap around to another port", port)
	}
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return &Endpoint{URL: u, Host: host, Port: port, Loopback: loopback}, nil
}

// NormalizeHost lower-cases a host, converts it to ASCII with IDNA and
// drops one trailing dot; a name with an empty label is an error. IP
// literals are returned in canonical form.
func NormalizeHost(h string) (string, error) {
	if ip := net.ParseIP(strings.TrimSuffix(h, ".")); ip != nil {
		return ip.String(), nil
	}
	if strings.Contains(h, "%") || strings.Contains(h, ":") {
		return "", fmt.Errorf("not a host name")
	}
	a, err := idna.Lookup.ToASCII(h)
	if err != nil {
		return "", err
	}
	// IDNA maps the ideographic and fullwidth full stops to ".", so the
	// trailing dot is dropped after it.
	a = strings.ToLower(strings.TrimSuffix(a, "."))
	if a == "" {
		return "", fmt.Errorf("empty host")
	}
	for _, label := range strings.Split(a, ".") {
		if label == "" {
			return "", fmt.Errorf("empty label")
		}
	}
	return a, nil
}

// ParseIssuer checks an OAuth authorization server's issuer identifier
// (RFC 8414 section 2): an absolute https URL with a host and no query,
// fragment or user name, as berth pins it in a remote's auth.oauth.issuer.
// Plain http is allowed only for the loopback literals, as for endpoints
// (ParseEndpoint), so that tests can run an authorization server on this
// machine. The error names the rule broken and the fix.
func ParseIssuer(raw string) (*Endpoint, error) {
	fail := func(format string, args ...any) (*Endpoint, error) {
		return nil, &endpointError{rule: RuleOAuthIssuer, msg: fmt.Sprintf(format, args...)}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.Host == "" || !u.IsAbs() {
		return fail("the issuer %q is not an absolute https URL with a host; write the authorization server's issuer as its metadata says, like \"https://auth.example.com\"", raw)
	}
	switch {
	case u.User != nil:
		return fail("the issuer carries a user name or password before '@'; an issuer is an https URL without one (RFC 8414): remove it")
	case strings.Contains(raw, "#"):
		return fail("the issuer %q has a #fragment, which an issuer never has (RFC 8414); remove it", raw)
	case strings.Contains(raw, "?"):
		return fail("the issuer %q has a ?query, which an issuer never has (RFC 8414); remove it", raw)
	}
	ep, err := ParseEndpoint(raw)
	if err != nil {
		pe := err.(*endpointError)
		if pe.rule == RuleRemoteURLScheme {
			return fail("the issuer %q is not https; an authorization server is pinned by its https issuer (plain http only for the loopback literals 127.0.0.1, [::1] and localhost, in tests)", raw)
		}
		return fail("the issuer %q is not a valid issuer: %s", raw, pe.msg)
	}
	return ep, nil
}
