package runtimefetch

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/berth-mcp/berth/internal/loopback"
	"github.com/berth-mcp/berth/internal/publicaddr"
)

// Limits of what berth reads from a registry when it pins.
const (
	// MaxPackumentSize caps an npm packument (abbreviated form).
	MaxPackumentSize = 64 << 20
	// MaxIndexPageSize caps a PyPI simple index project page.
	MaxIndexPageSize = 16 << 20
	// MaxImageManifestSize caps an image manifest or index (the OCI
	// distribution spec's recommended limit is 4 MiB).
	MaxImageManifestSize = 4 << 20
	maxTokenSize         = 1 << 20
	// ResolveTimeout bounds one request to a registry.
	ResolveTimeout = 60 * time.Second
)

// ResolverOptions say where Resolver looks. The registries are the ones
// the fetchers' configuration names ($BERTH_HOME/fetchers, ReadFetchersConfig).
type ResolverOptions struct {
	// NPMRegistry is the npm registry; "" means https://registry.npmjs.org/.
	NPMRegistry string
	// NPMScopes maps a scope ("@acme") to its registry.
	NPMScopes map[string]string
	// UVIndex is the index uvx and uv tool run use; PipIndex the one
	// pipx run uses. "" means https://pypi.org/simple/.
	UVIndex, PipIndex string
	// RootCAs are the certificates trusted for https; nil means the
	// system's.
	RootCAs *x509.CertPool
}

// Resolver pins Unpinned fetches against their registries. It is safe for
// concurrent use.
//
// Only https is used, and plain http only to a loopback address. Requests
// follow redirects only within their origin. An image's registry is named
// by the bundle, not the operator, so berth reaches it only at a public
// address or at a loopback host the image names (a local registry).
type Resolver struct {
	o       ResolverOptions
	client  *http.Client // the operator's registries
	images  *http.Client // registries that bundles name
	npm     *url.URL
	scopes  map[string]*url.URL
	uv, pip *url.URL
}

// Pin is one resolution.
type Pin struct {
	// Requested is what the source asked for (Unpinned.Requested).
	Requested string
	// Resolved is the exact version, or an image's sha256 digest.
	Resolved string
	// Spec is the pinned spec written in place of the source's.
	Spec string
	// Registry is where it was resolved.
	Registry string
}

// NewResolver checks the registries' URLs and returns a Resolver.
func NewResolver(o *ResolverOptions) (*Resolver, error) {
	if o == nil {
		o = &ResolverOptions{}
	}
	r := &Resolver{o: *o, scopes: map[string]*url.URL{}}
	var err error
	if r.npm, err = registryURL("npm registry", o.NPMRegistry, defaultRegistry[EcosystemNPM]); err != nil {
		return nil, err
	}
	for scope, reg := range o.NPMScopes {
		if r.scopes[scope], err = registryURL("npm registry of "+scope, reg, ""); err != nil {
			return nil, err
		}
	}
	if r.uv, err = registryURL("uv index", o.UVIndex, defaultRegistry[EcosystemPyPI]); err != nil {
		return nil, err
	}
	if r.pip, err = registryURL("pip index", o.PipIndex, defaultRegistry[EcosystemPyPI]); err != nil {
		return nil, err
	}
	r.client = newClient(o.RootCAs, false)
	r.images = newClient(o.RootCAs, true)
	return r, nil
}

func registryURL(what, s, def string) (*url.URL, error) {
	if s == "" {
		s = def
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("the %s %q is not a URL like https://registry.example/ (with a host, without user:password@, a query or a fragment)", what, printable(s))
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !loopback.IsHost(u.Hostname()) {
			return nil, fmt.Errorf("the %s %s uses plain http, which berth allows only on a loopback address; use https", what, s)
		}
	default:
		return nil, fmt.Errorf("the %s %q is not an https URL", what, printable(s))
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	u.RawPath = ""
	return u, nil
}

func origin(u *url.URL) string { return strings.ToLower(u.Scheme + "://" + u.Host) }

// newClient is the HTTP client of a Resolver. It ignores proxy variables
// of the environment only for images (whose addresses it checks); a
// registry of the operator's is reached as their other tools reach it.
func newClient(roots *x509.CertPool, checkAddr bool) *http.Client {
	dialer := &net.Dialer{Timeout: 15 * time.Second}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots},
		TLSHandshakeTimeout:   15 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		ForceAttemptHTTP2:     true,
		DialContext:           dialer.DialContext,
	}
	if checkAddr {
		tr.Proxy = nil
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			if err != nil {
				return nil, err
			}
			var errs []error
			for _, ip := range ips {
				ip = ip.Unmap()
				if loopback.IsHost(host) {
					if !ip.IsLoopback() {
						errs = append(errs, fmt.Errorf("%s resolves to %s, not a loopback address", host, ip))
						continue
					}
				} else if why := publicaddr.Refused(ip); why != "" {
					errs = append(errs, fmt.Errorf("%s resolves to %s (%s); berth reaches an image's registry only at a public address or a loopback host", host, ip, why))
					continue
				}
				c, err := dialer.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
				if err == nil {
					return c, nil
				}
				errs = append(errs, err)
			}
			if len(errs) == 0 {
				return nil, fmt.Errorf("%s has no address", host)
			}
			return nil, errors.Join(errs...)
		}
	}
	return &http.Client{
		Transport: tr,
		Timeout:   ResolveTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if origin(req.URL) != origin(via[0].URL) {
				return fmt.Errorf("refused a redirect from %s to %s: berth follows a registry's redirects only within its origin", via[0].URL.Redacted(), req.URL.Redacted())
			}
			if len(via) >= 5 {
				return errors.New("stopped after 5 redirects")
			}
			return nil
		},
	}
}

// get fetches u with the headers, reading at most limit bytes of a 200
// answer. It returns the response (its body closed) and the body.
func get(ctx context.Context, c *http.Client, method string, u *url.URL, hdr http.Header, limit int64) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", "berth (pin on import)")
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return resp, nil, nil
	}
	if resp.ContentLength > limit {
		return nil, nil, fmt.Errorf("%s answers with %d bytes, more than berth reads (%d)", u.Redacted(), resp.ContentLength, limit)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", u.Redacted(), err)
	}
	if int64(len(data)) > limit {
		return nil, nil, fmt.Errorf("%s answers with more than %d bytes, more than berth reads", u.Redacted(), limit)
	}
	return resp, data, nil
}

// Resolve pins u now against its registry: the npm registry (the
// packument), the PyPI index (its PEP 691 JSON project page) or the image's
// registry (the manifest's digest). The Pin's version is one the registry
// lists; a registry that answers with something else is refused.
func (r *Resolver) Resolve(ctx context.Context, u *Unpinned) (*Pin, error) {
	var (
		res, reg string
		err      error
	)
	switch u.Ecosystem {
	case EcosystemNPM:
		res, reg, err = r.resolveNPM(ctx, u)
	case EcosystemPyPI:
		res, reg, err = r.resolvePyPI(ctx, u)
	case EcosystemOCI:
		res, reg, err = r.resolveImage(ctx, u)
	default:
		err = fmt.Errorf("berth does not pin %s packages", u.Ecosystem)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot pin %q (%s): %w", u.Spec, u.Tool, err)
	}
	return &Pin{Requested: u.Requested, Resolved: res, Spec: u.Pinned(res), Registry: reg}, nil
}

func (r *Resolver) resolveNPM(ctx context.Context, u *Unpinned) (string, string, error) {
	reg := r.npm
	if scope, _, ok := strings.Cut(u.Name, "/"); ok {
		if s, ok := r.scopes[scope]; ok {
			reg = s
		}
	}
	doc := reg.JoinPath()
	doc.Path += u.Name
	doc.RawPath = reg.EscapedPath() + strings.Replace(u.Name, "/", "%2f", 1)
	resp, data, err := get(ctx, r.client, http.MethodGet, doc, http.Header{"Accept": {"application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8"}}, MaxPackumentSize)
	if err != nil {
		return "", "", err
	}
	if data == nil {
		return "", "", fmt.Errorf("the npm registry %s answers %s for %s", reg.Redacted(), resp.Status, u.Name)
	}
	p, err := ParsePackument(u.Name, data)
	if err != nil {
		return "", "", err
	}
	v, err := PickNPM(p, u.Requested)
	return v, reg.Redacted(), err
}

func (r *Resolver) resolvePyPI(ctx context.Context, u *Unpinned) (string, string, error) {
	idx := r.uv
	if strings.HasPrefix(u.Tool, "pipx") {
		idx = r.pip
	}
	page := idx.JoinPath(normalizePyPI(u.Name) + "/")
	resp, data, err := get(ctx, r.client, http.MethodGet, page, http.Header{"Accept": {"application/vnd.pypi.simple.v1+json"}}, MaxIndexPageSize)
	if err != nil {
		return "", "", err
	}
	if data == nil {
		return "", "", fmt.Errorf("the index %s answers %s for %s", idx.Redacted(), resp.Status, u.Name)
	}
	if ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";"); strings.TrimSpace(ct) != "application/vnd.pypi.simple.v1+json" {
		return "", "", fmt.Errorf("the index %s answers for %s with %q, not the JSON simple API (PEP 691, application/vnd.pypi.simple.v1+json) that berth reads; use an index that serves it (pypi.org, devpi, and most mirrors do), or pin the version by hand", idx.Redacted(), u.Name, printable(ct))
	}
	versions, err := ParseSimpleIndex(u.Name, data)
	if err != nil {
		return "", "", err
	}
	v, err := PickPyPI(u.Name, versions, u.Requested)
	return v, idx.Redacted(), err
}

// Media types of image manifests and indexes berth accepts.
var manifestTypes = []string{
	"application/vnd.oci.image.index.v1+json",
	"application/vnd.oci.image.manifest.v1+json",
	"application/vnd.docker.distribution.manifest.list.v2+json",
	"application/vnd.docker.distribution.manifest.v2+json",
}

// imageLocation splits an image reference (without tag) into the
// registry's base URL and the repository: docker.io names are Docker Hub's
// (registry-1.docker.io, library/ for one-part names); a loopback host is
// reached over plain http.
func imageLocation(name string) (*url.URL, string) {
	host := imageRegistry(name)
	repo := name
	if h, rest, ok := strings.Cut(name, "/"); ok && h == host {
		repo = rest
	}
	scheme := "https"
	if host == "docker.io" {
		host = "registry-1.docker.io"
		if !strings.Contains(repo, "/") {
			repo = "library/" + repo
		}
	} else if h, _, err := net.SplitHostPort(host); (err == nil && loopback.IsHost(h)) || loopback.IsHost(host) {
		scheme = "http"
	}
	return &url.URL{Scheme: scheme, Host: host, Path: "/"}, repo
}

func (r *Resolver) resolveImage(ctx context.Context, u *Unpinned) (string, string, error) {
	base, repo := imageLocation(u.Name)
	tag := u.Requested
	if tag == "" {
		tag = "latest"
	}
	mu := base.JoinPath("v2", repo, "manifests", tag)
	hdr := http.Header{"Accept": {strings.Join(manifestTypes, ", ")}}
	resp, data, err := get(ctx, r.images, http.MethodGet, mu, hdr, MaxImageManifestSize)
	if err != nil {
		return "", "", err
	}
	if resp.StatusCode == http.StatusUnauthorized {
		tok, err := r.imageToken(ctx, base, repo, resp.Header.Get("WWW-Authenticate"))
		if err != nil {
			return "", "", err
		}
		hdr.Set("Authorization", "Bearer "+tok)
		if resp, data, err = get(ctx, r.images, http.MethodGet, mu, hdr, MaxImageManifestSize); err != nil {
			return "", "", err
		}
	}
	if data == nil {
		return "", "", fmt.Errorf("the registry %s answers %s for %s:%s", base.Host, resp.Status, repo, tag)
	}
	d, err := CheckImageManifest(resp.Header.Get("Content-Type"), resp.Header.Get("Docker-Content-Digest"), data)
	if err != nil {
		return "", "", fmt.Errorf("the registry %s for %s:%s: %w", base.Host, repo, tag, err)
	}
	return d, base.Host, nil
}

// CheckImageManifest checks a registry's answer for a manifest by tag and
// returns its digest: the sha256 of the bytes, which must be an image
// manifest or index of a type berth asked for, and equal the digest the
// registry states, if it states one. It is untrusted input.
func CheckImageManifest(contentType, stated string, data []byte) (string, error) {
	ct, _, _ := strings.Cut(contentType, ";")
	ct = strings.TrimSpace(ct)
	var m struct {
		SchemaVersion int    `json:"schemaVersion"`
		MediaType     string `json:"mediaType"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return "", fmt.Errorf("the manifest is not JSON (%v)", err)
	}
	if m.SchemaVersion != 2 {
		return "", fmt.Errorf("the manifest has schemaVersion %d; berth reads only schema 2 manifests and indexes", m.SchemaVersion)
	}
	known := func(t string) bool {
		for _, k := range manifestTypes {
			if t == k {
				return true
			}
		}
		return false
	}
	if !known(ct) {
		return "", fmt.Errorf("the manifest has the content type %q, which is not an image manifest or index", printable(ct))
	}
	if m.MediaType != "" && m.MediaType != ct {
		return "", fmt.Errorf("the manifest says it is %q and is served as %q", printable(m.MediaType), ct)
	}
	sum := sha256.Sum256(data)
	d := "sha256:" + hex.EncodeToString(sum[:])
	if stated != "" && stated != d {
		return "", fmt.Errorf("the registry states the digest %s for a manifest whose digest is %s", printable(stated), d)
	}
	return d, nil
}

// imageToken follows the registry token flow (anonymous, pull scope): the
// WWW-Authenticate challenge names the realm, which must be https (or http
// on loopback for a loopback registry).
func (r *Resolver) imageToken(ctx context.Context, base *url.URL, repo, challenge string) (string, error) {
	scheme, params, ok := strings.Cut(challenge, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", fmt.Errorf("the registry %s needs credentials (%q); berth pins images only from registries that allow anonymous pulls", base.Host, printable(challenge))
	}
	p := parseChallenge(params)
	realm, err := url.Parse(p["realm"])
	if err != nil || realm.Host == "" {
		return "", fmt.Errorf("the registry %s names no token realm berth can use (%q)", base.Host, printable(challenge))
	}
	if realm.Scheme != "https" && (realm.Scheme != "http" || base.Scheme != "http" || !loopback.IsHost(realm.Hostname())) {
		return "", fmt.Errorf("the registry %s names the token realm %s, which is not https", base.Host, realm.Redacted())
	}
	q := realm.Query()
	if s := p["service"]; s != "" {
		q.Set("service", s)
	}
	q.Set("scope", "repository:"+repo+":pull")
	realm.RawQuery = q.Encode()
	resp, data, err := get(ctx, r.images, http.MethodGet, realm, nil, maxTokenSize)
	if err != nil {
		return "", err
	}
	if data == nil {
		return "", fmt.Errorf("the token service %s answers %s for an anonymous pull of %s", realm.Host, resp.Status, repo)
	}
	var t struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if json.Unmarshal(data, &t) != nil || (t.Token == "" && t.AccessToken == "") {
		return "", fmt.Errorf("the token service %s answers with no token", realm.Host)
	}
	if t.Token != "" {
		return t.Token, nil
	}
	return t.AccessToken, nil
}

// parseChallenge reads the key="value" pairs of a WWW-Authenticate
// challenge.
func parseChallenge(s string) map[string]string {
	out := map[string]string{}
	for s != "" {
		s = strings.TrimLeft(s, " ,")
		k, rest, ok := strings.Cut(s, "=")
		if !ok {
			break
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			end := strings.Index(rest[1:], `"`)
			if end < 0 {
				break
			}
			v, s = rest[1:1+end], rest[2+end:]
		} else {
			v, s, _ = strings.Cut(rest, ",")
		}
		out[strings.ToLower(strings.TrimSpace(k))] = v
	}
	return out
}
