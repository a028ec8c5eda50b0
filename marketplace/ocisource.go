package marketplace

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/berth-mcp/berth/marketplace/internal/textio"
	"github.com/berth-mcp/berth/marketplace/oci"
	"github.com/opencontainers/go-digest"
)

// Files of a verified copy of an OCI catalog: the index and metadata
// manifest it was read from, kept so that an unchanged catalog costs one
// request (the tag's digest) on the next update.
const (
	ociIndexFile    = "oci-index.json"
	ociMetadataFile = "oci-metadata.json"
)

// ociState is what one Source of an OCI catalog holds for the operation
// it serves: the catalog's index, resolved from the tag once (or taken at
// a pinned digest), and the copy whose files save requests.
type ociState struct {
	mu     sync.Mutex
	cat    *oci.Catalog
	pinned string
	local  string // a verified copy's directory, or ""
}

// ociBaseline lets an OCI source read what the verified copy in dir holds
// without a request (content by digest, checked before use).
func (s *Source) ociBaseline(dir string) {
	if s.Kind == KindOCI {
		s.oci.mu.Lock()
		s.oci.local = dir
		s.oci.mu.Unlock()
	}
}

// ociPin makes an OCI source read the index at digest d (the one the last
// update verified) instead of resolving its tag.
func (s *Source) ociPin(d string) {
	if s.Kind == KindOCI && d != "" {
		s.oci.mu.Lock()
		s.oci.pinned = d
		s.oci.mu.Unlock()
	}
}

// ociCatalog is the catalog this source read, or nil.
func (s *Source) ociCatalog() *oci.Catalog {
	if s.Kind != KindOCI {
		return nil
	}
	s.oci.mu.Lock()
	defer s.oci.mu.Unlock()
	return s.oci.cat
}

func ociOptions(o *SourceOptions) *oci.Options {
	oo := &oci.Options{RootCAs: o.RootCAs, RequestTimeout: o.RequestTimeout, DownloadTimeout: o.DownloadTimeout, DockerConfig: o.DockerConfig}
	if o.Counter != nil {
		oo.Counter = func(method, u string) { o.Counter(method + " " + u) }
	}
	return oo
}

// dirLocal finds content by digest among the files of a verified copy.
func dirLocal(dir string) oci.Local {
	var once sync.Once
	held := map[digest.Digest][]byte{}
	return func(d digest.Digest) []byte {
		once.Do(func() {
			// catalog.json is not among them: TUF takes it from the copy
			// by its signed hash without asking the source, and hashing a
			// catalog of many MiB for every update and install would be
			// work for nothing.
			for _, n := range []string{"root.json", "timestamp.json", "snapshot.json", "targets.json", ociIndexFile, ociMetadataFile} {
				if b, err := os.ReadFile(filepath.Join(dir, n)); err == nil {
					held[digest.FromBytes(b)] = b
				}
			}
		})
		return held[d]
	}
}

type ociOpener struct {
	s *Source
	o *SourceOptions
}

func (op *ociOpener) catalog(ctx context.Context) (*oci.Catalog, error) {
	st := op.s.oci
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.cat != nil {
		return st.cat, nil
	}
	var local oci.Local
	if st.local != "" {
		local = dirLocal(st.local)
	}
	cat, err := oci.OpenCatalog(ctx, op.s.OCI, st.pinned, local, ociOptions(op.o))
	if st.pinned != "" && errors.Is(err, oci.ErrNotFound) {
		// The index the last update read is gone (a registry's garbage
		// collection after later pushes): read what the tag names now.
		// Every bundle is still checked against the verified catalog.
		cat, err = oci.OpenCatalog(ctx, op.s.OCI, "", local, ociOptions(op.o))
	}
	if err != nil {
		return nil, err
	}
	st.cat = cat
	return cat, nil
}

func (op *ociOpener) open(ctx context.Context, loc string) (io.ReadCloser, error) {
	if textio.HasScheme(loc) {
		// An absolute URL a curator chose, as from any other source.
		return (&httpOpener{o: op.o, clients: map[string]*http.Client{}, httpsRedirects: true}).open(ctx, loc)
	}
	cat, err := op.catalog(ctx)
	if err != nil {
		return nil, ociError(loc, err)
	}
	rc, err := cat.Open(ctx, loc)
	if err != nil {
		return nil, ociError(loc, err)
	}
	return &ociBody{ReadCloser: rc, loc: loc}, nil
}

// ociError turns the errors of a registry into those of a source: a file
// the catalog does not have is *errNotFound, content that does not match
// its digest a download-mismatch refusal, the rest a *NetworkError.
func ociError(loc string, err error) error {
	var oe *oci.Error
	if !errors.As(err, &oe) {
		return err
	}
	switch {
	case errors.Is(err, oci.ErrNotFound):
		return &errNotFound{loc: loc, why: err}
	case errors.Is(err, oci.ErrIntegrity):
		return &VerifyError{Kind: KindDownloadMismatch, File: loc, Detail: oe.Error(), Err: err}
	}
	return &NetworkError{Location: oe.Ref.Repo(), Err: err}
}

type ociBody struct {
	io.ReadCloser
	loc string
}

func (b *ociBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = ociError(b.loc, err)
	}
	return n, err
}
