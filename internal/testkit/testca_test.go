package testkit

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"testing"
)

// TestNPMRegistryTLSTrust: the registry's certificate verifies for
// 127.0.0.1 against CAPEM alone, and not against the system's roots.
func TestNPMRegistryTLSTrust(t *testing.T) {
	r := NewNPMRegistryTLS(t, "")
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(r.CAPEM) {
		t.Fatalf("CAPEM holds no certificate:\n%s", r.CAPEM)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get(r.Server.URL + "/")
	if err != nil {
		t.Fatalf("with the test CA: %v", err)
	}
	resp.Body.Close()
	_, err = (&http.Client{Transport: &http.Transport{}}).Get(r.Server.URL + "/")
	if ua := (x509.UnknownAuthorityError{}); !errors.As(err, &ua) {
		t.Fatalf("without the test CA: err = %v, want %T", err, ua)
	}
}

// TestLeafPEM: the PEM files load as a key pair whose chain verifies for
// 127.0.0.1 and localhost against the CA's pool.
func TestLeafPEM(t *testing.T) {
	ca := NewTestCA(t)
	chain, key := ca.LeafPEM(t)
	pair, err := tls.X509KeyPair(chain, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(pair.Certificate) != 2 {
		t.Fatalf("chain of %d certificates, want leaf and CA", len(pair.Certificate))
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"127.0.0.1", "localhost"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: name}); err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: NewTestCA(t).Pool(), DNSName: "127.0.0.1"}); err == nil {
		t.Error("the leaf verifies against another test CA")
	}
}
