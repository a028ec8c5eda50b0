package fetched

import (
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// With no index in berth's pip.conf, the operator's PIP_INDEX_URL is the
// index (over a user pip.conf naming another); an index over TLS with a
// CA of the operator's fails, naming PIP_CERT, until PIP_CERT names the
// CA.
func TestResolvePyPIOperatorSettings(t *testing.T) {
	requirePip(t)
	w := newPyWorld(t)
	tlsIndex := httptest.NewTLSServer(w.good)
	t.Cleanup(tlsIndex.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsIndex.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.fetchers, "pip.conf"), []byte("[global]\nretries = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := slices.DeleteFunc(slices.Clone(w.env), func(kv string) bool { return strings.HasPrefix(kv, "PIP_INDEX_URL=") })
	w.env = append(env, "PIP_INDEX_URL="+tlsIndex.URL+"/simple/")
	_, _, err := w.resolve(t, pipx("mcpdemo==1.0.0"))
	if err == nil || !strings.Contains(err.Error(), "CERTIFICATE_VERIFY_FAILED") || !strings.Contains(err.Error(), "PIP_CERT=/path/to/ca.pem") || !strings.Contains(err.Error(), "index-url from ") {
		t.Fatalf("a TLS index without its CA: %v", err)
	}
	w.env = append(w.env, "PIP_CERT="+ca)
	l, _, err := w.resolve(t, pipx("mcpdemo==1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	if l.Registry != tlsIndex.URL+"/simple/" || len(l.Packages) != 2 {
		t.Errorf("lock %+v", l)
	}
	if h := w.hostile.asked(); len(h) > 0 {
		t.Errorf("the hostile index was asked for %q", h)
	}
}
