package marketplace

import (
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/trust"
)

// httpsCatalog serves the repository over TLS on loopback and returns a
// cache that trusts the server's certificate.
func httpsCatalog(t *testing.T, e *testEnv, h http.Handler) (*httptest.Server, *Cache) {
	t.Helper()
	if h == nil {
		h = http.FileServer(http.Dir(e.repoDir))
	}
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	c := OpenCache(filepath.Join(e.dir, "https-home", "catalogs"), &CacheOptions{Now: e.clk.now, Source: SourceOptions{RootCAs: pool, Counter: e.count}})
	return srv, c
}

func TestHTTPSSource(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	srv, c := httpsCatalog(t, e, nil)
	src, err := ParseSource(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Add(e.ctx, "acme", src, RootPin{SHA256: e.init.RootSHA256}); err != nil {
		t.Fatal(err)
	}
	e.takeRequests()
	r, err := c.Refresh(e.ctx, "acme")
	if err != nil || r.Changed {
		t.Fatalf("refresh: %v %+v", err, r)
	}
	if got := e.takeRequests(); len(got) != 2 {
		t.Errorf("an unchanged refresh over https made %d requests: %v", len(got), got)
	}

	// Download the bundle from its relative URL, digest checked.
	l, err := c.Load("acme")
	if err != nil {
		t.Fatal(err)
	}
	v := l.Catalog.Plugin("acme-notes").Version("1.0.0")
	d, err := c.Download(e.ctx, "acme", v, &DownloadOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	b := openBundle(t, d.Archive)
	defer b.Close()
	if err := CheckBundle("acme-notes", v, b); err != nil {
		t.Fatal(err)
	}
	if _, err := e.verifier.Verify(e.ctx, b.Listing().Bytes(), d.Signature); err != nil {
		t.Fatalf("the downloaded signature does not verify: %v", err)
	}

	// A tampered archive at the download URL is refused while streaming.
	arch := filepath.Join(e.repoDir, filepath.FromSlash(v.URLs[0]))
	data, _ := os.ReadFile(arch)
	data[len(data)/2] ^= 1
	os.WriteFile(arch, data, 0o644)
	_, err = c.Download(e.ctx, "acme", v, &DownloadOptions{TempDir: t.TempDir()})
	wantKind(t, err, KindDownloadMismatch)
	// A longer one too, without reading past the size.
	os.WriteFile(arch, append(data, make([]byte, 1<<20)...), 0o644)
	_, err = c.Download(e.ctx, "acme", v, &DownloadOptions{TempDir: t.TempDir()})
	ve := wantKind(t, err, KindDownloadMismatch)
	if !strings.Contains(ve.Detail, "longer than") {
		t.Errorf("detail: %s", ve.Detail)
	}
}

func TestHTTPRedirectOffOriginRefused(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	other := httptest.NewTLSServer(http.FileServer(http.Dir(e.repoDir)))
	defer other.Close()
	srv, c := httpsCatalog(t, e, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
	}))
	src, _ := ParseSource(srv.URL)
	_, err := c.Add(e.ctx, "acme", src, RootPin{SHA256: e.init.RootSHA256})
	if err == nil || !strings.Contains(err.Error(), "stay within their origin") || errors.Is(err, trust.ErrUntrusted) {
		t.Fatalf("got %v", err)
	}
}

func TestNetworkFailure(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	var fail atomic.Bool
	files := http.FileServer(http.Dir(e.repoDir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		files.ServeHTTP(w, r)
	}))
	defer srv.Close()
	src, err := ParseSource(srv.URL) // http on loopback is allowed
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.cache.Add(e.ctx, "acme", src, RootPin{SHA256: e.init.RootSHA256}); err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	_, err = e.refresh()
	if !errors.Is(err, ErrNetwork) || errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("a server error: %v", err)
	}
	srv.Close()
	_, err = e.refresh()
	if !errors.Is(err, ErrNetwork) || errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "check your network") {
		t.Fatalf("a refused connection: %v", err)
	}
}

func TestParseSource(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		in, kind, err string
	}{
		{dir, "directory", ""},
		{"file://" + dir, "directory", ""},
		{"https://cat.example/acme", "https", ""},
		{"http://127.0.0.1:8080/", "http", ""},
		{"http://[::1]/c", "http", ""},
		{"http://localhost/c", "http", ""},
		{"http://cat.example/", "", "plain http"},
		{"http://10.0.0.1/", "", "plain http"},
		{"ftp://cat.example/", "", "scheme"},
		{"https://user:pw@cat.example/", "", "password"},
		{"https://cat.example/?x=1", "", "query"},
		{"file://host/srv", "", "must be local"},
		{filepath.Join(dir, "missing"), "", "no such file"},
	} {
		s, err := ParseSource(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: got %v, want an error about %q", c.in, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.in, err)
		case c.err == "" && s.Kind != c.kind:
			t.Errorf("%s: kind %s, want %s", c.in, s.Kind, c.kind)
		}
	}
}

func TestPublicAddr(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "10.1.2.3", "192.168.1.1", "169.254.169.254", "100.64.0.1", "::1", "fc00::1", "fe80::1", "0.0.0.0"} {
		if publicAddr(netip.MustParseAddr(a)) {
			t.Errorf("%s counts as public", a)
		}
	}
	for _, a := range []string{"1.1.1.1", "2606:4700::1111"} {
		if !publicAddr(netip.MustParseAddr(a)) {
			t.Errorf("%s does not count as public", a)
		}
	}
}

// The off-origin download check reads IPv4 behind the well-known NAT64
// prefix (64:ff9b::/96) and 6to4 as IPv4, as the remote client does, and
// refuses site-local fec0::/10.
func TestPublicAddrEmbeddedIPv4(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		public bool
	}{
		{"64:ff9b::7f00:1", false}, {"64:ff9b::a00:1", false}, {"64:ff9b::a9fe:a9fe", false}, {"64:ff9b::c0a8:101", false},
		{"64:ff9b:1::1", false}, {"fec0::1", false}, {"2002:7f00:1::", false}, {"0.1.2.3", false},
		{"64:ff9b::808:808", true}, {"2002:808:808::", true}, {"8.8.8.8", true},
	} {
		if got := publicAddr(netip.MustParseAddr(tc.addr)); got != tc.public {
			t.Errorf("publicAddr(%s) = %v, want %v", tc.addr, got, tc.public)
		}
	}
}

func TestSummaryMismatch(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	e.addCatalog()
	// The curator's catalog lies: it leaves out the environment variable
	// and the bundled program's hash.
	cat, err := e.repo().Working()
	if err != nil {
		t.Fatal(err)
	}
	v := cat.Plugin("acme-notes").Version("1.0.0")
	v.Summary.Servers[0].Stdio.Env = []catalog.EnvSource{}
	v.Summary.Servers[0].Stdio.Argv = []string{"${bundle}/bin/notes-server"}
	dir, _ := e.bundle("acme-notes", "1.0.0", "")
	b := openBundle(t, dir)
	defer b.Close()
	err = CheckBundle("acme-notes", v, b)
	var sm *SummaryMismatchError
	if !errors.As(err, &sm) || !errors.Is(err, trust.ErrUntrusted) {
		t.Fatalf("got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{`server "notes".stdio.env: the catalog says [], the bundle has [{"fromEnv":"ACME_NOTES_TOKEN","name":"NOTES_TOKEN"}]`, `server "notes".stdio.argv`} {
		if !strings.Contains(msg, want) {
			t.Errorf("the difference does not show %q:\n%s", want, msg)
		}
	}
	// A bundle with another digest is refused before its review is read.
	v.Digest = "sha256:" + strings.Repeat("1", 64)
	if err := CheckBundle("acme-notes", v, b); !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "does not hold the reviewed bundle") {
		t.Fatalf("got %v", err)
	}
}
