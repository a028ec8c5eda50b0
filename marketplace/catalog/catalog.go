package catalog

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/Masterminds/semver/v3"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/strictjson"
	"github.com/berth-mcp/berth/marketplace/internal/textio"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// FormatVersion is the version of the catalog format this package reads
// and writes.
const FormatVersion = 1

// TargetName is the TUF target path of the catalog document. A catalog
// repository has exactly this one target (docs/marketplace.md says why).
const TargetName = "catalog.json"

// MaxSize is the largest catalog document berth reads (64 MiB,
// about 40,000 plugins with a few versions each).
const MaxSize = 64 << 20

// Catalog is the catalog document, format catalogVersion 1: the TUF target
// catalog.json. Field names, nesting and meaning are a contract:
// schemas/catalog.schema.json describes exactly these types, and a test
// fails when the two drift.
type Catalog struct {
	CatalogVersion int       `json:"catalogVersion"`
	Name           string    `json:"name,omitempty"`
	Plugins        []*Plugin `json:"plugins"`
}

// Plugin is one entry of a catalog: a plugin and its published versions.
type Plugin struct {
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Publisher   *Publisher `json:"publisher,omitempty"`
	Tier        Tier       `json:"tier"`
	Tags        []string   `json:"tags,omitempty"`
	Homepage    string     `json:"homepage,omitempty"`
	License     string     `json:"license,omitempty"`
	// Signers are the signers allowed to publish this plugin: a version's
	// bundle signature must be by one of them.
	Signers  []*Signer  `json:"signers"`
	Versions []*Version `json:"versions"`
	// Readme is the plugin's README in Markdown (berth catalog add takes
	// the bundle's README.md), at most MaxReadme bytes. It is text from
	// the publisher: the marketplace page renders it sanitized.
	Readme string `json:"readme,omitempty"`
	// Icon is a PNG image, base64-encoded, of at most MaxIcon bytes and
	// 16 to 512 pixels wide and high (berth catalog add --icon).
	Icon string `json:"icon,omitempty"`
}

// Caps of a plugin's README and icon.
const (
	MaxReadme = 64 << 10
	MaxIcon   = 64 << 10
)

// IconPNG returns the plugin's icon as PNG bytes, nil when it has none.
// A parsed catalog's icon has been checked (CheckIcon); this decodes it.
func (p *Plugin) IconPNG() []byte {
	if p.Icon == "" {
		return nil
	}
	data, err := base64.StdEncoding.DecodeString(p.Icon)
	if err != nil || CheckIcon(data) != nil {
		return nil
	}
	return data
}

// CheckIcon checks an icon: a PNG (no other format: an SVG can carry
// script) that decodes, of at most MaxIcon bytes, 16 to 512 pixels wide
// and high.
func CheckIcon(data []byte) error {
	if len(data) > MaxIcon {
		return fmt.Errorf("the icon is %d bytes, over the limit of %d", len(data), MaxIcon)
	}
	if !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
		return fmt.Errorf("the icon is not a PNG image (only PNG icons are carried: no SVG, which can hold script)")
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("the icon is not a valid PNG image: %v", err)
	}
	if cfg.Width < 16 || cfg.Height < 16 || cfg.Width > 512 || cfg.Height > 512 {
		return fmt.Errorf("the icon is %dx%d pixels; it must be 16 to 512 pixels wide and high", cfg.Width, cfg.Height)
	}
	// The size is checked before decoding, so the image fits in memory.
	if _, err := png.Decode(bytes.NewReader(data)); err != nil {
		return fmt.Errorf("the icon is not a valid PNG image: %v", err)
	}
	return nil
}

// Publisher is who publishes a plugin, as its manifest claims.
type Publisher struct {
	Name string `json:"name"`
	URL  string `json:"url,omitempty"`
}

// Signer is a signer the catalog allows for one plugin: a key (its
// fingerprint and PEM public key) or a Sigstore certificate identity
// (issuer and exact subject alternative name).
type Signer struct {
	Kind        trust.SignerKind `json:"kind"`
	Fingerprint string           `json:"fingerprint,omitempty"`
	PublicKey   string           `json:"publicKey,omitempty"`
	Issuer      string           `json:"issuer,omitempty"`
	SAN         string           `json:"san,omitempty"`
}

// Version is one published version of a plugin.
type Version struct {
	Version string `json:"version"`
	// Digest is the bundle digest, "sha256:" + hex of the canonical listing.
	Digest string `json:"digest"`
	// Archive describes the file at URLs, checked while it downloads.
	Archive Archive `json:"archive"`
	// URLs are where the archive can be downloaded, tried in order: absolute
	// https URLs, or paths relative to the catalog's source.
	URLs []string `json:"urls"`
	// SignatureURL is where the bundle's Sigstore signature is, absolute
	// https or relative to the catalog's source.
	SignatureURL string    `json:"signatureURL"`
	Released     time.Time `json:"released"`
	Status       Status    `json:"status"`
	// Reason says why a version is deprecated, yanked or revoked.
	Reason string `json:"reason,omitempty"`
	// Replacement names the plugin to use instead of a deprecated one.
	Replacement string `json:"replacement,omitempty"`
	// RequiresBerth is the bundle's requires.berth constraint.
	RequiresBerth string `json:"requiresBerth,omitempty"`
	// Summary is the review summary computed from the bundle at publication.
	Summary Summary `json:"summary"`
}

// Archive is the bundle archive a version's URLs serve.
type Archive struct {
	Format string `json:"format"` // "tar.gz" or "zip"
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // "sha256:<hex>" of the archive file
}

// Tier says who vouches for a plugin.
type Tier string

// Tiers, best first.
const (
	TierOfficial  Tier = "official"
	TierVerified  Tier = "verified"
	TierCommunity Tier = "community"
)

// Tiers lists the tiers, best first.
var Tiers = []Tier{TierOfficial, TierVerified, TierCommunity}

// Status is a version's standing in the catalog.
type Status string

// Statuses. Resolution skips yanked and revoked versions; install, sync
// and enable refuse revoked ones; deprecated only warns.
const (
	StatusActive     Status = "active"
	StatusDeprecated Status = "deprecated"
	StatusYanked     Status = "yanked"
	StatusRevoked    Status = "revoked"
)

// Statuses lists every status.
var Statuses = []Status{StatusActive, StatusDeprecated, StatusYanked, StatusRevoked}

// Plugin returns the entry named name, or nil.
func (c *Catalog) Plugin(name string) *Plugin {
	for _, p := range c.Plugins {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Version returns the version v of the plugin, or nil.
func (p *Plugin) Version(v string) *Version {
	for _, x := range p.Versions {
		if x.Version == v {
			return x
		}
	}
	return nil
}

// Sort puts plugins in name order and each plugin's versions in semver
// order, lowest first, so a catalog is written the same way every time.
func (c *Catalog) Sort() {
	sort.SliceStable(c.Plugins, func(i, j int) bool { return c.Plugins[i].Name < c.Plugins[j].Name })
	for _, p := range c.Plugins {
		sort.SliceStable(p.Versions, func(i, j int) bool { return bundle.VersionLess(p.Versions[i].Version, p.Versions[j].Version) })
	}
}

// Marshal returns the catalog as indented JSON with a final newline.
func (c *Catalog) Marshal() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		panic(err) // plain data; cannot fail
	}
	return b.Bytes()
}

// Problem is one thing wrong with a catalog: an entry that was skipped,
// or a warning. Rule is a stable ID listed in docs/marketplace.md.
type Problem struct {
	// Plugin is the entry's name, or "#N" (its position) when it has none.
	Plugin string `json:"plugin,omitempty"`
	// Path locates the bad value, like plugins[3].versions[0].digest.
	Path    string `json:"path"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
	// Warning is true for a problem that skips nothing.
	Warning bool `json:"warning,omitempty"`
}

func (p *Problem) String() string {
	kind := "error"
	if p.Warning {
		kind = "warning"
	}
	who := ""
	if p.Plugin != "" {
		who = " (" + p.Plugin + ")"
	}
	return fmt.Sprintf("%s%s: %s: %s [%s]", p.Path, who, kind, p.Message, p.Rule)
}

// Catalog rule IDs. Each is stable, kebab-case and listed in
// docs/marketplace.md.
const (
	RuleCatalogSyntax   = "catalog-syntax"
	RuleCatalogVersion  = "catalog-version"
	RuleCatalogField    = "catalog-unknown-field"
	RuleCatalogName     = "catalog-name"
	RuleEntrySyntax     = "entry-syntax"
	RuleEntryName       = "entry-name"
	RuleEntryDuplicate  = "entry-duplicate"
	RuleEntryText       = "entry-text"
	RuleEntryTier       = "entry-tier"
	RuleEntryTag        = "entry-tag"
	RuleEntryURL        = "entry-url"
	RuleEntrySigner     = "entry-signer"
	RuleEntryNoVersions = "entry-no-versions"
	RuleEntryReadme     = "entry-readme"
	RuleEntryIcon       = "entry-icon"
	RuleVersionSemver   = "version-semver"
	RuleVersionDup      = "version-duplicate"
	RuleVersionDigest   = "version-digest"
	RuleVersionArchive  = "version-archive"
	RuleVersionURL      = "version-url"
	RuleVersionReleased = "version-released"
	RuleVersionStatus   = "version-status"
	RuleVersionRequires = "version-requires"
	RuleVersionSummary  = "version-summary"
	RuleVersionFile     = "version-file"
	RuleUnpublished     = "catalog-unpublished"
	RuleMetadataExpiry  = "metadata-expiry"
)

var (
	tagRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)
)

// Limits of a catalog entry.
const (
	MaxDescription = 1024
	maxTags        = 20
	maxVersions    = 1000
	maxURLs        = 8
	MaxReason      = 1024
)

// ErrFormat marks a catalog document that cannot be read at all:
// not JSON, not an object, or another catalogVersion. A document that is
// readable but has bad entries is not an error: Parse skips those
// entries and reports them as problems.
var ErrFormat = errors.New("unreadable catalog")

// Parse decodes a catalog document leniently: an entry (a plugin)
// that is malformed in any way is reported as a problem and skipped, and
// the rest are returned (STYLE rule 11: strict for what runs, lenient for
// what is browsed). Each entry is decoded strictly: an unknown field makes
// the entry malformed. The error is non-nil only when the document as a
// whole is unreadable; it wraps ErrFormat.
func Parse(data []byte) (*Catalog, []*Problem, error) {
	c, ps, _, err := ParseIndexed(data)
	return c, ps, err
}

// Span is where an accepted entry's JSON is in the document: Off bytes
// in, N bytes long.
type Span struct{ Off, N int64 }

// ParseIndexed is Parse that also returns, per accepted plugin,
// where its entry is in data (the cache's index records it, so show can
// read one entry without decoding the whole catalog). It reads the
// document once with a streaming decoder.
func ParseIndexed(data []byte) (*Catalog, []*Problem, []Span, error) {
	unreadable := func(format string, args ...any) (*Catalog, []*Problem, []Span, error) {
		return nil, nil, nil, fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, args...))
	}
	if len(data) > MaxSize {
		return unreadable("the catalog is %d bytes, over the limit of %d", len(data), MaxSize)
	}
	if !utf8.Valid(data) {
		return unreadable("the catalog is not UTF-8 text")
	}
	notObject := "the catalog is not a JSON object (%v); it must look like {\"catalogVersion\": 1, \"plugins\": [...]}"
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return unreadable(notObject, tokenError(tok, err))
	}
	c := &Catalog{Plugins: []*Plugin{}}
	var ps []*Problem
	var spans []Span
	var haveVersion, havePlugins bool
	var rawName json.RawMessage
	seen := map[string]bool{}
	keys := map[string]string{} // top-level key in lower case → key
	chk := &checker{signers: map[Signer]error{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return unreadable(notObject, err)
		}
		key, _ := tok.(string)
		if prev, dup := keys[strings.ToLower(key)]; dup {
			// Readers disagree on which one wins (and some take keys that
			// differ in case for one): no reading of it is safe.
			what := fmt.Sprintf("the key %q more than once", key)
			if prev != key {
				what = fmt.Sprintf("the keys %q and %q, which differ only in letter case,", prev, key)
			}
			return unreadable("the catalog gives %s (JSON readers disagree on which one wins); its curator must keep one and sign the catalog again", what)
		}
		keys[strings.ToLower(key)] = key
		switch key {
		case "catalogVersion":
			if err := dec.Decode(&c.CatalogVersion); err != nil {
				return unreadable("the catalog has no integer catalogVersion; this berth reads catalogVersion 1")
			}
			haveVersion = true
		case "name":
			if err := dec.Decode(&rawName); err != nil {
				return unreadable(notObject, err)
			}
		case "plugins":
			if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
				return unreadable("the catalog's \"plugins\" is not an array")
			}
			havePlugins = true
			for i := 0; dec.More(); i++ {
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return unreadable("plugins[%d] is not JSON: %v", i, err)
				}
				end := dec.InputOffset()
				p, eps := parseEntry(raw, i, chk)
				ps = append(ps, eps...)
				if p == nil {
					continue
				}
				if seen[p.Name] {
					ps = append(ps, &Problem{Plugin: p.Name, Path: fmt.Sprintf("plugins[%d]", i), Rule: RuleEntryDuplicate, Message: "a plugin of this name is listed earlier; this entry is skipped (keep one entry per plugin)"})
					continue
				}
				seen[p.Name] = true
				c.Plugins = append(c.Plugins, p)
				spans = append(spans, Span{Off: end - int64(len(raw)), N: int64(len(raw))})
			}
			if _, err := dec.Token(); err != nil {
				return unreadable("the catalog's \"plugins\" does not end: %v", err)
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return unreadable(notObject, err)
			}
			ps = append(ps, &Problem{Path: key, Rule: RuleCatalogField, Message: "this field is not part of catalogVersion 1; it is ignored", Warning: true})
		}
	}
	if _, err := dec.Token(); err != nil {
		return unreadable(notObject, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return unreadable("data after the catalog's JSON object")
	}
	switch {
	case !haveVersion:
		return unreadable("the catalog has no integer catalogVersion; this berth reads catalogVersion 1")
	case c.CatalogVersion != FormatVersion:
		return unreadable("the catalog has catalogVersion %d, and this berth reads only %d; upgrade berth if the catalog is newer", c.CatalogVersion, FormatVersion)
	case !havePlugins:
		return unreadable("the catalog's \"plugins\" is missing")
	}
	if rawName != nil {
		if err := json.Unmarshal(rawName, &c.Name); err != nil || (c.Name != "" && !bundle.IsValidName(c.Name)) {
			ps = append(ps, &Problem{Path: "name", Rule: RuleCatalogName, Message: "the catalog's name must be lower-case letters, digits and '-'; it is ignored", Warning: true})
			c.Name = ""
		}
	}
	return c, ps, spans, nil
}

func tokenError(tok json.Token, err error) string {
	if err != nil {
		return err.Error()
	}
	if tok == nil {
		return "it is null"
	}
	return fmt.Sprintf("it starts with %v", tok)
}

// parseEntry decodes and checks one plugin entry; a nil plugin means it
// was skipped, and the problems say why.
func parseEntry(raw json.RawMessage, i int, chk *checker) (*Plugin, []*Problem) {
	where := fmt.Sprintf("plugins[%d]", i)
	p := &Plugin{}
	// Strict (an unknown field, or a key given twice or twice but for
	// letter case, anywhere in the entry), but null stays the zero value
	// as encoding/json reads it: the rules below name what is missing.
	if ps := strictjson.Decode(raw, p, strictjson.Options{FoldCase: true, Nulls: strictjson.NullAnywhere}); len(ps) > 0 {
		var named struct {
			Name string `json:"name"`
		}
		json.Unmarshal(raw, &named)
		who := fmt.Sprintf("#%d", i)
		if bundle.IsValidName(named.Name) {
			who = named.Name
		}
		return nil, []*Problem{{Plugin: who, Path: where, Rule: RuleEntrySyntax, Message: fmt.Sprintf("the entry does not decode (%s); it is skipped", &strictjson.Error{Problems: ps})}}
	}
	if p.Versions == nil {
		p.Versions = []*Version{}
	}
	for _, v := range p.Versions {
		if v != nil {
			v.Summary.normalize()
		}
	}
	ps := chk.plugin(p, where)
	if HasErrors(ps) {
		for _, x := range ps {
			if !x.Warning {
				x.Message += "; the entry is skipped"
				break
			}
		}
		return nil, ps
	}
	return p, ps
}

// HasErrors reports whether any problem is an error, not a warning.
func HasErrors(ps []*Problem) bool {
	for _, p := range ps {
		if !p.Warning {
			return true
		}
	}
	return false
}

// ParseEntry decodes and checks one plugin entry, as Parse does each
// entry of a document; a nil plugin means it is malformed.
func ParseEntry(raw json.RawMessage) (*Plugin, []*Problem) {
	return parseEntry(raw, 0, &checker{signers: map[Signer]error{}})
}

// ValidTag reports whether tag is a catalog tag: lower-case letters,
// digits and '-', starting with a letter or digit, at most 32 characters.
func ValidTag(tag string) bool { return tagRe.MatchString(tag) }

// CheckPlugin checks one decoded entry against every catalog rule and
// returns its problems; where is the entry's path for messages.
func CheckPlugin(p *Plugin, where string) []*Problem {
	return (&checker{signers: map[Signer]error{}}).plugin(p, where)
}

// checker checks entries, remembering the signers it checked (a catalog
// lists the same publisher keys many times).
type checker struct {
	signers map[Signer]error
}

func (chk *checker) signer(s *Signer) error {
	if s == nil {
		return fmt.Errorf("the signer is null")
	}
	err, ok := chk.signers[*s]
	if !ok {
		err = s.check()
		chk.signers[*s] = err
	}
	return err
}

func (chk *checker) plugin(p *Plugin, where string) []*Problem {
	who := p.Name
	if !bundle.IsValidName(p.Name) {
		who = where
	}
	var ps []*Problem
	add := func(path, rule, format string, args ...any) {
		ps = append(ps, &Problem{Plugin: who, Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)})
	}
	warn := func(path, rule, format string, args ...any) {
		ps = append(ps, &Problem{Plugin: who, Path: path, Rule: rule, Message: fmt.Sprintf(format, args...), Warning: true})
	}
	if !bundle.IsValidName(p.Name) {
		add(where+".name", RuleEntryName, "%q is not a plugin name: lower-case letters, digits and '-', 1 to 64 characters, as in berth.json", p.Name)
	}
	checkText(add, where+".description", p.Description, MaxDescription, true)
	if p.Publisher != nil {
		checkText(add, where+".publisher.name", p.Publisher.Name, 256, true)
		checkHTTPS(add, where+".publisher.url", p.Publisher.URL)
	}
	switch p.Tier {
	case TierOfficial, TierVerified, TierCommunity:
	default:
		add(where+".tier", RuleEntryTier, "tier is %q; write official, verified or community", p.Tier)
	}
	if len(p.Tags) > maxTags {
		add(where+".tags", RuleEntryTag, "%d tags, over the limit of %d", len(p.Tags), maxTags)
	}
	tags := map[string]bool{}
	for i, t := range p.Tags {
		if !ValidTag(t) {
			add(fmt.Sprintf("%s.tags[%d]", where, i), RuleEntryTag, "%q is not a tag: lower-case letters, digits and '-', up to 32 characters", t)
		}
		if tags[t] {
			add(fmt.Sprintf("%s.tags[%d]", where, i), RuleEntryTag, "the tag %q is listed twice", t)
		}
		tags[t] = true
	}
	checkHTTPS(add, where+".homepage", p.Homepage)
	checkText(add, where+".license", p.License, 256, false)
	if len(p.Readme) > MaxReadme {
		add(where+".readme", RuleEntryReadme, "the README is %d bytes, over the limit of %d; shorten it (berth catalog add --no-readme leaves it out)", len(p.Readme), MaxReadme)
	}
	if p.Icon != "" {
		if data, err := base64.StdEncoding.DecodeString(p.Icon); err != nil {
			add(where+".icon", RuleEntryIcon, "the icon is not standard base64: %v", err)
		} else if err := CheckIcon(data); err != nil {
			add(where+".icon", RuleEntryIcon, "%v", err)
		}
	}
	if len(p.Signers) == 0 {
		add(where+".signers", RuleEntrySigner, "the entry allows no signer, so no version of it can be installed; list the publisher's key or identity (berth catalog add records it)")
	}
	for i, s := range p.Signers {
		if err := chk.signer(s); err != nil {
			add(fmt.Sprintf("%s.signers[%d]", where, i), RuleEntrySigner, "%v", err)
		}
	}
	if len(p.Versions) == 0 {
		add(where+".versions", RuleEntryNoVersions, "the entry has no versions; publish one with berth catalog add")
	}
	if len(p.Versions) > maxVersions {
		add(where+".versions", RuleEntryNoVersions, "%d versions, over the limit of %d", len(p.Versions), maxVersions)
	}
	versions := map[string]bool{}
	for i, v := range p.Versions {
		vp := fmt.Sprintf("%s.versions[%d]", where, i)
		if v == nil {
			add(vp, RuleEntrySyntax, "the version is null")
			continue
		}
		if versions[v.Version] {
			add(vp+".version", RuleVersionDup, "version %s is listed twice; versions are immutable, keep the one that was published first", v.Version)
		}
		versions[v.Version] = true
		checkVersion(add, warn, vp, v)
	}
	return ps
}

func checkVersion(add, warn func(path, rule, format string, args ...any), vp string, v *Version) {
	if !bundle.IsStrictSemver(v.Version) {
		add(vp+".version", RuleVersionSemver, "%q is not a strict semver version like 1.4.2", v.Version)
	}
	if _, err := store.ParseDigest(v.Digest); err != nil {
		add(vp+".digest", RuleVersionDigest, "%v", err)
	}
	switch v.Archive.Format {
	case "tar.gz", "zip":
	default:
		add(vp+".archive.format", RuleVersionArchive, "format is %q; write tar.gz or zip", v.Archive.Format)
	}
	if v.Archive.Size <= 0 {
		add(vp+".archive.size", RuleVersionArchive, "size must be the archive's size in bytes, more than 0")
	}
	if !textio.IsSHA256(v.Archive.SHA256) {
		add(vp+".archive.sha256", RuleVersionArchive, "%q is not sha256: followed by 64 lower-case hex digits", v.Archive.SHA256)
	}
	if len(v.URLs) == 0 || len(v.URLs) > maxURLs {
		add(vp+".urls", RuleVersionURL, "list 1 to %d download URLs (got %d)", maxURLs, len(v.URLs))
	}
	for i, u := range v.URLs {
		if err := CheckLocation(u); err != nil {
			add(fmt.Sprintf("%s.urls[%d]", vp, i), RuleVersionURL, "%v", err)
		}
	}
	if err := CheckLocation(v.SignatureURL); err != nil {
		add(vp+".signatureURL", RuleVersionURL, "%v", err)
	}
	if v.Released.IsZero() {
		add(vp+".released", RuleVersionReleased, "the release time is missing; write it in RFC 3339, like 2026-09-01T12:00:00Z")
	}
	switch v.Status {
	case StatusActive:
		if v.Reason != "" || v.Replacement != "" {
			add(vp+".status", RuleVersionStatus, "an active version has no reason or replacement; remove them")
		}
	case StatusDeprecated, StatusYanked, StatusRevoked:
		if strings.TrimSpace(v.Reason) == "" {
			add(vp+".reason", RuleVersionStatus, "a %s version needs a reason the user can read", v.Status)
		}
		checkText(add, vp+".reason", v.Reason, MaxReason, false)
		if v.Replacement != "" {
			if v.Status != StatusDeprecated {
				add(vp+".replacement", RuleVersionStatus, "only a deprecated version names a replacement")
			} else if !bundle.IsValidName(v.Replacement) {
				add(vp+".replacement", RuleVersionStatus, "%q is not a plugin name", v.Replacement)
			}
		}
	default:
		add(vp+".status", RuleVersionStatus, "status is %q; write active, deprecated, yanked or revoked", v.Status)
	}
	if v.RequiresBerth != "" {
		if _, err := semver.NewConstraint(v.RequiresBerth); err != nil {
			add(vp+".requiresBerth", RuleVersionRequires, "%q is not a semver constraint", v.RequiresBerth)
		}
	}
	for _, p := range v.Summary.check() {
		if p.warning {
			warn(vp+".summary"+p.path, RuleVersionSummary, "%s", p.msg)
		} else {
			add(vp+".summary"+p.path, RuleVersionSummary, "%s", p.msg)
		}
	}
}

// checkText checks a human-readable text field: length in characters, and
// required when need is set. Control characters are allowed (they are
// escaped when shown).
func checkText(add func(path, rule, format string, args ...any), p, s string, max int, need bool) {
	if need && strings.TrimSpace(s) == "" {
		add(p, RuleEntryText, "this text is required")
	}
	if n := utf8.RuneCountInString(s); n > max {
		add(p, RuleEntryText, "%d characters, over the limit of %d", n, max)
	}
}

func checkHTTPS(add func(path, rule, format string, args ...any), p, s string) {
	if s == "" {
		return
	}
	u, err := url.Parse(s)
	if err != nil || !strings.EqualFold(u.Scheme, "https") || u.Host == "" || u.User != nil {
		add(p, RuleEntryURL, "%q is not an https URL", s)
	}
}

// CheckLocation checks a download or signature location: an absolute
// https URL without credentials, or a clean relative path inside the
// catalog (no "..", no leading "/", no backslash, no scheme, no query).
func CheckLocation(s string) error {
	if s == "" {
		return fmt.Errorf("the location is empty")
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", s, err)
	}
	if u.Scheme != "" || u.Host != "" {
		if !strings.EqualFold(u.Scheme, "https") || u.Host == "" {
			return fmt.Errorf("%q: an absolute location must be an https URL (or write a path relative to the catalog)", s)
		}
		if u.User != nil {
			return fmt.Errorf("%q carries a user name or password; remove it", s)
		}
		if u.Fragment != "" || strings.Contains(s, "#") {
			return fmt.Errorf("%q has a #fragment; remove it", s)
		}
		return nil
	}
	if strings.ContainsAny(s, "\\?#%") || strings.HasPrefix(s, "/") || strings.ContainsRune(s, 0) {
		return fmt.Errorf("%q: a relative location is a plain path inside the catalog, like bundles/acme-notes/1.4.2/acme-notes-1.4.2.tar.gz (no \\, ?, #, %%, leading /)", s)
	}
	if c := path.Clean(s); c != s || c == "." || strings.HasPrefix(c, "../") || c == ".." {
		return fmt.Errorf("%q is not a clean path inside the catalog (no \"..\", \".\" or empty segments)", s)
	}
	return nil
}

// check validates a catalog signer.
func (s *Signer) check() error {
	if s == nil {
		return fmt.Errorf("the signer is null")
	}
	switch s.Kind {
	case trust.KindKey:
		if s.Issuer != "" || s.SAN != "" {
			return fmt.Errorf("a key signer has no issuer or san")
		}
		ks, err := trust.NewKeySigner("catalog", []byte(s.PublicKey), nil)
		if err != nil {
			return fmt.Errorf("the publicKey is unusable: %v", errors.Unwrap(err))
		}
		if ks.Fingerprint != s.Fingerprint {
			return fmt.Errorf("the fingerprint %q is not that of the publicKey (%s)", s.Fingerprint, ks.Fingerprint)
		}
	case trust.KindIdentity:
		if s.PublicKey != "" || s.Fingerprint != "" {
			return fmt.Errorf("an identity signer has no publicKey or fingerprint")
		}
		u, err := url.Parse(s.Issuer)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("the issuer %q is not an https URL", s.Issuer)
		}
		if s.SAN == "" {
			return fmt.Errorf("an identity signer needs the exact san (e-mail or URI) of the certificate")
		}
	default:
		return fmt.Errorf("kind is %q; write key or identity", s.Kind)
	}
	return nil
}

// String names the signer for a person.
func (s *Signer) String() string {
	if s.Kind == trust.KindKey {
		return "key " + s.Fingerprint
	}
	return fmt.Sprintf("identity %s (issuer %s)", s.SAN, s.Issuer)
}

// Matches reports whether a verified signature came from this signer: the
// same key, or the same issuer and SAN.
func (s *Signer) Matches(ref *store.SignerRef) bool {
	if ref == nil || s.Kind != ref.Kind {
		return false
	}
	if s.Kind == trust.KindKey {
		return s.Fingerprint == ref.Fingerprint
	}
	return s.Issuer == ref.Issuer && s.SAN == ref.SAN
}

// SignerFor returns the catalog signer of a verification result; a key
// signer carries the policy's public key.
func SignerFor(res *trust.Result) *Signer {
	if res.Kind == trust.KindKey {
		return &Signer{Kind: trust.KindKey, Fingerprint: res.KeyFingerprint, PublicKey: res.Signer.PublicKey}
	}
	return &Signer{Kind: trust.KindIdentity, Issuer: res.Issuer, SAN: res.SAN}
}
