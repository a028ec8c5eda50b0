package repo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// ReadmeError is AddVersion refusing the README.md of bundle Source: Size
// bytes, over MaxReadme, or not UTF-8 text (NotUTF8). The fix is a
// shorter README or AddRequest.OmitReadme.
type ReadmeError struct {
	Source  string
	Size    int64
	NotUTF8 bool
}

func (e *ReadmeError) Error() string {
	if e.NotUTF8 {
		return fmt.Sprintf("%s: README.md is not UTF-8 text; convert it, or leave it out (OmitReadme)", e.Source)
	}
	return fmt.Sprintf("%s: README.md is %d bytes, over the %d a catalog carries; shorten it, or leave it out (OmitReadme)", e.Source, e.Size, catalog.MaxReadme)
}

// AddRequest is what Repository.Add publishes.
type AddRequest struct {
	// Source is the bundle: a directory or a .tar.gz/.tgz/.zip archive.
	Source string
	// BundleOptions are the limits for opening it; nil means defaults.
	BundleOptions *bundle.Options
	// Signature is the bundle's Sigstore signature (JSON).
	Signature []byte
	// Verifier holds the signer policy of the berth that runs the command;
	// the signature must verify against it.
	Verifier *trust.Verifier
	// URL is the absolute https URL where the archive Source will be
	// served. "" copies the archive (or, for a directory, a .tar.gz packed
	// from it) into DIR/bundles/ and lists it relative to the catalog.
	URL string
	// Tier sets the plugin's tier; "" keeps it (community for a new one).
	Tier catalog.Tier
	// Tags replace the plugin's tags when non-nil.
	Tags []string
	// Icon is a PNG image for the plugin (CheckIcon); nil keeps the one
	// it has.
	Icon []byte
	// OmitReadme leaves the bundle's README.md out. The plugin's README is
	// that of its highest version: adding a new highest version replaces
	// it (with none, when OmitReadme is set or the bundle has none).
	OmitReadme bool
}

// AddResult says what Repository.Add did.
type AddResult struct {
	Plugin, Version, Digest string
	Signer                  *catalog.Signer
	SignerRef               *store.SignerRef
	// NewPlugin is true when the plugin was not in the catalog before.
	NewPlugin bool
	// Already is true when this version with this digest was in the
	// catalog already; nothing was published.
	Already bool
	// Archive is where the archive was copied in DIR ("" with a URL).
	Archive string
	Publish *PublishResult
}

// ErrVersionChanged marks an attempt to publish a version that the
// catalog already lists with another digest: versions are immutable. The
// error also wraps trust.ErrUntrusted (exit 4), as berth trust does.
var ErrVersionChanged = errors.New("published versions are immutable")

// Add validates the bundle, verifies its signature against the signer
// policy, checks the signer against the plugin's allowed signers (and
// records it the first time), computes the digest and review summary,
// copies the archive and signature into DIR (archive only without a URL),
// and publishes a new version of the catalog.
func (r *Repository) Add(ctx context.Context, req AddRequest) (*AddResult, error) {
	if req.Verifier == nil {
		panic("marketplace: AddRequest.Verifier is nil")
	}
	if err := checkAddRequest(&req); err != nil {
		return nil, err
	}
	pub, cat, unlock, err := r.lockWorking(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	b, err := bundle.Open(ctx, req.Source, req.BundleOptions)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	p, out, err := r.admit(ctx, cat, b, &req)
	if err != nil {
		return nil, err
	}
	if v := p.Version(b.Manifest.Version); v != nil {
		return r.addAgain(pub, cat, v, b, out)
	}
	if err := describe(p, b, &req); err != nil {
		return nil, err
	}
	keys, err := r.keysFor(&pub.root.Signed, metadata.TARGETS, metadata.SNAPSHOT, metadata.TIMESTAMP)
	if err != nil {
		return nil, err
	}
	v, rel, archive, err := r.pack(ctx, b, &req)
	if err != nil {
		return nil, err
	}
	if req.URL == "" {
		out.Archive = filepath.Join(r.dir, filepath.FromSlash(rel))
	}
	p.Versions = append(p.Versions, v)
	cat.Sort()
	if ps := catalog.CheckPlugin(p, "plugin "+p.Name); catalog.HasErrors(ps) {
		return nil, fmt.Errorf("the new entry of %s breaks catalog rules:\n  %s", p.Name, joinProblems(ps))
	}
	if out.Publish, err = r.publishAdded(pub, keys, cat, v, rel, archive, &req); err != nil {
		return nil, err
	}
	return out, nil
}

// checkAddRequest checks what Add is asked before anything is read.
func checkAddRequest(req *AddRequest) error {
	switch req.Tier {
	case "", catalog.TierOfficial, catalog.TierVerified, catalog.TierCommunity:
	default:
		return fmt.Errorf("tier %q: write official, verified or community", req.Tier)
	}
	for _, t := range req.Tags {
		if !catalog.ValidTag(t) {
			return fmt.Errorf("%q is not a tag: lower-case letters, digits and '-', up to 32 characters", t)
		}
	}
	if req.URL != "" {
		if err := catalog.CheckLocation(req.URL); err != nil || !strings.HasPrefix(strings.ToLower(req.URL), "https://") {
			return fmt.Errorf("the archive's URL %q is not an absolute https URL; give the URL where the archive will be served", req.URL)
		}
	}
	if req.Icon != nil {
		if err := catalog.CheckIcon(req.Icon); err != nil {
			return err
		}
	}
	return nil
}

// admit verifies the bundle's signature against the signer policy and
// finds its entry in the working copy: a new entry (added to cat) whose
// one allowed signer is the bundle's, or the existing one, which must
// allow that signer.
func (r *Repository) admit(ctx context.Context, cat *catalog.Catalog, b *bundle.Bundle, req *AddRequest) (*catalog.Plugin, *AddResult, error) {
	if req.URL != "" && b.Kind == bundle.KindDirectory {
		return nil, nil, fmt.Errorf("a URL names where an archive is served, but %s is a directory: give the archive file itself", req.Source)
	}
	m := b.Manifest
	res, err := req.Verifier.VerifyPlugin(ctx, m.Name, b.Listing().Bytes(), req.Signature)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", req.Source, err)
	}
	ref := signerRefOf(res)
	out := &AddResult{Plugin: m.Name, Version: m.Version, Digest: b.Digest, Signer: catalog.SignerFor(res), SignerRef: ref}
	p := cat.Plugin(m.Name)
	if p == nil {
		out.NewPlugin = true
		p = &catalog.Plugin{Name: m.Name, Description: m.Description, Tier: catalog.TierCommunity, Homepage: m.Homepage, License: m.License, Signers: []*catalog.Signer{out.Signer}, Versions: []*catalog.Version{}}
		if m.Publisher != nil {
			p.Publisher = &catalog.Publisher{Name: m.Publisher.Name, URL: m.Publisher.URL}
		}
		cat.Plugins = append(cat.Plugins, p)
		return p, out, nil
	}
	allowed := false
	var names []string
	for _, s := range p.Signers {
		names = append(names, s.String())
		allowed = allowed || s.Matches(ref)
	}
	if !allowed {
		return nil, nil, fmt.Errorf("%w: %s is signed by %s, but this catalog allows only %s to publish %s; if its publisher really changed signers, add the new one to the plugin's \"signers\" in %s and run berth catalog sign",
			trust.ErrUntrusted, req.Source, ref, strings.Join(names, ", "), m.Name, filepath.Join(r.dir, workingFile))
	}
	return p, out, nil
}

// addAgain is Add of a version the working copy lists already (v): with
// the same digest it is published already (nothing to do) or was left
// unpublished by an add that stopped (published now); with another digest
// it is refused, as versions are immutable.
func (r *Repository) addAgain(pub *published, cat *catalog.Catalog, v *catalog.Version, b *bundle.Bundle, out *AddResult) (*AddResult, error) {
	m := b.Manifest
	if v.Digest != b.Digest {
		return nil, fmt.Errorf("%w: %s %s is already in the catalog with digest %s, and this bundle has %s; %w, so publish the change as a new version", trust.ErrUntrusted, m.Name, m.Version, v.Digest, b.Digest, ErrVersionChanged)
	}
	if isPublished(pub.catalog, m.Name, m.Version, b.Digest) {
		out.Already = true
		return out, nil
	}
	keys, err := r.keysFor(&pub.root.Signed, metadata.TARGETS, metadata.SNAPSHOT, metadata.TIMESTAMP)
	if err != nil {
		return nil, err
	}
	if out.Publish, err = r.publish(pub, keys, compact(cat.Marshal()), true); err != nil {
		return nil, err
	}
	return out, nil
}

// describe sets what the request says about the plugin (tier, tags,
// icon) and, when the bundle is its highest version, the readme.
func describe(p *catalog.Plugin, b *bundle.Bundle, req *AddRequest) error {
	if req.Tier != "" {
		p.Tier = req.Tier
	}
	if req.Tags != nil {
		p.Tags = append([]string(nil), req.Tags...)
	}
	if req.Icon != nil {
		p.Icon = base64.StdEncoding.EncodeToString(req.Icon)
	}
	if isHighest(p, b.Manifest.Version) {
		p.Readme = ""
		if !req.OmitReadme {
			var err error
			if p.Readme, err = bundleReadme(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// pack makes the catalog's entry of the bundle's version and its archive:
// a directory packed as .tar.gz and checked (it must open to the same
// digest), an archive file as given. rel is where the archive is served.
func (r *Repository) pack(ctx context.Context, b *bundle.Bundle, req *AddRequest) (v *catalog.Version, rel string, archive []byte, err error) {
	m := b.Manifest
	isDir := b.Kind == bundle.KindDirectory
	format := string(b.Kind)
	if isDir {
		format = "tar.gz"
	}
	v = &catalog.Version{
		Version:  m.Version,
		Digest:   b.Digest,
		Released: r.now().UTC().Truncate(time.Second),
		Status:   catalog.StatusActive,
		Summary:  catalog.NewSummary(review.New(b)),
	}
	if m.Requires != nil {
		v.RequiresBerth = m.Requires.Berth
	}
	rel = filepath.ToSlash(filepath.Join("bundles", m.Name, m.Version, m.Name+"-"+m.Version+"."+format))
	if isDir {
		var buf bytes.Buffer
		if err := packTarGz(ctx, b, &buf); err != nil {
			return nil, "", nil, err
		}
		archive = buf.Bytes()
		if err := checkPacked(ctx, r.dir, archive, b.Digest, req.BundleOptions); err != nil {
			return nil, "", nil, err
		}
	} else if archive, err = os.ReadFile(req.Source); err != nil {
		return nil, "", nil, err
	}
	sum := sha256.Sum256(archive)
	v.Archive = catalog.Archive{Format: format, Size: int64(len(archive)), SHA256: "sha256:" + hex.EncodeToString(sum[:])}
	if req.URL != "" {
		v.URLs = []string{req.URL}
	} else {
		v.URLs = []string{rel}
	}
	v.SignatureURL = rel + ".sigstore.json"
	return v, rel, archive, nil
}

// publishAdded writes the new version's archive (unless served
// elsewhere), its signature and the working copy, and publishes.
func (r *Repository) publishAdded(pub *published, keys map[string]*roleKey, cat *catalog.Catalog, v *catalog.Version, rel string, archive []byte, req *AddRequest) (*PublishResult, error) {
	if req.URL == "" {
		if err := writeServed(r.dir, rel, archive); err != nil {
			return nil, err
		}
	}
	if err := writeServed(r.dir, v.SignatureURL, req.Signature); err != nil {
		return nil, err
	}
	data := cat.Marshal()
	if err := writeServed(r.dir, workingFile, data); err != nil {
		return nil, err
	}
	return r.publish(pub, keys, compact(data), true)
}

// isHighest reports whether version is above every version p lists.
func isHighest(p *catalog.Plugin, version string) bool {
	for _, v := range p.Versions {
		if !bundle.VersionLess(v.Version, version) {
			return false
		}
	}
	return true
}

// bundleReadme reads the bundle's README.md, a regular file of at most
// MaxReadme bytes whose content is the one the listing hashed; "" when it
// has none.
func bundleReadme(b *bundle.Bundle) (string, error) {
	e, ok := b.Listing().Lookup("README.md")
	if !ok || e.Mode == bundle.ModeSymlink {
		return "", nil
	}
	if e.Size > catalog.MaxReadme {
		return "", &ReadmeError{Source: b.Source, Size: e.Size}
	}
	data, err := fsx.ReadFile(filepath.Join(b.Dir, "README.md"), catalog.MaxReadme)
	if err != nil {
		return "", err
	}
	if sha256.Sum256(data) != e.SHA256 {
		return "", fmt.Errorf("%s: README.md changed while berth read the bundle; run the command again", b.Source)
	}
	if !utf8.Valid(data) {
		return "", &ReadmeError{Source: b.Source, NotUTF8: true}
	}
	return string(data), nil
}

// isPublished reports whether the published catalog lists name@version
// with digest.
func isPublished(catalogJSON []byte, name, version, digest string) bool {
	c, _, err := catalog.Parse(catalogJSON)
	if err != nil {
		return false
	}
	p := c.Plugin(name)
	if p == nil {
		return false
	}
	v := p.Version(version)
	return v != nil && v.Digest == digest
}

// signerRefOf names the signer of a verification result as trust records
// do.
func signerRefOf(res *trust.Result) *store.SignerRef {
	ref := &store.SignerRef{Kind: res.Kind, Name: res.Signer.Name}
	if res.Kind == trust.KindKey {
		ref.Fingerprint = res.KeyFingerprint
	} else {
		ref.Issuer, ref.SAN = res.Issuer, res.SAN
	}
	return ref
}
