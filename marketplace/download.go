package marketplace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/internal/textio"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/trust"
)

// DefaultMaxDownload caps a bundle archive download (1 GiB, the default
// cap of a bundle's unpacked size).
const DefaultMaxDownload = bundle.DefaultMaxTotalSize

// DownloadOptions tune Download. A nil *DownloadOptions means defaults.
type DownloadOptions struct {
	// TempDir is where the archive is written; "" means os.TempDir().
	TempDir string
	// MaxSize caps the archive; 0 means DefaultMaxDownload. A catalog
	// that lists a larger archive is refused before anything downloads.
	MaxSize int64
	// Progress, when set, is called as bytes arrive (done of total).
	Progress func(done, total int64)
}

// Downloaded is a bundle archive and its signature, downloaded and checked
// against the catalog. Close removes the archive.
type Downloaded struct {
	// Archive is the temp file, named *.tar.gz or *.zip as the catalog
	// says, whose size and sha256 match the catalog.
	Archive string
	// URL is the location it came from.
	URL string
	// Signature is the bundle's Sigstore signature, at most
	// trust.MaxSignatureSize bytes.
	Signature []byte
	dir       string
}

// Close removes the downloaded archive.
func (d *Downloaded) Close() error {
	if d == nil || d.dir == "" {
		return nil
	}
	err := os.RemoveAll(d.dir)
	d.dir = ""
	return err
}

// Download fetches the archive of version v of a plugin of catalog name
// into a temp file, trying its URLs in order, with the size capped and the
// sha256 checked while it streams; then its signature. It never runs,
// opens or trusts the bundle: the caller opens it with bundle.Open and
// runs the trust pipeline, then CheckBundle. A download whose bytes differ
// from the catalog is a *VerifyError (exit 4) after every URL was tried;
// unreachable URLs only are a NetworkError.
func (c *Cache) Download(ctx context.Context, name string, v *catalog.Version, opts *DownloadOptions) (*Downloaded, error) {
	o := DownloadOptions{}
	if opts != nil {
		o = *opts
	}
	if o.MaxSize <= 0 {
		o.MaxSize = DefaultMaxDownload
	}
	if v.Archive.Size > o.MaxSize {
		return nil, fmt.Errorf("the archive of %s is %d bytes, over the download cap of %d; raise the cap if you expected a bundle this large", v.Version, v.Archive.Size, o.MaxSize)
	}
	st, err := c.readState(name)
	if err != nil {
		return nil, err
	}
	ops, err := c.openers(st)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(o.TempDir, "berth-download-")
	if err != nil {
		return nil, err
	}
	d := &Downloaded{dir: tmp}
	timeout := c.o.Source.DownloadTimeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	var errs []error
	mismatch := false
	i := 0
	for _, loc := range v.URLs {
		for _, op := range ops.forLocation(loc) {
			i++
			p := filepath.Join(tmp, fmt.Sprintf("bundle-%d.%s", i, v.Archive.Format))
			dctx, cancel := context.WithTimeout(ctx, timeout)
			err := fetchChecked(dctx, op, loc, v.Archive, o.Progress,
				func() (*os.File, error) { return os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) },
				func() { os.Remove(p) })
			cancel()
			if err == nil {
				d.Archive, d.URL = p, loc
				break
			}
			var ve *VerifyError
			if errors.As(err, &ve) {
				ve.Catalog = name
				mismatch = true
			}
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
		if d.Archive != "" || ctx.Err() != nil {
			break
		}
	}
	if d.Archive == "" {
		d.Close()
		if mismatch {
			for _, e := range errs {
				var ve *VerifyError
				if errors.As(e, &ve) {
					return nil, e
				}
			}
		}
		return nil, fmt.Errorf("could not download %s of catalog %s from any of its %d URL(s): %w", v.Version, name, len(v.URLs), errors.Join(errs...))
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sig, err := ops.readSignature(sctx, v.SignatureURL)
	if err != nil {
		d.Close()
		var nf *errNotFound
		if errors.As(err, &nf) {
			if nf.why != nil {
				// An OCI catalog: the registry lost the signature's
				// referrer (or never had it); a new push attaches it.
				return nil, fmt.Errorf("%w: %v; the catalog names a signature for this bundle and the registry does not serve it, so berth refuses the bundle; tell the catalog's curator, whose berth catalog push attaches it again", trust.ErrUntrusted, nf.why)
			}
			return nil, fmt.Errorf("%w: the catalog's signature URL %s has no signature; tell the catalog's curator", trust.ErrUntrusted, v.SignatureURL)
		}
		return nil, err
	}
	d.Signature = sig
	return d, nil
}

// sourceOpeners are the places a catalog's files are read from: its
// mirror first, when it has one, then its source.
type sourceOpeners []opener

func (c *Cache) openers(st *state) (sourceOpeners, error) {
	src, err := recordedSource(st.Source, st.Mirror != "")
	if err != nil {
		return nil, err
	}
	// An OCI source reads bundles through the index the last update
	// verified, and what the verified copy holds, by digest.
	copyDir := filepath.Join(c.dir, st.Name, st.Current)
	src.ociPin(st.OCIIndex)
	src.ociBaseline(copyDir)
	ops := sourceOpeners{src.opener(&c.o.Source)}
	if st.Mirror != "" {
		m, err := recordedSource(st.Mirror, true)
		if err != nil {
			return nil, fmt.Errorf("catalog %s: its mirror: %w", st.Name, err)
		}
		m.ociPin(st.OCIIndex)
		m.ociBaseline(copyDir)
		ops = append(sourceOpeners{m.opener(&c.o.Source)}, ops...)
	}
	return ops, nil
}

// forLocation is where loc is tried, in order: a relative location at
// each place, an absolute URL once (the canonical source's opener reads it).
func (ops sourceOpeners) forLocation(loc string) []opener {
	if textio.HasScheme(loc) {
		return ops[len(ops)-1:]
	}
	return ops
}

// readSignature reads a version's signature, at most
// trust.MaxSignatureSize bytes, from the first place that has it.
func (ops sourceOpeners) readSignature(ctx context.Context, loc string) ([]byte, error) {
	var err error
	for _, op := range ops.forLocation(loc) {
		var sig []byte
		sig, err = readAll(ctx, op, loc, trust.MaxSignatureSize, func(n int64) error {
			return fmt.Errorf("%w: the signature at %s is over the %d-byte limit", trust.ErrUntrusted, loc, n)
		})
		var nf *errNotFound
		if err == nil || !(errors.As(err, &nf) || errors.Is(err, ErrNetwork)) || ctx.Err() != nil {
			return sig, err
		}
	}
	return nil, err
}

// fetchChecked streams loc into the file create makes, refusing more
// than a.Size bytes and checking size and sha256 at the end; on any
// error the file is closed and remove takes it away. A location the
// source does not have is a network failure (the next one is tried).
func fetchChecked(ctx context.Context, op opener, loc string, a catalog.Archive, progress func(done, total int64), create func() (*os.File, error), remove func()) (err error) {
	rc, err := op.open(ctx, loc)
	if err != nil {
		var nf *errNotFound
		if errors.As(err, &nf) {
			return &NetworkError{Location: loc, Err: errors.New("not found")}
		}
		return err
	}
	defer rc.Close()
	f, err := create()
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			remove()
		}
	}()
	return copyChecked(rc, f, loc, a, progress)
}

// copyChecked copies the archive at loc from rc into f, refusing more
// than a.Size bytes, and checks size and sha256 at the end; f is synced.
func copyChecked(rc io.Reader, f *os.File, loc string, a catalog.Archive, progress func(done, total int64)) error {
	h := sha256.New()
	w := io.MultiWriter(f, h)
	var done int64
	buf := make([]byte, 64<<10)
	r := io.LimitReader(rc, a.Size+1)
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return err
			}
			done += int64(n)
			if progress != nil {
				progress(done, a.Size)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	got := "sha256:" + hex.EncodeToString(h.Sum(nil))
	switch {
	case done > a.Size:
		return &VerifyError{Kind: KindDownloadMismatch, File: loc, Detail: fmt.Sprintf("the download is longer than the %d bytes the catalog says", a.Size)}
	case done != a.Size:
		return &VerifyError{Kind: KindDownloadMismatch, File: loc, Detail: fmt.Sprintf("the download is %d bytes, but the catalog says %d", done, a.Size)}
	case got != a.SHA256:
		return &VerifyError{Kind: KindDownloadMismatch, File: loc, Detail: fmt.Sprintf("the download has sha256 %s, but the catalog says %s", got, a.SHA256)}
	}
	return f.Sync()
}

// CheckBundle checks an opened, downloaded bundle against its catalog
// version: the digest of its canonical listing, and its review against
// the catalog's review summary (a *SummaryMismatchError when they
// differ). Both wrap trust.ErrUntrusted.
func CheckBundle(name string, v *catalog.Version, b *bundle.Bundle) error {
	if b.Manifest == nil || b.Manifest.Name != name || b.Manifest.Version != v.Version {
		got := "no manifest"
		if b.Manifest != nil {
			got = b.Manifest.Name + "@" + b.Manifest.Version
		}
		return fmt.Errorf("%w: the catalog lists this download as %s@%s, but the bundle is %s", trust.ErrUntrusted, name, v.Version, got)
	}
	if b.Digest != v.Digest {
		return fmt.Errorf("%w: %s@%s has digest %s, but the catalog says %s; the archive does not hold the reviewed bundle", trust.ErrUntrusted, name, v.Version, b.Digest, v.Digest)
	}
	return CheckSummary(name, v, review.New(b))
}
