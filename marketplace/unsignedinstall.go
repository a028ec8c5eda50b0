package marketplace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/berth-mcp/berth/bundle"
	// The entries of unsigned catalogs are Claude Code plugins and MCP
	// Registry server.json documents: bundle.Open reads them once their
	// formats are registered.
	_ "github.com/berth-mcp/berth/bundle/formats"
	"github.com/berth-mcp/berth/bundle/importer"
	"github.com/berth-mcp/berth/fetched"
	"github.com/berth-mcp/berth/marketplace/builtin"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/foreign"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// UnsignedShowing is what berth show says of an entry of an unsigned
// source: its versions and why install would pick or skip each, and the
// review of one version, computed from the real bundle berth builds for
// it (a registry entry's server.json, a marketplace.json entry's plugin
// directory), with that bundle's digest, the one install needs. Its JSON
// form is berth show --json for such an entry.
type UnsignedShowing struct {
	Catalog *CatalogInfo `json:"catalog"`
	// Name is the berth plugin name, SourceName the source's own
	// (the registry name).
	Name        string `json:"name"`
	SourceName  string `json:"sourceName"`
	Description string `json:"description"`
	Homepage    string `json:"homepage,omitempty"`
	// Unsigned is always true: nobody signed this entry.
	Unsigned bool                   `json:"unsigned"`
	Versions []UnsignedShownVersion `json:"versions"`
	// Install is the version berth install NAME would pick; "" when none.
	Install string `json:"install"`
	// Shown is the version whose review and digest are shown.
	Shown string `json:"shown"`
	// Digest is the digest of the bundle of the shown version: what
	// install --digest must be.
	Digest string             `json:"digest"`
	Review *review.Disclosure `json:"review"`
	// MCPB is set when the entry is one MCP Bundle (its only package):
	// the bundle berth downloaded, checked and imported, which installs
	// under its own name and version.
	MCPB *ShownMCPB `json:"mcpb,omitempty"`
	// InstallCommand is the command that installs the shown version.
	InstallCommand string   `json:"installCommand"`
	Warnings       []string `json:"warnings"`
}

// ShownMCPB is the MCP Bundle of a registry entry: where it was
// downloaded from, its SHA-256 (the entry's fileSha256, checked), and the
// name and version its manifest gives it.
type ShownMCPB struct {
	URL     string `json:"url"`
	SHA256  string `json:"sha256"`
	Name    string `json:"name"`
	Version string `json:"version"`
}

// UnsignedShownVersion is one version of an UnsignedShowing.
type UnsignedShownVersion struct {
	Version       string         `json:"version"`
	Status        catalog.Status `json:"status"`
	StatusMessage string         `json:"statusMessage,omitempty"`
	Released      time.Time      `json:"released"`
	Picked        bool           `json:"picked"`
	Skipped       string         `json:"skipped,omitempty"`
}

// LookupName turns the name an operator gave into the berth plugin name
// to look up: a registry name (it holds a '/') is mapped by
// importer.RegistryPluginName, and returned as sourceName, which the entry
// found must have.
func LookupName(given string) (name, sourceName string, err error) {
	if !strings.Contains(given, "/") {
		return given, "", nil
	}
	name, err = importer.RegistryPluginName(given)
	if err != nil {
		return "", "", err
	}
	return name, given, nil
}

// CheckSourceName checks that entry p is the one the operator named by
// its registry name (sourceName, "" when they gave the berth name).
func CheckSourceName(p *foreign.UnsignedPlugin, catName, sourceName string) error {
	if sourceName != "" && p.SourceName != sourceName {
		return fmt.Errorf("%w: catalog %s lists %s as %s, not %s", ErrNoPlugin, catName, p.Name, p.SourceName, sourceName)
	}
	return nil
}

// lookupUnsigned returns the entry of the unsigned source catName that
// the operator named given (its berth name or its registry name).
func (c *Cache) lookupUnsigned(catName, given string) (*foreign.UnsignedPlugin, *CatalogInfo, error) {
	name, sourceName, err := LookupName(given)
	if err != nil {
		return nil, nil, err
	}
	p, ci, err := c.UnsignedEntry(catName, name)
	if err != nil {
		return nil, nil, err
	}
	if err := CheckSourceName(p, catName, sourceName); err != nil {
		return nil, nil, err
	}
	return p, ci, nil
}

// deprecation is the warning for version v of p when its source
// deprecates it, and nothing otherwise.
func deprecation(p *foreign.UnsignedPlugin, v *foreign.UnsignedVersion) []string {
	if v.Status != catalog.StatusDeprecated {
		return nil
	}
	w := fmt.Sprintf("%s %s is deprecated by its source", p.Name, v.Version)
	if v.StatusMessage != "" {
		w += ": " + v.StatusMessage
	}
	return []string{w}
}

// pick chooses the version of p for constraint (as Resolve), or the exact
// version when exact is set.
func pickUnsigned(p *foreign.UnsignedPlugin, catName, constraint string, exact bool, opts *ResolveOptions) (*foreign.UnsignedVersion, *Resolution, error) {
	if exact {
		v := p.Version(constraint)
		if v == nil {
			var vs []string
			for _, x := range p.Versions {
				vs = append(vs, x.Version)
			}
			return nil, nil, fmt.Errorf("%w: catalog %s has no version %s of %s (it has %s)", ErrNoPlugin, catName, constraint, p.Name, strings.Join(vs, ", "))
		}
		res, _ := Resolve(asPlugin(p), "", opts)
		return v, res, nil
	}
	res, err := Resolve(asPlugin(p), constraint, opts)
	if err != nil {
		return nil, res, err
	}
	return p.Version(res.Chosen.Version), res, nil
}

// pickBuildable is pickUnsigned of a version berth can build a bundle
// for (buildableResolve): when no version qualifies but for that, it is
// the version pickUnsigned picks, whose build then fails with its reason.
func pickBuildable(ctx context.Context, ci *CatalogInfo, p *foreign.UnsignedPlugin, constraint string, ropts *ResolveOptions, bopts *bundle.Options) (*foreign.UnsignedVersion, *Resolution, error) {
	v, res, err := pickUnsigned(p, ci.Name, constraint, false, buildableResolve(ctx, ci, p, ropts, bopts))
	var nv *NoVersionError
	if errors.As(err, &nv) {
		return pickUnsigned(p, ci.Name, constraint, false, ropts)
	}
	return v, res, err
}

// openUnsigned writes what berth builds the bundle of version v from into
// a temp directory (a registry entry's server.json) or names it (a
// marketplace.json entry's directory, checked to be inside the
// marketplace again), and returns the source for bundle.Open and
// store.Store.Trust, and a cleanup. The temp directory is made in
// opts.TempDir.
//
// A registry entry whose only package is one MCP Bundle
// (importer.RegistryMCPBPackage) is that bundle: it is downloaded
// (fetchRegistryMCPB: https, size-capped, its fileSha256 checked before
// anything reads it) and the .mcpb file is the source. That is the only
// case in which show or install uses the network.
func (c *Cache) openUnsigned(ctx context.Context, ci *CatalogInfo, p *foreign.UnsignedPlugin, v *foreign.UnsignedVersion, opts *bundle.Options) (string, func(), error) {
	switch ci.Kind {
	case KindRegistry:
		tempDir := ""
		if opts != nil {
			tempDir = opts.TempDir
		}
		pkg, err := importer.RegistryMCPBPackage(v.ServerJSON)
		if err != nil {
			return "", nil, &UnbuildableError{Entry: entryLabel(ci, p, v), Reason: err.Error()}
		}
		dir, err := os.MkdirTemp(tempDir, "berth-registry-")
		if err != nil {
			return "", nil, err
		}
		if pkg != nil {
			file, err := c.fetchRegistryMCPB(ctx, ci, pkg, dir, 0)
			if err != nil {
				os.RemoveAll(dir)
				return "", nil, err
			}
			return file, func() { os.RemoveAll(dir) }, nil
		}
		file := filepath.Join(dir, "server.json")
		if err := os.WriteFile(file, v.ServerJSON, 0o600); err != nil {
			os.RemoveAll(dir)
			return "", nil, err
		}
		return file, func() { os.RemoveAll(dir) }, nil
	case KindBuiltin:
		tempDir := ""
		if opts != nil {
			tempDir = opts.TempDir
		}
		dir, err := os.MkdirTemp(tempDir, "berth-builtin-")
		if err != nil {
			return "", nil, err
		}
		if err := builtin.WriteBundle(p.Name, dir); err != nil {
			os.RemoveAll(dir)
			return "", nil, err
		}
		return dir, func() { os.RemoveAll(dir) }, nil
	case KindClaudeMarketplace:
		if strings.Contains(ci.Source, "://") {
			return "", nil, fmt.Errorf("catalog %s was read from a URL; berth fetches no plugins from one", ci.Name)
		}
		root, err := filepath.EvalSymlinks(foreign.MarketRoot(ci.Source))
		if err != nil {
			return "", nil, fmt.Errorf("the marketplace of catalog %s: %v", ci.Name, err)
		}
		dir, err := filepath.EvalSymlinks(p.Dir)
		if err != nil {
			return "", nil, fmt.Errorf("the plugin directory of %s: %v (berth marketplace update %s reads the marketplace again)", p.Name, err, ci.Name)
		}
		if rel, err := filepath.Rel(root, dir); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || dir != p.Dir {
			return "", nil, fmt.Errorf("%w: the plugin directory of %s now leads to %s, outside the marketplace %s or elsewhere than when it was listed; run berth marketplace update %s", trust.ErrUntrusted, p.Name, dir, root, ci.Name)
		}
		return dir, func() {}, nil
	}
	return "", nil, fmt.Errorf("catalog %s is not an unsigned source", ci.Name)
}

// installCommand is the command that installs version of p from catalog.
func installCommand(catName, name, version, digest string) string {
	return fmt.Sprintf("berth install %s@%s --catalog %s --allow-unsigned --digest %s", name, version, catName, digest)
}

// ShowUnsigned describes entry name of the unsigned source catalog. It
// builds the bundle of the shown version to compute its review and
// digest (a registry entry from its cached server.json; a marketplace.json
// entry from its directory): nothing is downloaded or started. version ""
// means the version install would pick (or the highest).
func (c *Cache) ShowUnsigned(ctx context.Context, catName, given, version string, ropts *ResolveOptions, bopts *bundle.Options) (*UnsignedShowing, error) {
	p, ci, err := c.lookupUnsigned(catName, given)
	if err != nil {
		return nil, err
	}
	res, _ := Resolve(asPlugin(p), "", buildableResolve(ctx, ci, p, ropts, bopts))
	out := &UnsignedShowing{Catalog: ci, Name: p.Name, SourceName: p.SourceName, Description: p.Description, Homepage: p.Homepage, Unsigned: true, Versions: []UnsignedShownVersion{}, Warnings: []string{}}
	var shown *foreign.UnsignedVersion
	if res != nil {
		for _, cand := range res.Candidates {
			v := cand.Version
			out.Versions = append(out.Versions, UnsignedShownVersion{Version: v.Version, Status: v.Status, StatusMessage: v.Reason, Released: v.Released, Picked: cand.Chosen, Skipped: cand.Skipped})
		}
		if res.Chosen != nil {
			out.Install = res.Chosen.Version
			shown = p.Version(res.Chosen.Version)
		}
	}
	if version != "" {
		if shown, _, err = pickUnsigned(p, catName, version, true, ropts); err != nil {
			return nil, err
		}
	}
	if shown == nil {
		shown = p.Versions[0]
	}
	out.Shown = shown.Version
	out.Warnings = append(out.Warnings, deprecation(p, shown)...)
	src, cleanup, err := c.openUnsigned(ctx, ci, p, shown, bopts)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	b, err := openEntryBundle(ctx, ci, p, shown, src, bopts)
	if err != nil {
		return out, fmt.Errorf("%s %s of catalog %s cannot be installed: %w", p.Name, shown.Version, catName, err)
	}
	defer b.Close()
	out.Digest = b.Digest
	out.Review = review.New(b)
	if pkg, _ := importer.RegistryMCPBPackage(shown.ServerJSON); pkg != nil && ci.Kind == KindRegistry && b.Manifest != nil {
		out.MCPB = &ShownMCPB{URL: pkg.URL, SHA256: pkg.SHA256, Name: b.Manifest.Name, Version: b.Manifest.Version}
	}
	out.InstallCommand = installCommand(catName, p.Name, shown.Version, b.Digest)
	if ci.Kind == KindBuiltin {
		out.InstallCommand = fmt.Sprintf("berth install %s@%s --catalog %s", p.Name, shown.Version, catName)
	}
	return out, nil
}

// UnsignedInstallRequest is an install from an unsigned source.
type UnsignedInstallRequest struct {
	Catalog string
	// Name is the berth name or the registry name.
	Name string
	// Constraint picks the version as for a signed catalog.
	Constraint string
	// AllowUnsigned and Digest are the operator's consent: the install
	// happens only with both, and only when the bundle berth builds has
	// exactly Digest.
	AllowUnsigned bool
	Digest        store.Digest
	Resolve       *ResolveOptions
	Bundle        *bundle.Options
	// Confirm is TrustOptions.Confirm.
	Confirm func(*store.Candidate) error
	// Fetch is TrustOptions.Fetch.
	Fetch *fetched.Options
}

// UnsignedInstallResult is what InstallUnsigned did.
type UnsignedInstallResult struct {
	Catalog    *CatalogInfo
	Name       string
	SourceName string
	Version    *foreign.UnsignedVersion
	Trust      *store.TrustResult
	Warnings   []string
}

// UnsignedPinError refuses an install from an unsigned source without
// --allow-unsigned and --digest. It gives the digest and the command. It
// wraps trust.ErrUntrusted (exit 4).
type UnsignedPinError struct {
	Catalog, Name, SourceName, Version, Digest string
}

func (e *UnsignedPinError) Error() string {
	also := ""
	if e.SourceName != "" && e.SourceName != e.Name {
		also = " (" + e.SourceName + ")"
	}
	return fmt.Sprintf("%v: %s%s %s from catalog %s is unsigned: nobody signed it, so berth installs it only by the exact digest of the bundle it builds, %s.\nReview it first (berth show %s@%s --catalog %s), then: %s",
		trust.ErrUntrusted, e.Name, also, e.Version, e.Catalog, e.Digest, e.Name, e.Version, e.Catalog, installCommand(e.Catalog, e.Name, e.Version, e.Digest))
}

func (e *UnsignedPinError) Unwrap() error { return trust.ErrUntrusted }

// InstallUnsigned installs an entry of an unsigned source: it picks the
// version, builds its bundle (from the cached server.json, or the plugin
// directory of a local marketplace) and runs store.Store.Trust on it
// unsigned, pinned to req.Digest, which must be the digest berth show
// prints. Without AllowUnsigned and a Digest it refuses with an
// *UnsignedPinError that gives both. It reads only the cache: no network.
func (c *Cache) InstallUnsigned(ctx context.Context, st *store.Store, req UnsignedInstallRequest) (*UnsignedInstallResult, error) {
	p, ci, err := c.lookupUnsigned(req.Catalog, req.Name)
	if err != nil {
		return nil, err
	}
	v, _, err := pickBuildable(ctx, ci, p, req.Constraint, req.Resolve, req.Bundle)
	if err != nil {
		return nil, err
	}
	out := &UnsignedInstallResult{Catalog: ci, Name: p.Name, SourceName: p.SourceName, Version: v}
	out.Warnings = append(out.Warnings, deprecation(p, v)...)
	src, cleanup, err := c.openUnsigned(ctx, ci, p, v, req.Bundle)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if ci.Kind == KindBuiltin {
		return c.installBuiltin(ctx, st, req, p, v, src, out)
	}
	if !req.AllowUnsigned || req.Digest.IsZero() {
		b, err := openEntryBundle(ctx, ci, p, v, src, req.Bundle)
		if err != nil {
			return nil, err
		}
		d := b.Digest
		b.Close()
		return nil, &UnsignedPinError{Catalog: req.Catalog, Name: p.Name, SourceName: p.SourceName, Version: v.Version, Digest: d}
	}
	origin := src
	if ci.Kind == KindRegistry {
		served := v.Version
		if v.SourceVersion != "" {
			served = v.SourceVersion // the registry's name of the version ("v1.0.0")
		}
		origin = foreign.RegistryVersionURL(ci.Source, p.SourceName, served)
		if err := checkBundleName(ctx, st, ci, p, v, src, req.Bundle); err != nil {
			return nil, err
		}
	}
	res, err := st.Trust(ctx, src, &store.TrustOptions{Bundle: req.Bundle, Digest: req.Digest, UnsignedUnsafe: true, SameSource: true, Source: origin, Confirm: req.Confirm, Fetch: req.Fetch})
	// Name the entry, not the temp file berth built it in.
	var dm *store.DigestMismatchError
	if errors.As(err, &dm) {
		dm.Source = fmt.Sprintf("%s %s of catalog %s (%s)", p.Name, v.Version, req.Catalog, origin)
	}
	var ie *bundle.InvalidError
	if errors.As(err, &ie) {
		ie.Source = entryLabel(ci, p, v)
	}
	if err != nil {
		return nil, err
	}
	out.Trust = res
	return out, nil
}

// UnbuildableError is an entry's version berth cannot build a bundle for
// before it opens anything (an MCP Bundle it cannot fetch by digest). It
// wraps bundle.ErrInvalidBundle (exit 3), as the importer's refusals do.
type UnbuildableError struct {
	Entry, Reason string
}

func (e *UnbuildableError) Error() string {
	return fmt.Sprintf("%s: berth cannot build a bundle for it: %s", e.Entry, e.Reason)
}

func (e *UnbuildableError) Unwrap() error { return bundle.ErrInvalidBundle }

// entryLabel names an entry's bundle in messages.
func entryLabel(ci *CatalogInfo, p *foreign.UnsignedPlugin, v *foreign.UnsignedVersion) string {
	if ci.Kind == KindRegistry {
		if pkg, _ := importer.RegistryMCPBPackage(v.ServerJSON); pkg != nil {
			return fmt.Sprintf("the MCP Bundle %s of %s %s (catalog %s)", pkg.URL, p.SourceName, v.Version, ci.Name)
		}
		return fmt.Sprintf("the server.json of %s %s (catalog %s)", p.SourceName, v.Version, ci.Name)
	}
	if ci.Kind == KindBuiltin {
		return fmt.Sprintf("the built-in bundle of %s %s (catalog %s)", p.Name, v.Version, ci.Name)
	}
	return fmt.Sprintf("%s (%s %s of catalog %s)", p.Dir, p.Name, v.Version, ci.Name)
}

// openEntryBundle opens the bundle of an entry's version from src (as
// openUnsigned made it), named by entryLabel in messages.
func openEntryBundle(ctx context.Context, ci *CatalogInfo, p *foreign.UnsignedPlugin, v *foreign.UnsignedVersion, src string, opts *bundle.Options) (*bundle.Bundle, error) {
	// An entry is of another format (a Claude Code plugin, a server.json)
	// whether or not the program registered the formats.
	o := bundle.Options{}
	if opts != nil {
		o = *opts
	}
	if o.Formats == nil {
		o.Formats = importer.All()
	}
	b, err := bundle.Open(ctx, src, &o)
	var ie *bundle.InvalidError
	if errors.As(err, &ie) {
		ie.Source = entryLabel(ci, p, v)
	}
	return b, err
}

// checkBundleName refuses to install the MCP Bundle of a registry entry
// under a name that a plugin from another source already has: the
// bundle's own manifest names it (not the registry entry), and a lying
// registry must not deliver an upgrade of a plugin installed from
// elsewhere. An entry built from its server.json carries its own name.
func checkBundleName(ctx context.Context, st *store.Store, ci *CatalogInfo, p *foreign.UnsignedPlugin, v *foreign.UnsignedVersion, src string, opts *bundle.Options) error {
	if pkg, _ := importer.RegistryMCPBPackage(v.ServerJSON); pkg == nil {
		return nil
	}
	b, err := openEntryBundle(ctx, ci, p, v, src, opts)
	if err != nil {
		return err
	}
	name := ""
	if b.Manifest != nil {
		name = b.Manifest.Name
	}
	b.Close()
	recs, err := st.Find(name, "")
	if errors.Is(err, store.ErrNotTrusted) {
		return nil // nothing of that name is installed
	}
	if err != nil {
		return err
	}
	prefix := strings.TrimSuffix(foreign.RegistryVersionURL(ci.Source, p.SourceName, "v"), "v")
	for _, r := range recs {
		if !strings.HasPrefix(r.Source, prefix) {
			return fmt.Errorf("%w: the MCP Bundle of %s %s (catalog %s) calls itself %s, and %s is already installed from %s, another source; berth does not let one source replace another's plugin. Remove it first (berth revoke %s) if you mean to replace it", trust.ErrUntrusted, p.SourceName, v.Version, ci.Name, name, r.ID(), r.Source, r.ID())
		}
	}
	return nil
}
