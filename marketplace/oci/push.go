package oci

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// PushResult says what a push sent.
type PushResult struct {
	// Ref is where it was pushed, at the digest of what the tag points
	// at (the catalog's index, or the bundle's manifest).
	Ref *Ref
	// Tag is the tag that was set, or "".
	Tag string
	// Files is the number of files pushed as blobs (metadata, archives,
	// signatures), Uploaded how many of them the registry did not have
	// yet, and UploadedBytes their size.
	Files, Uploaded int
	UploadedBytes   int64
	// Bundles is the number of bundle manifests.
	Bundles int
}

// metadataFile matches the TUF metadata at a catalog's root: root.json,
// timestamp.json, N.root.json, N.snapshot.json, N.targets.json (and the
// unversioned snapshot.json and targets.json of a repository without
// consistent snapshots).
var metadataFile = regexp.MustCompile(`^([1-9][0-9]{0,18}\.)?(root|timestamp|snapshot|targets)\.json$`)

// catalogTarget matches the catalog target under targets/.
var catalogTarget = regexp.MustCompile(`^targets/[0-9a-f]{64}\.catalog\.json$`)

// file is one file of a catalog directory as it is pushed.
type file struct {
	rel string // slash path relative to the catalog root
}

// PushCatalog publishes the catalog directory dir (its TUF metadata, its
// catalog target, every bundle archive under bundles/ with its Sigstore
// bundle as a referrer) to ref, and points ref's tag (DefaultTag when it
// has none) at the new index last, in one request, so a reader sees the
// old catalog or the new one. Blobs the registry already has are not sent
// again. dir is read through os.Root: nothing outside it is read.
func PushCatalog(ctx context.Context, dir string, ref *Ref, o *Options) (*PushResult, error) {
	if ref.Digest != "" {
		return nil, fmt.Errorf("%s names a digest; push a catalog to a tag (oci://REGISTRY/REPOSITORY[:TAG], the tag defaults to %q)", ref, DefaultTag)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	meta, archives, err := catalogFiles(root)
	if err != nil {
		return nil, err
	}
	if !hasFile(meta, "root.json") || !hasFile(meta, "timestamp.json") || !hasFile(meta, "1.root.json") {
		return nil, fmt.Errorf("%s is not a published berth catalog: it has no 1.root.json, root.json and timestamp.json; make one with berth catalog init and berth catalog add", dir)
	}
	if meta, err = currentMetadata(root, meta); err != nil {
		return nil, fmt.Errorf("%s: %v", dir, err)
	}
	c, err := newClient(ref, o)
	if err != nil {
		return nil, err
	}
	res := &PushResult{}
	p := &pusher{c: c, root: root, res: res}
	if err := p.emptyConfig(ctx); err != nil {
		return nil, err
	}
	var layers []ocispec.Descriptor
	for i := range meta {
		mt := MediaTypeTUF
		if strings.HasPrefix(meta[i].rel, "targets/") {
			mt = MediaTypeCatalogTarget
		}
		d, err := p.blob(ctx, meta[i].rel, mt)
		if err != nil {
			return nil, err
		}
		d.Annotations = map[string]string{AnnotationTitle: meta[i].rel}
		layers = append(layers, d)
	}
	index := ocispec.Index{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageIndex,
		ArtifactType: ArtifactTypeCatalog,
	}
	md, err := p.manifest(ctx, ArtifactTypeMetadata, layers, nil, nil)
	if err != nil {
		return nil, err
	}
	md.ArtifactType = ArtifactTypeMetadata
	bundles := ocispec.Index{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageIndex,
		ArtifactType: ArtifactTypeBundles,
		Manifests:    []ocispec.Descriptor{},
	}
	for _, a := range archives {
		bd, err := p.bundle(ctx, a.rel, a.sig, bundleName(a.rel))
		if err != nil {
			return nil, err
		}
		bd.Annotations = map[string]string{AnnotationTitle: a.rel}
		bundles.Manifests = append(bundles.Manifests, bd)
	}
	res.Bundles = len(archives)
	bdata, err := json.Marshal(bundles)
	if err != nil {
		return nil, err
	}
	bi := descriptorOf(ocispec.MediaTypeImageIndex, bdata)
	if err := p.push(ctx, bi, bdata, "the bundles index"); err != nil {
		return nil, err
	}
	bi.ArtifactType = ArtifactTypeBundles
	index.Manifests = append(index.Manifests, md, bi)
	data, err := json.Marshal(index)
	if err != nil {
		return nil, err
	}
	id := descriptorOf(ocispec.MediaTypeImageIndex, data)
	tag := ref.tagOr(DefaultTag)
	rctx, cancel := context.WithTimeout(ctx, c.o.requestTimeout())
	defer cancel()
	if err := c.repo.PushReference(rctx, id, bytes.NewReader(data), tag); err != nil {
		return nil, pushError(ref, "the catalog's index", err)
	}
	res.Ref, res.Tag = ref.WithDigest(id.Digest.String()), tag
	return res, nil
}

// BundleFiles is one bundle to push: its archive, its Sigstore bundle,
// and the plugin name and version its manifest is annotated with.
type BundleFiles struct {
	Archive, Signature string
	Name, Version      string
}

// PushBundle pushes one bundle archive as a bundle manifest with its
// Sigstore bundle as a referrer, and tags it when ref has a tag.
func PushBundle(ctx context.Context, b BundleFiles, ref *Ref, o *Options) (*PushResult, error) {
	if ref.Digest != "" {
		return nil, fmt.Errorf("%s names a digest; push to a repository or a tag, and berth prints the digest", ref)
	}
	c, err := newClient(ref, o)
	if err != nil {
		return nil, err
	}
	res := &PushResult{}
	p := &pusher{c: c, res: res}
	if err := p.emptyConfig(ctx); err != nil {
		return nil, err
	}
	bd, err := p.bundle(ctx, b.Archive, b.Signature, [2]string{b.Name, b.Version})
	if err != nil {
		return nil, err
	}
	res.Bundles = 1
	res.Ref = ref.WithDigest(bd.Digest.String())
	if ref.Tag != "" {
		rctx, cancel := context.WithTimeout(ctx, c.o.requestTimeout())
		defer cancel()
		if err := c.repo.Tag(rctx, bd, ref.Tag); err != nil {
			return nil, pushError(ref, "the tag "+ref.Tag, err)
		}
		res.Tag = ref.Tag
	}
	return res, nil
}

type pusher struct {
	c    *client
	root *os.Root // nil: paths are the operator's own
	res  *PushResult
}

func (p *pusher) open(name string) (*os.File, error) {
	if p.root != nil {
		return p.root.Open(name)
	}
	return os.Open(name)
}

// blob pushes the file name (when the registry lacks it) and returns its
// descriptor.
func (p *pusher) blob(ctx context.Context, name, mediaType string) (ocispec.Descriptor, error) {
	f, err := p.open(name)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	if !fi.Mode().IsRegular() {
		return ocispec.Descriptor{}, fmt.Errorf("%s is not a regular file; berth pushes only regular files", name)
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	d := ocispec.Descriptor{MediaType: mediaType, Digest: digest.NewDigestFromBytes(digest.SHA256, h.Sum(nil)), Size: n}
	p.res.Files++
	rctx, cancel := context.WithTimeout(ctx, p.c.o.requestTimeout())
	ok, err := p.c.repo.Exists(rctx, d)
	cancel()
	if err != nil {
		return d, pushError(p.c.ref, name, err)
	}
	if ok {
		return d, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return d, err
	}
	uctx, cancel := context.WithTimeout(ctx, p.c.o.downloadTimeout())
	defer cancel()
	// The registry checks the digest of what it receives; a file changed
	// while berth reads it is refused there.
	if err := p.c.repo.Push(uctx, d, io.LimitReader(f, n)); err != nil {
		return d, pushError(p.c.ref, name, err)
	}
	p.res.Uploaded++
	p.res.UploadedBytes += n
	return d, nil
}

func (p *pusher) emptyConfig(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, p.c.o.requestTimeout())
	defer cancel()
	d := ocispec.DescriptorEmptyJSON
	ok, err := p.c.repo.Exists(rctx, d)
	if err != nil {
		return pushError(p.c.ref, "the empty config", err)
	}
	if ok {
		return nil
	}
	if err := p.c.repo.Push(rctx, d, bytes.NewReader(d.Data)); err != nil {
		return pushError(p.c.ref, "the empty config", err)
	}
	return nil
}

// manifest pushes an image manifest with the empty config and returns
// its descriptor. Manifests carry no timestamp: the same content gives
// the same digest.
func (p *pusher) manifest(ctx context.Context, artifactType string, layers []ocispec.Descriptor, subject *ocispec.Descriptor, annotations map[string]string) (ocispec.Descriptor, error) {
	cfg := ocispec.DescriptorEmptyJSON
	cfg.Data = nil
	if subject != nil {
		// A referrer's config carries its artifact type too: registries
		// that follow an earlier draft of the referrers API (among them
		// go-containerregistry's) report the config's media type as the
		// referrer's artifactType. The content is still the empty {}.
		cfg.MediaType = artifactType
	}
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: artifactType,
		Config:       cfg,
		Layers:       layers,
		Subject:      subject,
		Annotations:  annotations,
	}
	data, err := json.Marshal(m)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	d := descriptorOf(ocispec.MediaTypeImageManifest, data)
	// A manifest with a subject is always sent: on a registry without
	// the referrers API, oras-go adds it to the referrers tag's index
	// then (and leaves an index that has it as it is), so a push cut
	// short before that is mended by the next one.
	if subject != nil {
		rctx, cancel := context.WithTimeout(ctx, p.c.o.requestTimeout())
		defer cancel()
		if err := p.c.repo.Push(rctx, d, bytes.NewReader(data)); err != nil {
			return d, pushError(p.c.ref, "a signature referrer", err)
		}
		return d, nil
	}
	return d, p.push(ctx, d, data, "a manifest")
}

// push sends a manifest or index the registry does not have yet.
func (p *pusher) push(ctx context.Context, d ocispec.Descriptor, data []byte, what string) error {
	rctx, cancel := context.WithTimeout(ctx, p.c.o.requestTimeout())
	defer cancel()
	ok, err := p.c.repo.Exists(rctx, d)
	if err != nil {
		return pushError(p.c.ref, what, err)
	}
	if ok {
		return nil
	}
	if err := p.c.repo.Push(rctx, d, bytes.NewReader(data)); err != nil {
		return pushError(p.c.ref, what, err)
	}
	return nil
}

// bundle pushes an archive as a bundle manifest and its signature as a
// referrer of it.
func (p *pusher) bundle(ctx context.Context, archive, signature string, nv [2]string) (ocispec.Descriptor, error) {
	mt := archiveMediaType(archive)
	if mt == "" {
		return ocispec.Descriptor{}, fmt.Errorf("%s is not an archive berth reads (.tar.gz, .tgz, .zip or .mcpb); pack a bundle directory with berth push DIR", archive)
	}
	ld, err := p.blob(ctx, archive, mt)
	if err != nil {
		return ld, err
	}
	ld.Annotations = map[string]string{AnnotationTitle: path.Base(strings.ReplaceAll(archive, "\\", "/"))}
	var ann map[string]string
	if nv[0] != "" {
		ann = map[string]string{AnnotationName: nv[0], AnnotationVersion: nv[1]}
	}
	bd, err := p.manifest(ctx, ArtifactTypeBundle, []ocispec.Descriptor{ld}, nil, ann)
	if err != nil {
		return bd, err
	}
	bd.ArtifactType = ArtifactTypeBundle
	if signature == "" {
		return bd, nil
	}
	sd, err := p.blob(ctx, signature, ArtifactTypeSigstore)
	if err != nil {
		return bd, err
	}
	sd.Annotations = map[string]string{AnnotationTitle: path.Base(strings.ReplaceAll(signature, "\\", "/"))}
	subject := ocispec.Descriptor{MediaType: bd.MediaType, Digest: bd.Digest, Size: bd.Size}
	if _, err := p.manifest(ctx, ArtifactTypeSigstore, []ocispec.Descriptor{sd}, &subject, nil); err != nil {
		return bd, err
	}
	return bd, nil
}

func descriptorOf(mediaType string, data []byte) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
}

func hasFile(fs []file, rel string) bool {
	for _, f := range fs {
		if f.rel == rel {
			return true
		}
	}
	return false
}

type archiveFile struct{ rel, sig string }

// catalogFiles lists what a catalog directory publishes: metadata at the
// root and under targets/, and archives (with their .sigstore.json when
// present) under bundles/. Sorted, so a push is deterministic.
func catalogFiles(root *os.Root) ([]file, []archiveFile, error) {
	var meta []file
	var archives []archiveFile
	ents, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return nil, nil, err
	}
	for _, e := range ents {
		if e.Type().IsRegular() && metadataFile.MatchString(e.Name()) {
			meta = append(meta, file{rel: e.Name()})
		}
	}
	if ents, err := fs.ReadDir(root.FS(), "targets"); err == nil {
		for _, e := range ents {
			rel := "targets/" + e.Name()
			if e.Type().IsRegular() && catalogTarget.MatchString(rel) {
				meta = append(meta, file{rel: rel})
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	sigs := map[string]bool{}
	var all []string
	err = fs.WalkDir(root.FS(), "bundles", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == "bundles" {
				return fs.SkipDir
			}
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symbolic link; berth pushes only regular files of the catalog directory (remove it)", p)
		}
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), ".") {
			// Hidden files (a pack's .tmp- leftovers) are not the catalog's.
			return nil
		}
		if strings.HasSuffix(p, ".sigstore.json") {
			sigs[p] = true
		} else {
			all = append(all, p)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(all)
	for _, a := range all {
		af := archiveFile{rel: a}
		if sigs[a+".sigstore.json"] {
			af.sig = a + ".sigstore.json"
		}
		archives = append(archives, af)
	}
	sort.Slice(meta, func(i, j int) bool { return meta[i].rel < meta[j].rel })
	return meta, archives, nil
}

// currentMetadata keeps of meta what a client of the catalog's current
// version can ask for: every root version (clients walk rotations), the
// timestamp, the snapshot it names, the targets that snapshot names, and
// the catalog targets those list. Older versions are of no use to a
// client, and would make every update read a longer manifest.
func currentMetadata(root *os.Root, meta []file) ([]file, error) {
	read := func(name string, v any) error {
		if !hasFile(meta, name) {
			// Only regular files were listed: a FIFO or device in its
			// place would block the read.
			return fmt.Errorf("%s is missing or not a regular file", name)
		}
		b, err := root.ReadFile(name)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, v); err != nil {
			return fmt.Errorf("%s is not TUF metadata: %v", name, err)
		}
		return nil
	}
	var ts struct {
		Signed struct {
			Meta map[string]struct{ Version int64 } `json:"meta"`
		} `json:"signed"`
	}
	if err := read("timestamp.json", &ts); err != nil {
		return nil, err
	}
	snap := fmt.Sprintf("%d.snapshot.json", ts.Signed.Meta["snapshot.json"].Version)
	var sn struct {
		Signed struct {
			Meta map[string]struct{ Version int64 } `json:"meta"`
		} `json:"signed"`
	}
	if err := read(snap, &sn); err != nil {
		return nil, fmt.Errorf("the snapshot the timestamp names: %v", err)
	}
	targ := fmt.Sprintf("%d.targets.json", sn.Signed.Meta["targets.json"].Version)
	var tg struct {
		Signed struct {
			Targets map[string]struct {
				Hashes map[string]string `json:"hashes"`
			} `json:"targets"`
		} `json:"signed"`
	}
	if err := read(targ, &tg); err != nil {
		return nil, fmt.Errorf("the targets the snapshot names: %v", err)
	}
	keep := map[string]bool{"root.json": true, "timestamp.json": true, snap: true, targ: true}
	for name, t := range tg.Signed.Targets {
		keep["targets/"+t.Hashes["sha256"]+"."+name] = true
	}
	var out []file
	for _, f := range meta {
		if keep[f.rel] || strings.HasSuffix(f.rel, ".root.json") {
			out = append(out, f)
			delete(keep, f.rel)
		}
	}
	for rel := range keep {
		return nil, fmt.Errorf("it has no %s, which its current metadata names; is the catalog directory complete?", rel)
	}
	return out, nil
}

// bundleName reads the plugin name and version from an archive's path,
// bundles/<name>/<version>/<file>.
func bundleName(rel string) [2]string {
	parts := strings.Split(rel, "/")
	if len(parts) == 4 {
		return [2]string{parts[1], parts[2]}
	}
	return [2]string{}
}
