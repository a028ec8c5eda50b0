package marketplace

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/fetched"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/internal/textio"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// InstallRequest is what Cache.Install installs.
type InstallRequest struct {
	// Name is the plugin.
	Name string
	// Catalog is the catalog to install it from; "" means the one catalog
	// that lists Name (several are an *AmbiguousError: berth never
	// guesses).
	Catalog string
	// Constraint is a semver constraint ("" means any version); see
	// Resolve. It is ignored with Pin.
	Constraint string
	// Pin, when set, installs exactly a pinned version (berth sync: the
	// one berth.lock names): that version, at its digest, signed by its
	// signer; a yanked version is installed with a warning, a revoked one
	// never.
	Pin *Pin
	// AllowStale accepts a catalog copy past its expiry; the trust record
	// says so. Otherwise such a copy is a *StaleError.
	AllowStale bool
	// AllowSignerChange accepts a version signed by someone other than
	// the signer of the plugin's latest trusted version (it must still be
	// one of the catalog's allowed signers).
	AllowSignerChange bool
	// Resolve tunes resolution (the operator's MinReleaseAge, the clock).
	Resolve *ResolveOptions
	// Download tunes the download (temp directory, size cap, progress).
	Download *DownloadOptions
	// Bundle tunes how the downloaded bundle is opened.
	Bundle *bundle.Options
	// Confirm, when set, is called once the bundle is downloaded,
	// validated, verified, reviewed and checked against the catalog,
	// before anything is written; an error ends Install with nothing
	// changed. nil confirms, a new signer included.
	Confirm func(*InstallCandidate) error
	// StageProgress, when set, is told how far copying the bundle into
	// the store has got (store.TrustOptions.StageProgress).
	StageProgress store.StageProgress
	// Fetch tunes how the bundle's runtime-fetched servers are resolved
	// at trust (store.TrustOptions.Fetch); nil means defaults.
	Fetch *fetched.Options
}

// Pin is an exact version for Install to take: the version, its digest,
// and the one signer it may be signed by (berth.lock's entry of a plugin,
// lock.Plugin.Pin).
type Pin struct {
	Version string
	Digest  string
	// Constraint is what the plugin was installed for; the trust record
	// keeps it.
	Constraint string
	// Signer is the signer: Kind and Fingerprint, or Kind, Issuer and SAN
	// (PublicKey is not read).
	Signer catalog.Signer
}

// InstallCandidate is what Install is about to record, as Confirm sees it.
type InstallCandidate struct {
	// Candidate is the store's: the bundle, its review, its verified
	// signer, and NewSigner when the policy lacked the signer (Install
	// adds it, scoped to this plugin, once confirmed).
	*store.Candidate
	Catalog *CatalogInfo
	Plugin  *catalog.Plugin
	Version *catalog.Version
	// Warnings are worth a person's attention: a deprecated or yanked
	// version, a stale catalog.
	Warnings []string
}

// InstallResult says what Install did.
type InstallResult struct {
	Catalog    *CatalogInfo
	Plugin     *catalog.Plugin
	Version    *catalog.Version
	Resolution *Resolution
	// URL is where the archive came from.
	URL string
	// Trust is what the install pipeline did; Trust.Record is the record,
	// naming the catalog, and Trust.NewSigner the signer added.
	Trust    *store.TrustResult
	Warnings []string
}

// AmbiguousError refuses to pick between catalogs that list the same
// plugin name.
type AmbiguousError struct {
	Name     string
	Catalogs []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%s is in several catalogs (%s); berth does not guess: name the catalog to install it from (InstallRequest.Catalog)", e.Name, strings.Join(e.Catalogs, ", "))
}

// StaleError refuses a catalog copy past its expiry: the catalog may have
// revoked something since. It wraps trust.ErrUntrusted.
type StaleError struct {
	Catalog string
	Since   time.Time
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("the verified copy of catalog %s expired at %s, so it may hide a revocation; update it (berth marketplace update %s), or accept the stale copy (InstallRequest.AllowStale), which the trust record then says",
		e.Catalog, e.Since.UTC().Format(time.RFC3339), e.Catalog)
}

// Unwrap returns trust.ErrUntrusted.
func (e *StaleError) Unwrap() error { return trust.ErrUntrusted }

// RevokedVersionError refuses a version the catalog revoked: the one a
// lock names, or the highest a constraint matches when every version it
// matches is revoked. It wraps trust.ErrUntrusted.
type RevokedVersionError struct {
	Catalog, Name, Version, Reason string
}

func (e *RevokedVersionError) Error() string {
	return fmt.Sprintf("%s@%s is revoked by catalog %s (%q); berth never installs a revoked version: pick another (berth show %s lists them)",
		e.Name, e.Version, e.Catalog, e.Reason, e.Name)
}

// Unwrap returns trust.ErrUntrusted.
func (e *RevokedVersionError) Unwrap() error { return trust.ErrUntrusted }

// FindCatalog returns the catalog to take name from: catalog when given
// (which must list it), else the one catalog that lists it. None is an
// ErrNoPlugin error; several an *AmbiguousError.
func (c *Cache) FindCatalog(name, catName string) (string, error) {
	if catName != "" {
		return catName, CheckName(catName)
	}
	cats, err := c.Lookup(name)
	if err != nil {
		return "", err
	}
	switch len(cats) {
	case 0:
		return "", fmt.Errorf("%w: no catalog lists %s (berth search %s looks for similar names; berth marketplace update refreshes the catalogs)", ErrNoPlugin, name, name)
	case 1:
		return cats[0], nil
	}
	return "", &AmbiguousError{Name: name, Catalogs: cats}
}

// Install installs a plugin from a catalog's verified copy: it resolves
// the version (or takes the locked one), refuses a stale copy unless
// allowed, downloads the archive to a temp file with the size cap and the
// sha256 checked while it streams, and runs the one install pipeline,
// store.Store.Trust, with the catalog's digest pinned, the plugin's
// allowed signers as the only acceptable ones, those the policy lacks
// proposed (added scoped to this plugin once confirmed), the bundle
// checked against the catalog's review summary before anything is
// written (a *SummaryMismatchError), and the catalog named in the record
// with the tool list its curator gives the version (which upgrade diffs
// from).
// Install does not refresh the catalog (Update does) and does not enable.
func (c *Cache) Install(ctx context.Context, st *store.Store, req InstallRequest) (*InstallResult, error) {
	if err := store.CheckRef(req.Name, ""); err != nil {
		return nil, err
	}
	catName, err := c.FindCatalog(req.Name, req.Catalog)
	if err != nil {
		return nil, err
	}
	p, ci, err := c.Plugin(catName, req.Name)
	if err != nil {
		return nil, err
	}
	out := &InstallResult{Catalog: ci, Plugin: p}
	if ci.Stale {
		if !req.AllowStale {
			return nil, &StaleError{Catalog: catName, Since: ci.Expires()}
		}
		out.Warnings = append(out.Warnings, fmt.Sprintf("catalog %s is stale since %s (--allow-stale): it may not show a recent revocation", catName, ci.Expires().UTC().Format(time.RFC3339)))
	}
	ro := ResolveOptions{}
	if req.Resolve != nil {
		ro = *req.Resolve
	}
	constraint := req.Constraint
	if req.Pin != nil {
		constraint, ro.AllowYanked = "="+req.Pin.Version, true
	}
	res, err := Resolve(p, constraint, &ro)
	if err != nil {
		if res != nil {
			if v := revokedMatch(p, constraint); v != nil {
				return nil, &RevokedVersionError{Catalog: catName, Name: p.Name, Version: v.Version, Reason: v.Reason}
			}
		}
		return nil, err
	}
	out.Resolution = res
	v := res.Chosen
	out.Version = v
	switch v.Status {
	case catalog.StatusDeprecated:
		w := fmt.Sprintf("%s@%s is deprecated: %s", p.Name, v.Version, v.Reason)
		if v.Replacement != "" {
			w += " (the catalog suggests " + v.Replacement + " instead)"
		}
		out.Warnings = append(out.Warnings, w)
	case catalog.StatusYanked:
		out.Warnings = append(out.Warnings, fmt.Sprintf("%s@%s is yanked (%s); installing it because the lock names it", p.Name, v.Version, v.Reason))
	}
	allowed := p.Signers
	constraintRec := req.Constraint
	if l := req.Pin; l != nil {
		constraintRec = l.Constraint
		if v.Digest != l.Digest {
			return nil, fmt.Errorf("%w: catalog %s lists %s@%s with digest %s, but the lock pins %s; a published version never changes, so the lock or the catalog is not what it was: check with the curator, then run berth lock again", trust.ErrUntrusted, catName, p.Name, v.Version, v.Digest, l.Digest)
		}
		allowed = nil
		for _, s := range p.Signers {
			if s.Kind == l.Signer.Kind && (s.Kind == trust.KindKey && s.Fingerprint == l.Signer.Fingerprint || s.Kind == trust.KindIdentity && s.Issuer == l.Signer.Issuer && s.SAN == l.Signer.SAN) {
				allowed = append(allowed, s)
			}
		}
		if len(allowed) == 0 {
			return nil, fmt.Errorf("%w: the lock pins %s to the signer %s, which catalog %s no longer allows for it; check with the curator, then run berth lock again", trust.ErrUntrusted, p.Name, l.Signer.String(), catName)
		}
	}
	refs, proposed, err := signerSets(p.Name, allowed)
	if err != nil {
		return nil, err
	}
	digest, err := store.ParseDigest(v.Digest)
	if err != nil {
		return nil, err
	}
	d, err := c.Download(ctx, catName, v, req.Download)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	out.URL = d.URL
	origin := &store.CatalogOrigin{Name: catName, RootKeyIDs: append([]string(nil), ci.RootKeyIDs...), TargetsVersion: ci.TargetsVersion, Constraint: constraintRec, AllowStale: req.AllowStale, Tools: recordedTools(v)}
	if ci.Stale {
		t := ci.Expires().UTC()
		origin.StaleSince = &t
	}
	topts := &store.TrustOptions{
		Bundle:            req.Bundle,
		Signature:         d.Signature,
		Digest:            digest,
		AllowSignerChange: req.AllowSignerChange,
		Source:            locationOf(ci.Source, d.URL),
		AllowedSigners:    refs,
		ProposedSigners:   proposed,
		Catalog:           origin,
		StageProgress:     req.StageProgress,
		Fetch:             req.Fetch,
		Confirm: func(sc *store.Candidate) error {
			if err := CheckBundle(p.Name, v, sc.Bundle); err != nil {
				return err
			}
			if req.Confirm == nil {
				return nil
			}
			return req.Confirm(&InstallCandidate{Candidate: sc, Catalog: ci, Plugin: p, Version: v, Warnings: out.Warnings})
		},
	}
	tr, err := st.Trust(ctx, d.Archive, topts)
	if err != nil {
		return nil, err
	}
	out.Trust = tr
	return out, nil
}

// revokedMatch returns the highest version that satisfies constraint
// when every version that does is revoked: then the constraint asks for a
// revoked version, and the refusal says so (exit 4) rather than that
// nothing qualifies.
func revokedMatch(p *catalog.Plugin, constraint string) *catalog.Version {
	cs := "*"
	if strings.TrimSpace(constraint) != "" {
		cs = constraint
	}
	c, err := semver.NewConstraint(cs)
	if err != nil {
		return nil
	}
	var best *catalog.Version
	var bestV *semver.Version
	for _, v := range p.Versions {
		sv, err := semver.StrictNewVersion(v.Version)
		if err != nil || !c.Check(sv) {
			continue
		}
		if v.Status != catalog.StatusRevoked {
			return nil
		}
		if bestV == nil || bundle.VersionLess(bestV.Original(), sv.Original()) {
			best, bestV = v, sv
		}
	}
	return best
}

// signerSets turns a plugin's allowed catalog signers into what the
// pipeline takes: the references it accepts, and each as a signer scoped
// to the plugin that it may add to the policy.
func signerSets(plugin string, allowed []*catalog.Signer) ([]store.SignerRef, []trust.Signer, error) {
	refs := []store.SignerRef{}
	var proposed []trust.Signer
	for _, s := range allowed {
		var ts trust.Signer
		var err error
		switch s.Kind {
		case trust.KindKey:
			refs = append(refs, store.SignerRef{Kind: trust.KindKey, Fingerprint: s.Fingerprint})
			ts, err = trust.NewKeySigner("catalog", []byte(s.PublicKey), nil)
		case trust.KindIdentity:
			refs = append(refs, store.SignerRef{Kind: trust.KindIdentity, Issuer: s.Issuer, SAN: s.SAN})
			ts, err = trust.NewIdentitySigner("catalog", s.Issuer, s.SAN, "", "")
		default:
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("the catalog's signer %s of %s is unusable: %w", s, plugin, err)
		}
		ts.Plugin = plugin
		ts.Name = store.ScopedSignerName(plugin, ts)
		proposed = append(proposed, ts)
	}
	return refs, proposed, nil
}

// locationOf is a download location as a trust record names it: an
// absolute URL as it is, a relative one resolved against the catalog's
// source.
func locationOf(source, loc string) string {
	if textio.HasScheme(loc) {
		return loc
	}
	if strings.Contains(source, "://") {
		base, err := url.Parse(source)
		if err != nil {
			return source + " " + loc
		}
		ref, err := url.Parse(loc)
		if err != nil {
			return source + " " + loc
		}
		return base.ResolveReference(ref).String()
	}
	return filepath.Join(source, filepath.FromSlash(loc))
}
