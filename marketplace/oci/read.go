package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Local returns content berth already holds (a file of the last verified
// copy) by its digest, or nil. What it returns is checked against the
// digest before use, so only a request is saved.
type Local func(d digest.Digest) []byte

// Catalog is one version of a catalog in a registry: the index its tag
// pointed at when it was opened. Everything is read by digest from then
// on, so a push during an update cannot mix two versions.
type Catalog struct {
	c     *client
	local Local
	index ocispec.Descriptor
	raw   map[string][]byte // the index's and metadata manifest's bytes, by name
	files map[string]ocispec.Descriptor
	// bundlesDesc is the bundles index, read on the first bundle asked
	// for into bundles, which maps an archive's path to its manifest.
	bundlesDesc ocispec.Descriptor
	bundles     map[string]ocispec.Descriptor
}

// OpenCatalog resolves ref's tag (DefaultTag when it has none) once, or
// takes the index at pinned ("sha256:…") when it is not "", and reads the
// index and its metadata manifest. local, when not nil, saves requests for
// content berth already has.
func OpenCatalog(ctx context.Context, ref *Ref, pinned string, local Local, o *Options) (*Catalog, error) {
	c, err := newClient(ref, o)
	if err != nil {
		return nil, err
	}
	cat := &Catalog{c: c, local: local, raw: map[string][]byte{}, files: map[string]ocispec.Descriptor{}}
	rctx, cancel := context.WithTimeout(ctx, c.o.requestTimeout())
	defer cancel()
	reference := pinned
	switch {
	case reference != "":
	case ref.Digest != "":
		reference = ref.Digest
	default:
		reference = ref.tagOr(DefaultTag)
	}
	var desc ocispec.Descriptor
	if d, err := digest.Parse(reference); err == nil {
		desc = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: d, Size: -1}
	} else {
		desc, err = c.repo.Resolve(rctx, reference)
		if err != nil {
			return nil, &Error{Ref: ref, What: "the tag " + reference, Kind: classifyErr(err), Err: err}
		}
	}
	if desc.MediaType != ocispec.MediaTypeImageIndex {
		return nil, &Error{Ref: ref, What: reference, Kind: ErrIntegrity, Err: fmt.Errorf("it is a %s, not a berth catalog's image index (%s); push the catalog with berth catalog push", desc.MediaType, ocispec.MediaTypeImageIndex)}
	}
	data, err := cat.manifestBytes(rctx, desc, "the catalog's index")
	if err != nil {
		return nil, err
	}
	cat.index = ocispec.Descriptor{MediaType: desc.MediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
	cat.raw["index"] = data
	md, bundles, err := parseIndex(data)
	if err != nil {
		return nil, cat.layoutError("the catalog's index", err.Error())
	}
	cat.bundlesDesc = bundles
	mdata, err := cat.manifestBytes(rctx, md, "the metadata manifest")
	if err != nil {
		return nil, err
	}
	cat.raw["metadata"] = mdata
	if cat.files, err = parseMetadataManifest(mdata); err != nil {
		return nil, cat.layoutError("the metadata manifest", err.Error())
	}
	return cat, nil
}

// parseIndex reads a catalog's image index (from a registry, untrusted):
// the metadata manifest first, then bundle manifests by archive path.
func parseIndex(data []byte) (md, bundles ocispec.Descriptor, err error) {
	var idx ocispec.Index
	if err := json.Unmarshal(data, &idx); err != nil || idx.MediaType != ocispec.MediaTypeImageIndex || idx.ArtifactType != ArtifactTypeCatalog {
		return md, bundles, fmt.Errorf("it is not an image index of artifactType %s", ArtifactTypeCatalog)
	}
	if len(idx.Manifests) != 2 || idx.Manifests[0].ArtifactType != ArtifactTypeMetadata || idx.Manifests[0].MediaType != ocispec.MediaTypeImageManifest ||
		idx.Manifests[1].ArtifactType != ArtifactTypeBundles || idx.Manifests[1].MediaType != ocispec.MediaTypeImageIndex {
		return md, bundles, fmt.Errorf("it does not list the metadata manifest (%s) and then the bundles index (%s)", ArtifactTypeMetadata, ArtifactTypeBundles)
	}
	return idx.Manifests[0], idx.Manifests[1], nil
}

// parseBundles reads a catalog's bundles index (untrusted): bundle
// manifests by archive path.
func parseBundles(data []byte) (map[string]ocispec.Descriptor, error) {
	var idx ocispec.Index
	if err := json.Unmarshal(data, &idx); err != nil || idx.MediaType != ocispec.MediaTypeImageIndex || idx.ArtifactType != ArtifactTypeBundles {
		return nil, fmt.Errorf("it is not an image index of artifactType %s", ArtifactTypeBundles)
	}
	bundles := map[string]ocispec.Descriptor{}
	for _, m := range idx.Manifests {
		rel := m.Annotations[AnnotationTitle]
		if m.ArtifactType != ArtifactTypeBundle || m.MediaType != ocispec.MediaTypeImageManifest || !cleanRel(rel) || !strings.HasPrefix(rel, "bundles/") {
			return nil, fmt.Errorf("the entry %s is not a bundle manifest with a clean path under bundles/ in %s", m.Digest, AnnotationTitle)
		}
		if _, dup := bundles[rel]; dup {
			return nil, fmt.Errorf("it lists %s twice", rel)
		}
		bundles[rel] = m
	}
	return bundles, nil
}

// parseMetadataManifest reads the metadata manifest (untrusted): its
// layers by the catalog path in their titles.
func parseMetadataManifest(data []byte) (map[string]ocispec.Descriptor, error) {
	var md ocispec.Manifest
	if err := json.Unmarshal(data, &md); err != nil || md.MediaType != ocispec.MediaTypeImageManifest || md.ArtifactType != ArtifactTypeMetadata {
		return nil, fmt.Errorf("it is not an image manifest of artifactType %s", ArtifactTypeMetadata)
	}
	files := map[string]ocispec.Descriptor{}
	for _, l := range md.Layers {
		rel := l.Annotations[AnnotationTitle]
		if !(metadataFile.MatchString(rel) || catalogTarget.MatchString(rel)) {
			return nil, fmt.Errorf("the layer %s is titled %q, which is not a catalog metadata file", l.Digest, rel)
		}
		if l.Size < 0 || l.Size > MaxMetadataFile {
			return nil, fmt.Errorf("the layer %s (%s) says it is %d bytes, outside 0 to %d", l.Digest, rel, l.Size, MaxMetadataFile)
		}
		if _, dup := files[rel]; dup {
			return nil, fmt.Errorf("it lists %s twice", rel)
		}
		files[rel] = l
	}
	return files, nil
}

// IndexDigest is the digest of the index this Catalog reads.
func (c *Catalog) IndexDigest() string { return c.index.Digest.String() }

// Manifests returns the bytes of the index and of the metadata manifest,
// for a caller that keeps them to save requests next time.
func (c *Catalog) Manifests() (index, metadata []byte) { return c.raw["index"], c.raw["metadata"] }

func (c *Catalog) layoutError(what, detail string) error {
	return &Error{Ref: c.c.ref, What: what, Kind: ErrIntegrity, Err: fmt.Errorf("%s; this is not a catalog pushed by berth catalog push", detail)}
}

// manifestBytes reads a manifest or index by digest: from local when it
// has it, else from the registry, checked against the digest.
func (c *Catalog) manifestBytes(ctx context.Context, desc ocispec.Descriptor, what string) ([]byte, error) {
	return readManifest(ctx, c.c, c.local, desc, what)
}

func readManifest(ctx context.Context, c *client, local Local, desc ocispec.Descriptor, what string) ([]byte, error) {
	if local != nil {
		if b := local(desc.Digest); b != nil && digest.FromBytes(b) == desc.Digest {
			return b, nil
		}
	}
	var rc io.ReadCloser
	var err error
	if desc.Size < 0 {
		desc, rc, err = c.repo.FetchReference(ctx, desc.Digest.String())
	} else {
		if desc.Size > MaxManifest {
			return nil, &Error{Ref: c.ref, What: what, Kind: ErrIntegrity, Err: fmt.Errorf("its descriptor says %d bytes, over the limit of %d", desc.Size, MaxManifest)}
		}
		rc, err = c.repo.Fetch(ctx, desc)
	}
	if err != nil {
		return nil, &Error{Ref: c.ref, What: what, Kind: classifyErr(err), Err: err}
	}
	defer rc.Close()
	b, err := io.ReadAll(newVerifyReader(rc, desc, MaxManifest))
	if err != nil {
		return nil, &Error{Ref: c.ref, What: what, Kind: classifyErr(err), Err: err}
	}
	return b, nil
}

// Open returns the file at rel (a path relative to the catalog root: a
// metadata file, a bundle archive, or an archive's .sigstore.json), read
// by digest and checked against it as it streams. A path the catalog does
// not have is an *Error wrapping ErrNotFound, and costs no request.
func (c *Catalog) Open(ctx context.Context, rel string) (io.ReadCloser, error) {
	if d, ok := c.files[rel]; ok {
		if c.local != nil {
			if b := c.local(d.Digest); b != nil && int64(len(b)) == d.Size && digest.FromBytes(b) == d.Digest {
				return io.NopCloser(bytes.NewReader(b)), nil
			}
		}
		return c.blob(ctx, d, rel)
	}
	if !strings.HasPrefix(rel, "bundles/") {
		return nil, c.notFound(rel)
	}
	if err := c.readBundles(ctx); err != nil {
		return nil, err
	}
	if bd, ok := c.bundles[rel]; ok {
		ld, err := c.bundleLayer(ctx, bd, rel)
		if err != nil {
			return nil, err
		}
		return c.blob(ctx, ld, rel)
	}
	if a, ok := strings.CutSuffix(rel, ".sigstore.json"); ok {
		if bd, ok := c.bundles[a]; ok {
			sd, err := signatureOf(ctx, c.c, bd, rel)
			if err != nil {
				return nil, err
			}
			return c.blob(ctx, sd, rel)
		}
	}
	return nil, c.notFound(rel)
}

func (c *Catalog) notFound(rel string) error {
	return &Error{Ref: c.c.ref, What: rel, Kind: ErrNotFound, Err: fmt.Errorf("the catalog's index %s lists no such file", c.index.Digest)}
}

// readBundles reads the bundles index, once.
func (c *Catalog) readBundles(ctx context.Context) error {
	if c.bundles != nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, c.c.o.requestTimeout())
	defer cancel()
	data, err := c.manifestBytes(rctx, c.bundlesDesc, "the bundles index")
	if err != nil {
		return err
	}
	b, err := parseBundles(data)
	if err != nil {
		return c.layoutError("the bundles index", err.Error())
	}
	c.bundles = b
	return nil
}

func (c *Catalog) blob(ctx context.Context, d ocispec.Descriptor, what string) (io.ReadCloser, error) {
	rc, err := c.c.repo.Fetch(ctx, d)
	if err != nil {
		return nil, &Error{Ref: c.c.ref, What: what, Kind: classifyErr(err), Err: err}
	}
	return &verifyCloser{Reader: newVerifyReader(rc, d, d.Size), c: rc, ref: c.c.ref, what: what}, nil
}

// bundleLayer reads a bundle manifest and returns its archive layer.
func (c *Catalog) bundleLayer(ctx context.Context, bd ocispec.Descriptor, what string) (ocispec.Descriptor, error) {
	_, l, err := bundleManifest(ctx, c.c, c.local, bd, what)
	return l, err
}

func bundleManifest(ctx context.Context, c *client, local Local, bd ocispec.Descriptor, what string) (ocispec.Manifest, ocispec.Descriptor, error) {
	data, err := readManifest(ctx, c, local, bd, what+"'s bundle manifest")
	if err != nil {
		return ocispec.Manifest{}, ocispec.Descriptor{}, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil || m.MediaType != ocispec.MediaTypeImageManifest || m.ArtifactType != ArtifactTypeBundle || len(m.Layers) != 1 || (m.Layers[0].MediaType != MediaTypeBundleLayer && m.Layers[0].MediaType != MediaTypeBundleLayerZip) {
		return m, ocispec.Descriptor{}, &Error{Ref: c.ref, What: what, Kind: ErrIntegrity, Err: fmt.Errorf("%s is not a berth bundle manifest (artifactType %s, one layer %s or %s)", bd.Digest, ArtifactTypeBundle, MediaTypeBundleLayer, MediaTypeBundleLayerZip)}
	}
	if m.Layers[0].Size > MaxArchive || m.Layers[0].Size < 0 {
		return m, ocispec.Descriptor{}, &Error{Ref: c.ref, What: what, Kind: ErrIntegrity, Err: fmt.Errorf("its archive is %d bytes, over the limit of %d", m.Layers[0].Size, MaxArchive)}
	}
	return m, m.Layers[0], nil
}

// signatureOf finds the Sigstore bundle attached to a bundle manifest as
// a referrer (the referrers API, or the tag schema where the registry
// has none) and returns its layer. With several, the first in digest
// order is taken; its verification decides.
func signatureOf(ctx context.Context, c *client, bd ocispec.Descriptor, what string) (ocispec.Descriptor, error) {
	// The listing (the referrers API, then the tag schema's index where
	// the registry has no API) under one request timeout, each referrer
	// manifest under its own.
	lctx, cancel := context.WithTimeout(ctx, c.o.requestTimeout())
	var refs []ocispec.Descriptor
	subject := ocispec.Descriptor{MediaType: bd.MediaType, Digest: bd.Digest, Size: bd.Size}
	err := c.repo.Referrers(lctx, subject, ArtifactTypeSigstore, func(rs []ocispec.Descriptor) error {
		refs = append(refs, rs...)
		return nil
	})
	cancel()
	if err != nil {
		return ocispec.Descriptor{}, &Error{Ref: c.ref, What: what, Kind: classifyErr(err), Err: fmt.Errorf("listing the referrers of %s: %w", bd.Digest, err)}
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].Digest < refs[j].Digest })
	for _, r := range refs {
		if r.ArtifactType != ArtifactTypeSigstore || r.MediaType != ocispec.MediaTypeImageManifest {
			continue
		}
		mctx, cancel := context.WithTimeout(ctx, c.o.requestTimeout())
		data, err := readManifest(mctx, c, nil, r, what)
		cancel()
		if err != nil {
			return ocispec.Descriptor{}, err
		}
		var m ocispec.Manifest
		if json.Unmarshal(data, &m) != nil || m.Subject == nil || m.Subject.Digest != bd.Digest || len(m.Layers) != 1 || m.Layers[0].MediaType != ArtifactTypeSigstore {
			continue
		}
		if m.Layers[0].Size > MaxSignature || m.Layers[0].Size < 0 {
			return ocispec.Descriptor{}, &Error{Ref: c.ref, What: what, Kind: ErrIntegrity, Err: fmt.Errorf("the signature is %d bytes, over the limit of %d", m.Layers[0].Size, MaxSignature)}
		}
		return m.Layers[0], nil
	}
	return ocispec.Descriptor{}, &Error{Ref: c.ref, What: what, Kind: ErrNotFound, Err: fmt.Errorf("the bundle manifest %s has no referrer of artifactType %s", bd.Digest, ArtifactTypeSigstore)}
}

// PulledBundle is a bundle read from a registry by digest.
type PulledBundle struct {
	// Name and Version are the manifest's annotations ("" when absent).
	Name, Version string
	// FileName is the archive's file name from its layer's title when
	// that names an archive of the layer's format, else "bundle.tar.gz"
	// or "bundle.zip" by the layer's media type.
	FileName string
	// Signature is the Sigstore bundle, nil when none is attached.
	Signature []byte
}

// PullBundle reads the bundle manifest at ref's digest, writes its
// archive to w (checked against the layer's digest as it streams) and
// reads its signature referrer. A ref without a digest is refused: a tag
// can be moved, a digest cannot.
func PullBundle(ctx context.Context, ref *Ref, w io.Writer, o *Options) (*PulledBundle, error) {
	if ref.Digest == "" {
		return nil, fmt.Errorf("%s names no digest; a tag can be moved to other content, so berth trusts a bundle in a registry only by digest: write %s@sha256:<digest> (berth push prints it)", ref, ref.Repo())
	}
	c, err := newClient(ref, o)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, c.o.requestTimeout())
	defer cancel()
	bd := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.Digest(ref.Digest), Size: -1}
	data, err := readManifest(rctx, c, nil, bd, ref.Digest)
	if err != nil {
		return nil, err
	}
	bd.Size = int64(len(data))
	m, layer, err := bundleManifest(rctx, c, func(digest.Digest) []byte { return data }, bd, ref.Digest)
	if err != nil {
		return nil, err
	}
	out := &PulledBundle{Name: m.Annotations[AnnotationName], Version: m.Annotations[AnnotationVersion], FileName: path.Base(layer.Annotations[AnnotationTitle])}
	if archiveMediaType(out.FileName) != layer.MediaType || strings.ContainsAny(out.FileName, "/\\") || strings.HasPrefix(out.FileName, ".") {
		out.FileName = map[string]string{MediaTypeBundleLayer: "bundle.tar.gz", MediaTypeBundleLayerZip: "bundle.zip"}[layer.MediaType]
	}
	dctx, dcancel := context.WithTimeout(ctx, c.o.downloadTimeout())
	defer dcancel()
	rc, err := c.repo.Fetch(dctx, layer)
	if err != nil {
		return nil, &Error{Ref: ref, What: "the archive", Kind: classifyErr(err), Err: err}
	}
	defer rc.Close()
	if _, err := io.Copy(w, newVerifyReader(rc, layer, layer.Size)); err != nil {
		return nil, &Error{Ref: ref, What: "the archive", Kind: classifyErr(err), Err: err}
	}
	sd, err := signatureOf(ctx, c, bd, "the signature")
	if err != nil {
		if e, ok := err.(*Error); ok && e.Kind == ErrNotFound {
			return out, nil
		}
		return nil, err
	}
	// A request of its own: the archive's download may have outlasted
	// rctx.
	sctx, scancel := context.WithTimeout(ctx, c.o.requestTimeout())
	defer scancel()
	src, err := c.repo.Fetch(sctx, sd)
	if err != nil {
		return nil, &Error{Ref: ref, What: "the signature", Kind: classifyErr(err), Err: err}
	}
	defer src.Close()
	if out.Signature, err = io.ReadAll(newVerifyReader(src, sd, MaxSignature)); err != nil {
		return nil, &Error{Ref: ref, What: "the signature", Kind: classifyErr(err), Err: err}
	}
	return out, nil
}

// verifyReader passes on at most max bytes and, at the end, checks the
// size and digest of what passed; a mismatch is an error wrapping
// ErrIntegrity in place of io.EOF.
type verifyReader struct {
	r    io.Reader
	desc ocispec.Descriptor
	max  int64
	h    hash.Hash
	n    int64
}

func newVerifyReader(r io.Reader, desc ocispec.Descriptor, max int64) *verifyReader {
	return &verifyReader{r: r, desc: desc, max: max, h: digest.SHA256.Hash()}
}

func (v *verifyReader) Read(p []byte) (int, error) {
	if v.desc.Digest.Algorithm() != digest.SHA256 {
		return 0, fmt.Errorf("%w: the digest %s is not sha256", ErrIntegrity, v.desc.Digest)
	}
	if v.max < 0 {
		return 0, fmt.Errorf("%w: its descriptor says %d bytes", ErrIntegrity, v.desc.Size)
	}
	// One byte past max, to notice more; v.n never passes max + 1.
	if room := v.max - v.n; room < int64(len(p)) {
		p = p[:room+1]
	}
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if v.n > v.max || (v.desc.Size >= 0 && v.n > v.desc.Size) {
		return n, fmt.Errorf("%w: more than the %d bytes its descriptor says", ErrIntegrity, min(v.max, v.desc.Size))
	}
	if err == io.EOF {
		if v.desc.Size >= 0 && v.n != v.desc.Size {
			return n, fmt.Errorf("%w: %d bytes, but its descriptor says %d", ErrIntegrity, v.n, v.desc.Size)
		}
		if got := digest.NewDigest(digest.SHA256, v.h); got != v.desc.Digest {
			return n, fmt.Errorf("%w: its sha256 is %s, not %s", ErrIntegrity, got.Encoded(), v.desc.Digest.Encoded())
		}
	}
	return n, err
}

type verifyCloser struct {
	io.Reader
	c    io.Closer
	ref  *Ref
	what string
}

func (v *verifyCloser) Read(p []byte) (int, error) {
	n, err := v.Reader.Read(p)
	if err != nil && err != io.EOF {
		err = &Error{Ref: v.ref, What: v.what, Kind: classifyErr(err), Err: err}
	}
	return n, err
}

func (v *verifyCloser) Close() error { return v.c.Close() }

// cleanRel reports whether rel is a clean relative slash path.
func cleanRel(rel string) bool {
	return rel != "" && !strings.HasPrefix(rel, "/") && path.Clean(rel) == rel && !strings.Contains(rel, "\\") && rel != "." && !strings.HasPrefix(rel, "../")
}
