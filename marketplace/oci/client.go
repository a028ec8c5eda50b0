package oci

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/loopback"
	"github.com/berth-mcp/berth/internal/publicaddr"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
)

// Options tune how registries are reached. A nil *Options means the
// defaults.
type Options struct {
	// RootCAs replaces the system roots (which honour SSL_CERT_FILE and
	// SSL_CERT_DIR); nil means the system roots.
	RootCAs *x509.CertPool
	// RequestTimeout bounds one request for a manifest or a metadata
	// file; 0 means 60 seconds.
	RequestTimeout time.Duration
	// DownloadTimeout bounds one bundle download or upload; 0 means 10
	// minutes.
	DownloadTimeout time.Duration
	// DockerConfig is the directory holding the Docker config.json that
	// names credentials and credential helpers; "" means $DOCKER_CONFIG,
	// else ~/.docker. berth only reads it.
	DockerConfig string
	// Counter, when set, is called once per HTTP request berth sends to a
	// registry (tests and benchmarks count requests with it).
	Counter func(method, url string)
}

func (o *Options) requestTimeout() time.Duration {
	if o == nil || o.RequestTimeout <= 0 {
		return 60 * time.Second
	}
	return o.RequestTimeout
}

func (o *Options) downloadTimeout() time.Duration {
	if o == nil || o.DownloadTimeout <= 0 {
		return 10 * time.Minute
	}
	return o.DownloadTimeout
}

// client is the HTTP side of one registry: TLS 1.2 or later, the
// operator's proxies, credentials read from the Docker config, and plain
// HTTP only for a loopback registry that does not speak TLS.
type client struct {
	ref  *Ref
	o    *Options
	repo *remote.Repository
}

func newClient(ref *Ref, o *Options) (*client, error) {
	if o == nil {
		o = &Options{}
	}
	store, path, err := credentialStore(o.DockerConfig)
	if err != nil {
		return nil, err
	}
	tr := newTransport(ref.Registry, o)
	ac := &auth.Client{
		Client: &http.Client{Transport: tr, CheckRedirect: tr.checkRedirect},
		Header: http.Header{"User-Agent": {"berth/" + bundle.BerthVersion}},
		Cache:  auth.NewCache(),
		// Credential is called with the registry's host; an empty
		// credential means an anonymous pull.
		Credential: quietCredential(credentials.Credential(store), path),
	}
	repo := &remote.Repository{
		Client:           ac,
		Reference:        ref.reference(""),
		MaxMetadataBytes: MaxManifest,
		// berth never deletes what it did not write; an old referrers
		// index is left for the registry's own garbage collection.
		SkipReferrersGC: true,
		// A registry that pages without end is cut off (each page is a
		// request, and the request timeout bounds them too).
		ReferrerListMaxPages: 16,
		TagListMaxPages:      16,
	}
	if tr.loopback {
		repo.PlainHTTP = plainHTTP(context.Background(), ref.Registry, o)
	}
	return &client{ref: ref, o: o, repo: repo}, nil
}

// credentialStore is the Docker config's credential store, read only:
// credentials and credential helpers configured by docker login or oras
// login. A missing config file means no credentials.
func credentialStore(dir string) (_ credentials.Store, path string, _ error) {
	switch {
	case dir != "":
		path = filepath.Join(dir, "config.json")
	case os.Getenv("DOCKER_CONFIG") != "":
		path = filepath.Join(os.Getenv("DOCKER_CONFIG"), "config.json")
	default:
		home, err := os.UserHomeDir()
		if err != nil {
			return credentials.NewMemoryStore(), "", nil
		}
		path = filepath.Join(home, ".docker", "config.json")
	}
	s, err := credentials.NewStore(path, credentials.StoreOptions{})
	if err != nil {
		return nil, path, fmt.Errorf("the Docker config %s cannot be read: %v; fix or move it (berth reads registry credentials from it, and never writes it)", path, err)
	}
	return s, path, nil
}

// quietCredential is get without the text of its errors: oras-go's error
// for an auth field that decodes to no "user:password" quotes the decoded
// secret, and a credential helper's error is whatever it printed. berth
// names the file, the host and the fix instead.
func quietCredential(get auth.CredentialFunc, path string) auth.CredentialFunc {
	return func(ctx context.Context, host string) (auth.Credential, error) {
		cred, err := get(ctx, host)
		if err != nil {
			return auth.EmptyCredential, fmt.Errorf("the credentials for %s in the Docker config %s cannot be used (an auth field that is not base64 of user:password, or a credential helper that failed; berth does not print them): log in again with docker login %s (or oras login)", host, path, host)
		}
		return cred, nil
	}
}

// transport sends a registry's requests. For a loopback registry it tries
// https first and, when the server answers in plain HTTP, uses http from
// then on (Docker's default for 127.0.0.0/8); any other registry must
// speak https. A redirect off the registry's host (a blob on a storage
// service) must be https and lead to a public address.
type transport struct {
	host     string // the registry's host:port as written
	loopback bool
	o        *Options
	base     *http.Transport // the registry's own host
	public   *http.Transport // redirects off the registry's host

	privOnce sync.Once
	private  bool
}

// lookupRegistry resolves a registry's host (a variable: tests make a
// loopback registry look public).
var lookupRegistry = func(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, nil
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// registryPrivate reports whether the registry itself is on a private,
// loopback or link-local address (a registry inside the operator's
// network): then its token service and blob storage may be inside too.
// A name that does not resolve is not private (fail closed).
func (t *transport) registryPrivate() bool {
	t.privOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ips, err := lookupRegistry(ctx, strings.Trim(hostOnly(t.host), "[]"))
		if err != nil || len(ips) == 0 {
			return
		}
		for _, ip := range ips {
			if publicaddr.Public(ip.Unmap()) {
				return
			}
		}
		t.private = true
	})
	return t.private
}

func newTransport(host string, o *Options) *transport {
	t := &transport{host: host, o: o}
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	t.loopback = loopback.IsHost(strings.Trim(h, "[]"))
	t.base = t.httpTransport(false)
	t.public = t.httpTransport(true)
	return t
}

func (t *transport) httpTransport(public bool) *http.Transport {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: t.o.RootCAs},
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		IdleConnTimeout:       30 * time.Second,
		MaxIdleConnsPerHost:   4,
		ForceAttemptHTTP2:     true,
	}
	if public {
		tr.DialContext = publicaddr.DialChecked(dialer, func(host string, ip netip.Addr) error {
			if !publicaddr.Public(ip) && !t.registryPrivate() {
				return fmt.Errorf("%s resolves to %s, a private, loopback or link-local address; a public registry's redirect or token service off its own host must lead to a public address", host, ip)
			}
			return nil
		})
	} else {
		tr.DialContext = dialer.DialContext
	}
	return tr
}

func (t *transport) onRegistry(req *http.Request) bool {
	return strings.EqualFold(req.URL.Host, t.host)
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.o.Counter != nil {
		t.o.Counter(req.Method, req.URL.String())
	}
	if !t.onRegistry(req) {
		if req.URL.Scheme != "https" {
			return nil, fmt.Errorf("refused %s: a registry's redirect or token service off its own host must use https", req.URL.Redacted())
		}
		if p, err := http.ProxyFromEnvironment(req); err == nil && p != nil {
			// Through the operator's proxy, the proxy resolves the
			// name: berth cannot check the address it reaches, and the
			// proxy's own is no reason to refuse (as for catalog
			// downloads).
			return t.base.RoundTrip(req)
		}
		return t.public.RoundTrip(req)
	}
	if req.URL.Scheme == "http" && !t.loopback {
		return nil, fmt.Errorf("refused %s: berth speaks plain http only to a registry on a loopback address", req.URL.Redacted())
	}
	return t.base.RoundTrip(req)
}

// plainHTTP reports whether the loopback registry at host answers a TLS
// handshake in plain HTTP: then berth speaks http to it, as Docker does
// for 127.0.0.0/8 by default. The answer is kept for the process.
func plainHTTP(ctx context.Context, host string, o *Options) bool {
	if v, ok := plainHosts.Load(host); ok {
		return v.(bool)
	}
	addr := host
	if _, _, err := net.SplitHostPort(host); err != nil {
		addr = net.JoinHostPort(host, "443")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	if ap, err := netip.ParseAddrPort(conn.RemoteAddr().String()); err != nil || !ap.Addr().Unmap().IsLoopback() {
		// A name like localhost that does not lead to a loopback
		// address gets no plain http.
		return false
	}
	tc := tls.Client(conn, &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: o.RootCAs, ServerName: strings.Trim(hostOnly(host), "[]")})
	var rh tls.RecordHeaderError
	plain := errors.As(tc.HandshakeContext(ctx), &rh)
	plainHosts.Store(host, plain)
	return plain
}

var plainHosts sync.Map

func hostOnly(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

func (t *transport) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return fmt.Errorf("stopped after 5 redirects")
	}
	if !t.onRegistry(req) {
		if req.URL.Scheme != "https" {
			return fmt.Errorf("refused a redirect from %s to %s: off the registry's host, berth follows only https", via[len(via)-1].URL.Redacted(), req.URL.Redacted())
		}
		// Go keeps the header on a redirect to a subdomain; the
		// registry's credentials are the registry's alone.
		req.Header.Del("Authorization")
	}
	return nil
}
