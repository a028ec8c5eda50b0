package testkit

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
)

// NewNPMRegistryTLS starts a registry serving pkgs over HTTPS on
// 127.0.0.1, with a certificate signed by a test CA of its own (sent with
// its chain, as a TLS-inspecting proxy does: npm without the CA fails with
// SELF_SIGNED_CERT_IN_CHAIN). CAPEM is the CA's certificate. When token is
// not "", every request must carry "Authorization: Bearer <token>"
// (else 401). It is closed when the test ends.
func NewNPMRegistryTLS(t testing.TB, token string, pkgs ...NPMPackage) *NPMRegistry {
	t.Helper()
	r := &NPMRegistry{versions: map[string][]npmVersion{}}
	for _, p := range pkgs {
		if err := r.add(p); err != nil {
			t.Fatal(err)
		}
	}
	ca := NewTestCA(t)
	r.CAPEM = ca.CertPEM
	serve := http.HandlerFunc(r.serve)
	h := serve
	if token != "" {
		h = func(w http.ResponseWriter, req *http.Request) {
			if req.Header.Get("Authorization") != "Bearer "+token {
				w.WriteHeader(http.StatusUnauthorized)
				w.Write([]byte(`{"error":"authentication required"}`))
				return
			}
			serve(w, req)
		}
	}
	r.Server = httptest.NewUnstartedServer(h)
	r.Server.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Leaf(t)}}
	r.Server.StartTLS()
	t.Cleanup(r.Close)
	return r
}
