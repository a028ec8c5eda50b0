package marketplace

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/internal/ocitest"
	"github.com/berth-mcp/berth/marketplace/repo"
)

// A registry that substitutes content of another length (a payload is
// rarely the same size as what it replaces) is refused (exit 4), on update
// and on install, as one that alters content in place is; oras-go's own
// Content-Length check must not turn it into a network failure (exit 1).
func TestOCIAlteredLengthIsRefusal(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	reg, src, c := ociCatalog(t, e, ocitest.Options{Referrers: true})
	if _, err := c.Add(e.ctx, "acme", src, RootPin{SHA256: e.init.RootSHA256}); err != nil {
		t.Fatal(err)
	}
	e.publish("acme-notes", "1.1.0")
	ociPush(t, e, "oci://"+reg.Host()+"/acme/catalog")

	ts := e.read("timestamp.json")
	reg.Tamper(func(req *http.Request, body []byte) []byte {
		if strings.Contains(req.URL.Path, "/blobs/") && bytes.Equal(body, ts) {
			return append(bytes.Clone(body), ' ')
		}
		return body
	})
	_, err := c.Refresh(e.ctx, "acme")
	wantKind(t, err, KindDownloadMismatch)
	reg.Tamper(nil)

	if _, err := c.Refresh(e.ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	l, err := c.Load("acme")
	if err != nil {
		t.Fatal(err)
	}
	v := l.Catalog.Plugin("acme-notes").Version("1.1.0")
	arch, err := os.ReadFile(filepath.Join(e.repoDir, filepath.FromSlash(v.URLs[0])))
	if err != nil {
		t.Fatal(err)
	}
	reg.Tamper(func(req *http.Request, body []byte) []byte {
		if bytes.Equal(body, arch) {
			return append(bytes.Clone(body), "a payload"...)
		}
		return body
	})
	_, err = c.Download(e.ctx, "acme", v, &DownloadOptions{TempDir: t.TempDir()})
	wantKind(t, err, KindDownloadMismatch)
}
