// Package ocitest runs OCI registries for berth's tests: go-containerregistry's
// in-process registry on loopback behind a handler that counts, slows down
// and tampers with what it serves ([NewRegistry]); the CNCF distribution
// registry of Debian's docker-registry package with TLS from a test CA and
// basic auth ([StartDistribution]); and the oras CLI built from the Go
// module proxy ([BuildORAS]), for checking that other tools read what
// berth writes. Only tests import it.
package ocitest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/berth-mcp/berth/internal/testkit"
)

// Options configures [NewRegistry]. The zero value is an anonymous
// registry without the referrers API that answers at once.
type Options struct {
	// Referrers turns on the OCI 1.1 referrers API
	// (GET /v2/<name>/referrers/<digest>) and the OCI-Subject header on
	// a pushed manifest with a subject, so oras-go uses the API. Without
	// it, clients fall back to the referrers tag schema
	// (tag sha256-<hex of the subject's digest>).
	Referrers bool
	// TokenAuth makes the registry answer 401 with
	// `WWW-Authenticate: Bearer realm="http://127.0.0.1:port/token",...`
	// to a request without the token, and serve the token at /token
	// (to anyone, or only with BasicAuth's credentials when that is
	// set), as Docker Hub and GHCR do.
	TokenAuth bool
	// BasicAuth, when not nil, is the only {user, password} accepted:
	// on every /v2/ request (answering 401 with a Basic challenge), or,
	// with TokenAuth, at the token endpoint.
	BasicAuth *[2]string
	// TLS serves HTTPS with a certificate for 127.0.0.1 from a test CA
	// of its own (Registry.CAPEM, Registry.CAPool) instead of plain HTTP.
	TLS bool
	// Delay holds back every answer (also the token endpoint's) this
	// long, or until the client gives up; see [Registry.SetDelay].
	Delay time.Duration
}

// Stat is what a registry served for one method and path, or in all.
// Bytes are those of the request and response bodies (HTTP headers are
// not counted; see [Registry.WireBytes] for all).
type Stat struct {
	Requests      int
	RequestBytes  int64
	ResponseBytes int64
}

// Stats maps "METHOD /path" (no query string) to what was served there.
type Stats map[string]Stat

// Total sums all routes.
func (s Stats) Total() Stat {
	var t Stat
	for _, v := range s {
		t.Requests += v.Requests
		t.RequestBytes += v.RequestBytes
		t.ResponseBytes += v.ResponseBytes
	}
	return t
}

// String lists the routes in order, one a line, and the total.
func (s Stats) String() string {
	var b strings.Builder
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range s {
			if !yield(k) {
				return
			}
		}
	}) {
		v := s[k]
		fmt.Fprintf(&b, "%4d req %8d B up %8d B down  %s\n", v.Requests, v.RequestBytes, v.ResponseBytes, k)
	}
	t := s.Total()
	fmt.Fprintf(&b, "%4d req %8d B up %8d B down  total\n", t.Requests, t.RequestBytes, t.ResponseBytes)
	return b.String()
}

// Registry is go-containerregistry's in-process registry (pkg/registry)
// served over plain HTTP on 127.0.0.1 by [NewRegistry]. Its methods are
// safe for concurrent use, also while requests are served.
type Registry struct {
	// Server is the HTTP server; Server.URL is "http://127.0.0.1:port"
	// ("https://…" with Options.TLS).
	Server *httptest.Server
	// CAPEM and CAPool are the test CA of a registry with Options.TLS.
	CAPEM  []byte
	CAPool *x509.CertPool
	// Token is the bearer token the registry accepts with
	// Options.TokenAuth.
	Token string

	opts    Options
	inner   http.Handler
	wireIn  atomic.Int64
	wireOut atomic.Int64

	mu     sync.Mutex
	stats  Stats
	delay  time.Duration
	tamper func(*http.Request, []byte) []byte
	// artifactTypes maps a manifest's digest to its artifact type as the
	// referrers API reports it: its artifactType, else its config's
	// media type.
	artifactTypes map[string]string
}

// NewRegistry starts a registry; it is closed when the test ends.
func NewRegistry(t testing.TB, o Options) *Registry {
	t.Helper()
	r := newRegistry(o)
	if o.TLS {
		ca := testkit.NewTestCA(t)
		r.CAPEM, r.CAPool = ca.CertPEM, ca.Pool()
		r.Server.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Leaf(t)}}
		r.Server.StartTLS()
	} else {
		r.Server.Start()
	}
	t.Cleanup(r.Server.Close)
	return r
}

// Start starts a plain-HTTP registry for a caller without a testing.TB
// (a testscript command); the caller closes r.Server. Options.TLS needs
// NewRegistry.
func Start(o Options) *Registry {
	if o.TLS {
		panic("ocitest: Start cannot serve TLS; use NewRegistry")
	}
	r := newRegistry(o)
	r.Server.Start()
	return r
}

func newRegistry(o Options) *Registry {
	tok := make([]byte, 16)
	rand.Read(tok)
	r := &Registry{
		Token:         "ocitest-" + hex.EncodeToString(tok),
		opts:          o,
		stats:         Stats{},
		delay:         o.Delay,
		artifactTypes: map[string]string{},
		inner: registry.New(registry.WithReferrersSupport(o.Referrers),
			registry.Logger(log.New(io.Discard, "", 0))),
	}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.Server.Listener = &countingListener{Listener: r.Server.Listener, in: &r.wireIn, out: &r.wireOut}
	return r
}

// Host is "127.0.0.1:port", the registry part of a reference.
func (r *Registry) Host() string {
	_, host, _ := strings.Cut(r.Server.URL, "://")
	return host
}

// Stats returns a copy of the counts since the start or the last
// [Registry.Reset].
func (r *Registry) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := make(Stats, len(r.stats))
	for k, v := range r.stats {
		c[k] = v
	}
	return c
}

// WireBytes returns the bytes read from and written to client
// connections (HTTP headers included) since the start or the last
// [Registry.Reset].
func (r *Registry) WireBytes() (in, out int64) {
	return r.wireIn.Load(), r.wireOut.Load()
}

// Reset zeroes the counts of [Registry.Stats] and [Registry.WireBytes].
func (r *Registry) Reset() {
	r.mu.Lock()
	r.stats = Stats{}
	r.mu.Unlock()
	r.wireIn.Store(0)
	r.wireOut.Store(0)
}

// SetDelay changes Options.Delay for the requests that arrive from now on.
func (r *Registry) SetDelay(d time.Duration) {
	r.mu.Lock()
	r.delay = d
	r.mu.Unlock()
}

// Tamper makes the registry pass the body of every successful GET answer
// (manifests, blobs, tags, referrers) through f before sending it, with
// Content-Length set to the new length and every other header kept (so
// Docker-Content-Digest still names the original). f returns body itself
// for the answers it leaves alone. Tamper(nil) stops it.
func (r *Registry) Tamper(f func(req *http.Request, body []byte) []byte) {
	r.mu.Lock()
	r.tamper = f
	r.mu.Unlock()
}

// Repository returns an oras-go client for the repository name on this
// registry, over plain HTTP (HTTPS trusting CAPool with Options.TLS), with
// the registry's credentials when it has any. Its requests are counted
// like any other.
func (r *Registry) Repository(t testing.TB, name string) *remote.Repository {
	t.Helper()
	repo, err := remote.NewRepository(r.Host() + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	c := &auth.Client{Client: retry.DefaultClient, Cache: auth.NewCache()}
	if r.opts.TLS {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: r.CAPool}
		c.Client = &http.Client{Transport: retry.NewTransport(tr)}
	} else {
		repo.PlainHTTP = true
	}
	if r.opts.BasicAuth != nil {
		c.Credential = auth.StaticCredential(r.Host(), auth.Credential{Username: r.opts.BasicAuth[0], Password: r.opts.BasicAuth[1]})
	}
	repo.Client = c
	return repo
}

// Tag points tag in repository name at the manifest src (a digest or
// another tag), as a re-push or an attacker with push rights does.
func (r *Registry) Tag(t testing.TB, name, src, tag string) ocispec.Descriptor {
	t.Helper()
	desc, err := oras.Tag(context.Background(), r.Repository(t, name), src, tag)
	if err != nil {
		t.Fatalf("ocitest: tagging %s/%s:%s as %s: %v", r.Host(), name, src, tag, err)
	}
	return desc
}

// Delete removes the manifest ref (a digest or a tag) of repository name
// with a plain DELETE request, as a registry's garbage collection or
// retention policy does: unlike oras-go's Delete, it leaves a referrers
// index at a fallback tag naming the manifest as it was. Deleting by
// digest leaves the tags that named the manifest. The request is not
// counted.
func (r *Registry) Delete(t testing.TB, name, ref string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodDelete, "/v2/"+name+"/manifests/"+ref, nil)
	rec := httptest.NewRecorder()
	r.inner.ServeHTTP(rec, req)
	if rec.Code != http.StatusAccepted {
		t.Fatalf("ocitest: deleting %s/%s@%s: %d %s", r.Host(), name, ref, rec.Code, rec.Body.Bytes())
	}
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	reqBody, _ := io.ReadAll(req.Body)
	req.Body.Close()
	req.Body = io.NopCloser(bytes.NewReader(reqBody))
	key := req.Method + " " + req.URL.Path

	r.mu.Lock()
	delay, tamper := r.delay, r.tamper
	st := r.stats[key]
	st.Requests++
	st.RequestBytes += int64(len(reqBody))
	r.stats[key] = st
	r.mu.Unlock()

	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-req.Context().Done():
			return
		}
	}

	rec := httptest.NewRecorder()
	r.route(rec, req, reqBody)
	body := rec.Body.Bytes()
	if tamper != nil && req.Method == http.MethodGet && rec.Code == http.StatusOK {
		body = tamper(req, body)
		rec.Header().Set("Content-Length", fmt.Sprint(len(body)))
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	n, _ := w.Write(body)

	r.mu.Lock()
	st = r.stats[key]
	st.ResponseBytes += int64(n)
	r.stats[key] = st
	r.mu.Unlock()
}

// route authenticates req and answers it: the token endpoint here, the
// rest by go-containerregistry's registry, with the referrers API made to
// follow the OCI distribution spec 1.1 where that registry does not.
func (r *Registry) route(w http.ResponseWriter, req *http.Request, reqBody []byte) {
	if r.opts.TokenAuth && req.URL.Path == "/token" {
		if !r.basicOK(req) {
			w.Header().Set("WWW-Authenticate", `Basic realm="ocitest token"`)
			writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "the token endpoint needs the registry's user and password")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"token": r.Token, "access_token": r.Token, "expires_in": 300})
		return
	}
	switch {
	case r.opts.TokenAuth:
		if req.Header.Get("Authorization") != "Bearer "+r.Token {
			challenge := fmt.Sprintf(`Bearer realm="%s/token",service="ocitest"`, r.Server.URL)
			if name := repoName(req.URL.Path); name != "" {
				// As the distribution registry's token auth does: the
				// scope of what this request needs.
				actions := "pull"
				if req.Method != http.MethodGet && req.Method != http.MethodHead {
					actions = "pull,push"
				}
				challenge += fmt.Sprintf(`,scope="repository:%s:%s"`, name, actions)
			}
			w.Header().Set("WWW-Authenticate", challenge)
			writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")
			return
		}
	case r.opts.BasicAuth != nil:
		if !r.basicOK(req) {
			w.Header().Set("WWW-Authenticate", `Basic realm="ocitest"`)
			writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")
			return
		}
	}

	isManifest := strings.Contains(req.URL.Path, "/manifests/")
	isReferrers := strings.Contains(req.URL.Path, "/referrers/")
	if !r.opts.Referrers || !(isManifest && req.Method == http.MethodPut || isReferrers && req.Method == http.MethodGet) {
		r.inner.ServeHTTP(w, req)
		return
	}
	rec := httptest.NewRecorder()
	r.inner.ServeHTTP(rec, req)
	body := rec.Body.Bytes()
	if isManifest && rec.Code == http.StatusCreated {
		var m struct {
			ArtifactType string                     `json:"artifactType"`
			Config       struct{ MediaType string } `json:"config"`
			Subject      *struct{ Digest string }   `json:"subject"`
		}
		if json.Unmarshal(reqBody, &m) == nil {
			at := m.ArtifactType
			if at == "" {
				at = m.Config.MediaType
			}
			r.mu.Lock()
			r.artifactTypes[rec.Header().Get("Docker-Content-Digest")] = at
			r.mu.Unlock()
			// A registry that processed the subject says so, and
			// clients then skip the tag schema.
			if m.Subject != nil {
				rec.Header().Set("OCI-Subject", m.Subject.Digest)
			}
		}
	}
	if isReferrers && rec.Code == http.StatusOK {
		// go-containerregistry v0.22.1 reports the config's media type
		// as every referrer's artifactType; the spec says the
		// manifest's artifactType comes first.
		var idx ocispec.Index
		if err := json.Unmarshal(body, &idx); err == nil {
			r.mu.Lock()
			for i, d := range idx.Manifests {
				if at, ok := r.artifactTypes[d.Digest.String()]; ok {
					idx.Manifests[i].ArtifactType = at
				}
			}
			r.mu.Unlock()
			if b, err := json.Marshal(idx); err == nil {
				body = b
				rec.Header().Set("Content-Length", fmt.Sprint(len(body)))
			}
		}
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(body)
}

func (r *Registry) basicOK(req *http.Request) bool {
	if r.opts.BasicAuth == nil {
		return true
	}
	u, p, ok := req.BasicAuth()
	return ok && u == r.opts.BasicAuth[0] && p == r.opts.BasicAuth[1]
}

// repoName returns the repository of a /v2/<name>/{manifests,blobs,tags,referrers}/... path.
func repoName(path string) string {
	rest, ok := strings.CutPrefix(path, "/v2/")
	if !ok {
		return ""
	}
	for _, sep := range []string{"/manifests/", "/blobs/", "/tags/", "/referrers/"} {
		if i := strings.LastIndex(rest, sep); i > 0 {
			return rest[:i]
		}
	}
	return ""
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"code": code, "message": msg}}})
}

type countingListener struct {
	net.Listener
	in, out *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, in: l.in, out: l.out}, nil
}

type countingConn struct {
	net.Conn
	in, out *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.out.Add(int64(n))
	return n, err
}

// DockerConfigDir writes a Docker config.json with the registry's
// Options.BasicAuth credentials into a new directory and returns it (what
// DOCKER_CONFIG names). It fails the test for a registry without them.
func (r *Registry) DockerConfigDir(t testing.TB) string {
	t.Helper()
	if r.opts.BasicAuth == nil {
		t.Fatal("ocitest: Registry.DockerConfigDir needs Options.BasicAuth")
	}
	return DockerConfigDir(t, r.Host(), r.opts.BasicAuth[0], r.opts.BasicAuth[1])
}
