package signin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/publicaddr"
)

// Limits of the sign-in's own HTTP client (discovery, registration, token,
// revocation): the authorization server is another party, so its answers
// are bounded as the remote's are.
const (
	maxResponse    = 1 << 20 // bytes of one response body
	requestTimeout = 30 * time.Second
)

// netRules is who the sign-in's HTTP client may talk to.
type netRules struct {
	// loopback: the resource is a loopback http endpoint (tests and local
	// development): the authorization server may then be one too.
	loopback bool
	// dial replaces the final dial, in tests only.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

func rulesFor(resource string) (netRules, error) {
	ep, err := bundle.ParseEndpoint(resource)
	if err != nil {
		return netRules{}, fmt.Errorf("the remote's url %q: %v", resource, err)
	}
	return netRules{loopback: ep.Loopback}, nil
}

func isLoopbackHost(h string) bool {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if h == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.IsLoopback()
}

// checkURL says whether the sign-in may send a request to (or a browser
// to) u: https, or http on a loopback host when the resource itself is
// loopback http; never a user name in the URL.
func (r netRules) checkURL(what, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if raw == "" {
		return nil, fmt.Errorf("%s is not given (the server's metadata names none); berth cannot sign in without it (tell the server's operator)", what)
	}
	if err != nil || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("%s %s is not an absolute URL; berth needs one such as https://auth.example/ (tell the server's operator)", what, strconv.Quote(clip(raw)))
	}
	if u.User != nil {
		return nil, fmt.Errorf("%s %s carries a user name; berth refuses a sign-in URL with credentials in it (tell the server's operator)", what, redact(u))
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !(r.loopback && isLoopbackHost(u.Hostname())) {
			return nil, fmt.Errorf("%s %s uses plain http; the sign-in goes only over https (plain http only to a loopback host, when the remote itself is a loopback endpoint, as in tests), so berth refuses it (tell the server's operator)", what, redact(u))
		}
	default:
		return nil, fmt.Errorf("%s %s does not use https; the sign-in goes only over https, so berth refuses it (tell the server's operator)", what, redact(u))
	}
	return u, nil
}

func redact(u *url.URL) string {
	c := *u
	c.RawQuery, c.Fragment, c.User = "", "", nil
	return c.String()
}

func sameOrigin(a, b *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if u.Scheme == "http" {
			return "80"
		}
		return "443"
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

// httpClient is the client given to go-sdk for discovery, registration and
// the token endpoint, and used for refresh and revocation: no ambient
// proxy, public addresses only (loopback only for a loopback resource and
// a loopback host), no redirect to another origin, bounded bodies, a
// timeout.
func (r netRules) httpClient() *http.Client { return r.httpClientPosting(nil) }

// httpClientPosting is httpClient that sends a POST only to the URLs in
// posts (nil: any): the client given to go-sdk's handler may register
// and exchange the code only at the endpoints berth checked, whatever
// its own second fetch of the metadata says.
func (r netRules) httpClientPosting(posts map[string]bool) *http.Client {
	base := &http.Transport{
		Proxy:                 nil, // never an ambient proxy
		DialContext:           r.dialContext,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: requestTimeout,
		IdleConnTimeout:       30 * time.Second,
		MaxIdleConnsPerHost:   2,
	}
	return &http.Client{
		Transport: &limitedTransport{rules: r, base: base, posts: posts},
		Timeout:   requestTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return fmt.Errorf("the sign-in stopped after 5 redirects, at %s; a sign-in endpoint should answer in at most a few (tell the server's operator)", redact(req.URL))
			}
			if !sameOrigin(req.URL, via[0].URL) {
				return fmt.Errorf("refused a redirect from %s to %s: the sign-in follows redirects only within one origin", redact(via[len(via)-1].URL), redact(req.URL))
			}
			return nil
		},
	}
}

type limitedTransport struct {
	rules netRules
	base  http.RoundTripper
	posts map[string]bool
}

func (t *limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if _, err := t.rules.checkURL("the request to", req.URL.String()); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	if t.posts != nil && req.Method != http.MethodGet && !t.posts[req.URL.String()] {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("refused a %s to %s: the sign-in sends requests only to the registration and token endpoints it checked", req.Method, redact(req.URL))
	}
	r := req.Clone(req.Context())
	r.Header.Del("Cookie")
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, left: maxResponse, url: redact(req.URL)}
	return resp, nil
}

// limitedBody fails a body longer than maxResponse rather than cutting it
// (a cut JSON document would fail to parse with a misleading error).
type limitedBody struct {
	rc   io.ReadCloser
	left int64
	url  string
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("the answer of %s is larger than %d bytes; berth stops reading", b.url, maxResponse)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// dialContext connects only to addresses the rules allow, checking each
// resolved address and connecting to the checked address.
func (r netRules) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%s has no address", host)
	}
	loopHost := isLoopbackHost(host)
	for _, a := range addrs {
		a = a.Unmap()
		if r.loopback && loopHost {
			if !a.IsLoopback() {
				return nil, fmt.Errorf("refused to connect to %s: it resolves to %s, not a loopback address, and a loopback name may lead only to 127.0.0.1 or ::1", host, a)
			}
			continue
		}
		if why := publicaddr.Refused(a); why != "" {
			return nil, fmt.Errorf("refused to connect to %s: it resolves to %s, a %s address; the sign-in reaches only public addresses", host, a, why)
		}
	}
	dial := (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	if r.dial != nil {
		dial = r.dial
	}
	var errs []error
	for _, a := range addrs {
		c, err := dial(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}
