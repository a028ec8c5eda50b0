package marketplace

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/internal/loopback"
	"github.com/berth-mcp/berth/internal/publicaddr"
	"github.com/berth-mcp/berth/marketplace/internal/textio"
	"github.com/berth-mcp/berth/marketplace/oci"
	"github.com/berth-mcp/berth/trust"
)

// Source is where a catalog is served from: a directory, a file:// URL,
// an https:// URL, or an http:// URL on a loopback address (local mirrors
// and tests).
type Source struct {
	// Kind is "directory" (a path or a file:// URL), "https" or "http".
	Kind string
	// Dir is the directory of a directory source, absolute.
	Dir string
	// URL is the base URL of an http(s) source, ending in "/".
	URL *url.URL
	// OCI is the repository and tag of an OCI source (Kind "oci").
	OCI *oci.Ref

	oci *ociState
}

// KindOCI is the Kind of a source in an OCI registry.
const KindOCI = "oci"

// ParseSource reads a source as the operator wrote it.
func ParseSource(s string) (*Source, error) {
	if s == "" {
		return nil, fmt.Errorf("the catalog source is empty; give a directory, a file:// URL, an https:// URL or an oci:// location")
	}
	if oci.IsRef(s) {
		ref, err := oci.ParseRef(s)
		if err != nil {
			return nil, err
		}
		if ref.Digest != "" {
			return nil, fmt.Errorf("the source %q names a digest; a catalog is read from a tag, which moves with every push (berth resolves it once per update and reads everything else by digest): write %s or %s:TAG", s, ref.Repo(), ref.Repo())
		}
		return &Source{Kind: KindOCI, OCI: ref, oci: &ociState{}}, nil
	}
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("the source %q is not a URL: %v", s, err)
		}
		if u.User != nil {
			return nil, fmt.Errorf("the source %q carries a user name or password; berth sends no credentials to catalogs, so remove it", s)
		}
		if u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("the source %q has a query or fragment; give the catalog's base URL, the directory that holds root.json and timestamp.json", s)
		}
		switch strings.ToLower(u.Scheme) {
		case "file":
			if u.Host != "" && u.Host != "localhost" {
				return nil, fmt.Errorf("the source %q names the host %q; a file:// URL must be local, like file:///srv/catalog", s, u.Host)
			}
			return dirSource(filepath.FromSlash(u.Path))
		case "https":
			if u.Host == "" {
				return nil, fmt.Errorf("the source %q has no host", s)
			}
		case "http":
			if !loopback.IsHost(u.Hostname()) {
				return nil, fmt.Errorf("the source %q uses plain http, which berth allows only on a loopback address (127.0.0.1, [::1], localhost) for local mirrors; use https", s)
			}
		default:
			return nil, fmt.Errorf("the source %q has the scheme %q; use https://, file://, http:// on loopback, oci://, or a directory", s, u.Scheme)
		}
		base := *u
		base.Scheme = strings.ToLower(u.Scheme)
		if !strings.HasSuffix(base.Path, "/") {
			base.Path += "/"
		}
		base.RawPath = ""
		return &Source{Kind: base.Scheme, URL: &base}, nil
	}
	return dirSource(s)
}

func dirSource(p string) (*Source, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("the catalog directory %s: %w", p, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory; a catalog source is the directory that holds root.json and timestamp.json, or its URL", p)
	}
	return &Source{Kind: "directory", Dir: abs}, nil
}

// recordedSource reads a source berth recorded (state.json). When
// missingOK, a directory that is gone is still a source, whose every file
// is missing: reading it is a failure to reach it (ErrNetwork), so a
// catalog with a mirror falls back to its other source.
func recordedSource(s string, missingOK bool) (*Source, error) {
	src, err := ParseSource(s)
	if err != nil && missingOK && errors.Is(err, fs.ErrNotExist) && filepath.IsAbs(s) {
		return &Source{Kind: "directory", Dir: s}, nil
	}
	return src, err
}

// String is the source as berth records it.
func (s *Source) String() string {
	switch s.Kind {
	case "directory":
		return s.Dir
	case KindOCI:
		return s.OCI.String()
	}
	return s.URL.String()
}

// errNotFound is returned by an opener for a file the source does not
// have (HTTP 404, or no such file). why, when not nil, says more (an OCI
// registry's missing referrer).
type errNotFound struct {
	loc string
	why error
}

func (e *errNotFound) Error() string { return e.loc + " is not there" }

// NetworkError is a failure to reach a catalog source or download from it:
// a connection, DNS, TLS or timeout problem, or an HTTP error status. It
// is never a verification verdict. It wraps ErrNetwork.
type NetworkError struct {
	Location string
	Err      error
}

// ErrNetwork marks every NetworkError (exit 1).
var ErrNetwork = errors.New("network failure")

func (e *NetworkError) Error() string {
	return fmt.Sprintf("cannot download %s: %v", e.Location, e.Err)
}

func (e *NetworkError) Unwrap() []error { return []error{ErrNetwork, e.Err} }

// SourceOptions tune how sources are reached. A nil *SourceOptions means
// the defaults.
type SourceOptions struct {
	// RootCAs replaces the system roots for https sources and downloads
	// (which honour SSL_CERT_FILE and SSL_CERT_DIR); nil means the system
	// roots.
	RootCAs *x509.CertPool
	// RequestTimeout bounds one metadata request; 0 means 60 seconds.
	RequestTimeout time.Duration
	// DownloadTimeout bounds one bundle download; 0 means 10 minutes.
	DownloadTimeout time.Duration
	// DockerConfig is the directory of the Docker config.json that names
	// registry credentials for oci:// sources; "" means $DOCKER_CONFIG,
	// else ~/.docker.
	DockerConfig string
	// Counter, when set, is called once per request with the location
	// (tests and benchmarks count requests with it).
	Counter func(loc string)
}

// opener opens one location of a source for reading.
type opener interface {
	// open returns the content of loc (relative to the source, or an
	// absolute https URL), or *errNotFound, or a *NetworkError.
	open(ctx context.Context, loc string) (io.ReadCloser, error)
}

func (s *Source) opener(o *SourceOptions) opener {
	if o == nil {
		o = &SourceOptions{}
	}
	switch s.Kind {
	case "directory":
		return &dirOpener{dir: s.Dir, o: o}
	case KindOCI:
		return &ociOpener{s: s, o: o}
	}
	return &httpOpener{base: s.URL, o: o, clients: map[string]*http.Client{}}
}

type dirOpener struct {
	dir string
	o   *SourceOptions
}

func (d *dirOpener) open(ctx context.Context, loc string) (io.ReadCloser, error) {
	if d.o.Counter != nil {
		d.o.Counter(loc)
	}
	if textio.HasScheme(loc) {
		return (&httpOpener{o: d.o, clients: map[string]*http.Client{}}).open(ctx, loc)
	}
	clean := path.Clean("/" + loc)[1:]
	if clean != loc || clean == "" {
		return nil, fmt.Errorf("%q is not a clean path inside the catalog", loc)
	}
	// A FIFO planted in the catalog would block an open, and every read,
	// forever, holding the cache lock: open without blocking and refuse
	// what is not a regular file.
	f, err := fsx.OpenRegular(filepath.Join(d.dir, filepath.FromSlash(clean)))
	var nr *fsx.NotRegularError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &errNotFound{loc: loc}
	case errors.As(err, &nr):
		return nil, &SpecialFileError{Location: loc, Err: nr}
	case err != nil:
		return nil, err
	}
	return &ctxFile{Reader: fsx.ContextReader(ctx, f), Closer: f}, nil
}

// ctxFile is a file of a directory source whose reads stop when the
// request's context is done.
type ctxFile struct {
	io.Reader
	io.Closer
}

// SpecialFileError is a file of a directory source that is not a regular
// file: a FIFO (whose read would block forever), a device, a socket or a
// directory. berth refuses it (rule special-file, as in a bundle) rather
// than read it. It wraps trust.ErrUntrusted (exit 4) and the
// *fsx.NotRegularError.
type SpecialFileError struct {
	// Location is the file as the catalog names it.
	Location string
	Err      *fsx.NotRegularError
}

func (e *SpecialFileError) Error() string { return e.Err.Error() }

func (e *SpecialFileError) Unwrap() []error { return []error{trust.ErrUntrusted, e.Err} }

// Rule is the rule the file breaks: special-file (docs/rules.md).
func (e *SpecialFileError) Rule() string { return fsx.RuleSpecialFile }

// httpOpener reads from an http(s) source with berth's guarded client:
// requests stay within the origin they were made for (redirects off it
// are refused), with bounded times; locations off the catalog's origin
// must be https and may not lead to a private, loopback or link-local
// address.
type httpOpener struct {
	base    *url.URL // nil for an opener of absolute URLs only
	o       *SourceOptions
	clients map[string]*http.Client // by origin
	// httpsRedirects lets a download off the catalog's origin follow
	// redirects to other https origins (a release asset's storage host),
	// each leading to a public address; its bytes are checked by digest.
	httpsRedirects bool
}

func (h *httpOpener) open(ctx context.Context, loc string) (io.ReadCloser, error) {
	var u *url.URL
	if textio.HasScheme(loc) {
		var err error
		if u, err = url.Parse(loc); err != nil {
			return nil, err
		}
	} else {
		if h.base == nil {
			return nil, fmt.Errorf("%q is relative, but the catalog has no base URL", loc)
		}
		u = h.base.ResolveReference(&url.URL{Path: loc})
	}
	if h.o.Counter != nil && !textio.HasScheme(loc) {
		h.o.Counter(loc)
	} else if h.o.Counter != nil {
		h.o.Counter(u.String())
	}
	onOrigin := h.base != nil && origin(u) == origin(h.base)
	if !onOrigin && u.Scheme != "https" {
		return nil, fmt.Errorf("%s: a download off the catalog's origin must use https", redactURL(u))
	}
	c := h.client(u, !onOrigin)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "berth/"+bundle.BerthVersion)
	resp, err := c.Do(req)
	if err != nil {
		return nil, &NetworkError{Location: redactURL(u), Err: unwrapURLError(err)}
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		resp.Body.Close()
		return nil, &errNotFound{loc: loc}
	case resp.StatusCode != http.StatusOK:
		resp.Body.Close()
		return nil, &NetworkError{Location: redactURL(u), Err: fmt.Errorf("the server answered %s", resp.Status)}
	}
	return &netBody{ReadCloser: resp.Body, loc: redactURL(u), length: resp.ContentLength}, nil
}

// netBody turns read errors of a response body into NetworkErrors.
type netBody struct {
	io.ReadCloser
	loc string
	// length is the length the server announced, -1 when unknown.
	length int64
}

func (b *netBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = &NetworkError{Location: b.loc, Err: err}
	}
	return n, err
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	h, err := bundle.NormalizeHost(u.Hostname())
	if err != nil {
		h = u.Hostname()
	}
	return u.Scheme + "://" + net.JoinHostPort(h, port)
}

func redactURL(u *url.URL) string {
	c := *u
	c.RawQuery, c.Fragment, c.User = "", "", nil
	return c.String()
}

// client returns the guarded client for u's origin. Proxies: requests use
// the standard proxy variables (HTTPS_PROXY, HTTP_PROXY, NO_PROXY, and
// their lower-case forms, as Go reads them), because catalog sources are
// chosen by the operator; loopback addresses are never proxied.
func (h *httpOpener) client(u *url.URL, public bool) *http.Client {
	key := origin(u)
	if c, ok := h.clients[key]; ok {
		return c
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: h.o.RootCAs}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	loopbackOnly := u.Scheme == "http"
	if public {
		// Through a proxy, the proxy resolves the name; berth cannot check
		// the address it reaches, only the proxy's own.
		if p, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err == nil && p != nil {
			public = false
		}
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		TLSClientConfig:       tlsConf,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		IdleConnTimeout:       30 * time.Second,
		MaxIdleConnsPerHost:   4,
		ForceAttemptHTTP2:     true,
		DialContext: publicaddr.DialChecked(dialer, func(host string, ip netip.Addr) error {
			if loopbackOnly && !ip.IsLoopback() {
				return fmt.Errorf("%s resolves to %s, which is not a loopback address; plain http is allowed only on loopback", host, ip)
			}
			if public && !publicAddr(ip) {
				return fmt.Errorf("%s resolves to %s, a private, loopback or link-local address; a download URL off the catalog's origin must lead to a public address", host, ip)
			}
			return nil
		}),
	}
	c := &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			offOrigin := origin(req.URL) != key
			if offOrigin && h.httpsRedirects && public && req.URL.Scheme == "https" {
				// The public transport checks the new address as it dials.
				offOrigin = false
			}
			if offOrigin {
				return fmt.Errorf("refused a redirect from %s to %s: catalog requests stay within their origin %s", redactURL(via[len(via)-1].URL), redactURL(req.URL), key)
			}
			if len(via) >= 5 {
				return fmt.Errorf("stopped after 5 redirects")
			}
			return nil
		},
	}
	h.clients[key] = c
	return c
}

// publicAddr reports whether a is a public unicast address
// (publicaddr.Public: IPv4 behind the NAT64 and 6to4 prefixes is checked
// as IPv4, as the remote client checks it).
func publicAddr(a netip.Addr) bool { return publicaddr.Public(a) }

// readAll reads loc through o, at most max bytes: more is an error of
// the kind tooLarge makes.
func readAll(ctx context.Context, o opener, loc string, max int64, tooLarge func(n int64) error) ([]byte, error) {
	rc, err := o.open(ctx, loc)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, tooLarge(max)
	}
	return data, nil
}
