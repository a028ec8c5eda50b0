package oci

import (
	"context"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/internal/ocitest"
)

// Behind the operator's HTTPS proxy (the proxy variables, as every tool
// reads them), a registry's redirect of a blob to another host (GHCR's and
// Docker Hub's storage) goes through the proxy, which resolves the name:
// the proxy's own address, private as proxies are, is no reason to refuse.
// Go reads the proxy variables once per process, so the test runs itself
// in a child with them set.
func TestRedirectThroughProxy(t *testing.T) {
	if os.Getenv("BERTH_OCI_PROXY_CHILD") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRedirectThroughProxy$", "-test.v")
		cmd.Env = append(os.Environ(), "BERTH_OCI_PROXY_CHILD=1", "NO_PROXY=", "no_proxy=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	reg := ocitest.NewRegistry(t, ocitest.Options{})
	// The storage host: example.com in httptest's certificate, reached
	// only through the proxy below.
	storage := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forward(w, r, reg.Server.URL, &http.Transport{}, nil)
	}))
	defer storage.Close()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect || !strings.HasPrefix(r.Host, "example.com:") {
			http.Error(w, "only CONNECT example.com", http.StatusForbidden)
			return
		}
		up, err := net.Dial("tcp", storage.Listener.Addr().String())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			up.Close()
			return
		}
		go func() { io.Copy(up, conn); up.Close() }()
		io.Copy(conn, up)
		conn.Close()
	}))
	defer proxy.Close()
	// Go reads the proxy variables at the process's first request: set
	// them before any.
	os.Setenv("HTTPS_PROXY", proxy.URL)
	os.Setenv("https_proxy", proxy.URL)
	dir, files := fakeCatalog(t)
	ref, _ := ParseRef("oci://" + reg.Host() + "/acme/catalog")
	if _, err := PushCatalog(context.Background(), dir, ref, nil); err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/blobs/") && r.Method == http.MethodGet {
			http.Redirect(w, r, "https://example.com"+r.URL.Path, http.StatusTemporaryRedirect)
			return
		}
		forward(w, r, reg.Server.URL, &http.Transport{}, nil)
	}))
	defer front.Close()
	_, host, _ := strings.Cut(front.URL, "://")
	fref, _ := ParseRef("oci://" + host + "/acme/catalog")
	pool := x509.NewCertPool()
	pool.AddCert(storage.Certificate())
	cat, err := OpenCatalog(context.Background(), fref, "", nil, &Options{RootCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readRel(t, cat, "timestamp.json"); err != nil || got != files["timestamp.json"] {
		t.Fatalf("timestamp.json through the proxy: %q, %v", got, err)
	}
}
