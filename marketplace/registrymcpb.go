package marketplace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/berth-mcp/berth/bundle/importer"
	"github.com/berth-mcp/berth/internal/loopback"
)

// MaxMCPBPackage caps the download of an MCP Bundle a registry entry
// publishes (an mcpb package): 512 MiB. A larger one is refused while it
// streams (or at once, when the server says its length), before anything
// reads it.
const MaxMCPBPackage = 512 << 20

// fetchRegistryMCPB downloads the MCP Bundle pkg of an entry of the
// registry catalog ci into dir as bundle.mcpb and returns its path. The
// URL must be https, or plain http on a loopback address only when it is
// on the registry's own origin (a local mirror, a test); a location off
// the registry's origin must lead to a public address, and so must every
// redirect, which must stay on https. At most max bytes are read (0 means
// MaxMCPBPackage), and the SHA-256 is checked against the package's
// fileSha256 as the bytes arrive: a file that differs is removed and
// refused with a *VerifyError (exit 4) before anything unpacks it.
func (c *Cache) fetchRegistryMCPB(ctx context.Context, ci *CatalogInfo, pkg *importer.RegistryMCPB, dir string, max int64) (string, error) {
	if max <= 0 {
		max = MaxMCPBPackage
	}
	base, err := ParseSource(ci.Source)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(pkg.URL)
	if err != nil {
		return "", err
	}
	if u.Scheme == "http" && (base.URL == nil || origin(u) != origin(base.URL) || !loopback.IsHost(u.Hostname())) {
		return "", fmt.Errorf("the MCP Bundle of %s is at %s, plain http off the registry's loopback origin; berth downloads MCP Bundles only over https", pkg.Name, redactURL(u))
	}
	op := &httpOpener{base: base.URL, o: &c.o.Source, clients: map[string]*http.Client{}, httpsRedirects: true}
	timeout := c.o.Source.DownloadTimeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rc, err := op.open(dctx, pkg.URL)
	if err != nil {
		var nf *errNotFound
		if errors.As(err, &nf) {
			return "", &NetworkError{Location: redactURL(u), Err: errors.New("not found")}
		}
		return "", err
	}
	defer rc.Close()
	if nb, ok := rc.(*netBody); ok && nb.length > max {
		return "", &VerifyError{Kind: KindDownloadMismatch, File: redactURL(u), Detail: fmt.Sprintf("the server says the MCP Bundle is %d bytes, over the limit of %d", nb.length, max)}
	}
	path := filepath.Join(dir, "bundle.mcpb")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(rc, max+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	got := hex.EncodeToString(h.Sum(nil))
	switch {
	case err != nil:
	case n > max:
		err = &VerifyError{Kind: KindDownloadMismatch, File: redactURL(u), Detail: "the MCP Bundle is over the limit of " + strconv.FormatInt(max, 10) + " bytes"}
	case got != pkg.SHA256:
		err = &VerifyError{Kind: KindDownloadMismatch, File: redactURL(u), Detail: fmt.Sprintf("the MCP Bundle has SHA-256 %s, but the registry entry's fileSha256 is %s; berth removed it unread", got, pkg.SHA256)}
	}
	if err != nil {
		os.Remove(path)
		var ve *VerifyError
		if errors.As(err, &ve) {
			ve.Catalog = ci.Name
			ve.Fix = "Nothing was unpacked, installed or run. The publisher replaced the file after publishing the entry, or a mirror or the network altered it; tell the publisher of " + pkg.Name + "."
		}
		return "", err
	}
	return path, nil
}
