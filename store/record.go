package store

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/fetched"
	"github.com/berth-mcp/berth/trust"
)

// SignerRef names the signer that a trust record was accepted from.
type SignerRef struct {
	Kind        trust.SignerKind `json:"kind"`
	Name        string           `json:"name"`
	Fingerprint string           `json:"fingerprint,omitempty"`
	Issuer      string           `json:"issuer,omitempty"`
	SAN         string           `json:"san,omitempty"`
}

// identity is what signer continuity compares: the key or the certificate
// identity, not the policy entry's name.
func (r *SignerRef) identity() string {
	if r == nil {
		return "unsigned"
	}
	if r.Kind == trust.KindKey {
		return "key " + r.Fingerprint
	}
	return "identity " + r.Issuer + " " + r.SAN
}

// SignerIdentity is the identity of the signer the record was accepted
// from, as signer continuity compares it: "key <fingerprint>",
// "identity <issuer> <SAN>", or "unsigned". A tool policy rule that allows
// records it (PolicyRule.Signer).
func (r *Record) SignerIdentity() string { return r.Signer.identity() }

func (r *SignerRef) String() string {
	if r == nil {
		return "no signature (trusted unsigned by digest)"
	}
	if r.Kind == trust.KindKey {
		return fmt.Sprintf("key %q (%s)", r.Name, r.Fingerprint)
	}
	return fmt.Sprintf("identity %q (issuer %s, SAN %s)", r.Name, r.Issuer, r.SAN)
}

// refOf returns the signer reference of a verification result.
func refOf(res *trust.Result) *SignerRef {
	ref := &SignerRef{Kind: res.Kind, Name: res.Signer.Name}
	if res.Kind == trust.KindKey {
		ref.Fingerprint = res.KeyFingerprint
	} else {
		ref.Issuer, ref.SAN = res.Issuer, res.SAN
	}
	return ref
}

// Record is a trust record: a reviewed, verified, staged version of a
// plugin. It is written last when trusting.
type Record struct {
	Name       string     `json:"name"`
	Version    string     `json:"version"`
	Digest     string     `json:"digest"`
	Signer     *SignerRef `json:"signer,omitempty"`
	Unsigned   bool       `json:"unsigned"`
	ReviewHash string     `json:"reviewHash"`
	Source     string     `json:"source"`
	TrustedAt  time.Time  `json:"trustedAt"`
	// Catalog names the catalog the bundle was installed from (berth
	// install, sync, upgrade); nil for a bundle trusted by hand.
	Catalog *CatalogOrigin `json:"catalog,omitempty"`
	// Pinned are the runtime fetches berth pinned when it imported the
	// source it trusted (berth install --pin, berth trust of a source
	// opened with pinning): what the source asked for, the exact result,
	// and when and where it was resolved. The bundle's
	// importedFrom.pinned holds the same without the time.
	Pinned []bundle.PinRecord `json:"pinned,omitempty"`
	// Fetched are the trees of the bundle's runtime-fetched servers,
	// resolved and staged at trust (docs/sandbox.md); each Tree is a
	// snapshot of the store.
	Fetched []*fetched.Lock `json:"fetched,omitempty"`
}

// SourceOrigin is the source a record's Source names without the
// version: for a registry entry (".../v0/servers/NAME/versions/V") the
// entry (".../v0/servers/NAME"); for anything else (a marketplace's
// plugin directory, a URL, the path of a local import) the Source itself.
// Two unsigned versions of a plugin come from one source when their
// origins are equal.
func SourceOrigin(source string) string {
	if i := strings.LastIndex(source, "/versions/"); i > 0 && strings.Contains(source[:i], "/v0/servers/") && !strings.Contains(source[i+len("/versions/"):], "/") {
		return source[:i]
	}
	return source
}

// ConfirmSource is what a value confirmed for this record is bound to
// besides its signer: "" for a signed record (its signer identity is
// enough), the record's SourceOrigin for an unsigned one, whose signer
// identity ("unsigned") every unsigned plugin shares.
func (r *Record) ConfirmSource() string {
	if r.Signer != nil {
		return ""
	}
	return SourceOrigin(r.Source)
}

// ID is name@version.
func (r *Record) ID() string { return r.Name + "@" + r.Version }

// CheckRef validates a plugin name and optional version given on a command
// line before they are used in a path.
func CheckRef(name, version string) error {
	if !bundle.IsValidName(name) {
		return fmt.Errorf("%q is not a plugin name (lower-case letters, digits and '-'); `berth list` shows the trusted plugins", name)
	}
	if version != "" && !bundle.IsStrictSemver(version) {
		return fmt.Errorf("%q is not a version (strict semver like 1.4.2); `berth list` shows the trusted versions", version)
	}
	return nil
}

// Records lists every trust record, sorted by name and then by semver.
func (s *Store) Records() ([]*Record, error) {
	matches, err := filepath.Glob(filepath.Join(s.paths.TrustDir(), "*", "*.json"))
	if err != nil {
		return nil, err
	}
	var out []*Record
	for _, m := range matches {
		if strings.HasSuffix(m, ".sigstore.json") {
			continue
		}
		r := &Record{}
		found, err := readJSON(m, r)
		if err != nil {
			return nil, err
		}
		if !found {
			continue // revoked by another berth since the Glob
		}
		if CheckRef(r.Name, r.Version) != nil || s.paths.Record(r.Name, r.Version) != m {
			return nil, fmt.Errorf("trust record %s does not match its path; remove it and re-trust the plugin", m)
		}
		// The digest names a store path, and the signer decides whether
		// the signature is checked: neither may be taken on faith.
		if _, err := ParseDigest(r.Digest); err != nil {
			return nil, fmt.Errorf("trust record %s is damaged (digest: %v); remove it and re-trust the plugin", m, err)
		}
		if r.Unsigned != (r.Signer == nil) {
			return nil, fmt.Errorf("trust record %s is damaged (unsigned is %v but signer is %v); remove it and re-trust the plugin", m, r.Unsigned, r.Signer)
		}
		out = append(out, r)
	}
	sortRecords(out)
	return out, nil
}

func sortRecords(rs []*Record) {
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].Name != rs[j].Name {
			return rs[i].Name < rs[j].Name
		}
		if bundle.IsDerivedVersion(rs[i].Version) && bundle.IsDerivedVersion(rs[j].Version) {
			// Contents of a versionless plugin: the one trusted last is
			// what its source offered last; never ordered by digits.
			return rs[i].TrustedAt.Before(rs[j].TrustedAt)
		}
		return bundle.VersionLess(rs[i].Version, rs[j].Version)
	})
}

// SameVersion reports whether two strict semver versions are the same
// version: equal but for build metadata (1.0.0 and 1.0.0+x), which semver
// 2.0 leaves out of precedence. For immutability they are one version.
func SameVersion(a, b string) bool {
	va, ea := semver.StrictNewVersion(a)
	vb, eb := semver.StrictNewVersion(b)
	if ea != nil || eb != nil {
		return a == b
	}
	return va.Equal(vb)
}

// Find returns the records of name (every version when version is ""),
// oldest version first. No record is an error naming what to run.
func (s *Store) Find(name, version string) ([]*Record, error) {
	if err := CheckRef(name, version); err != nil {
		return nil, err
	}
	all, err := s.Records()
	if err != nil {
		return nil, err
	}
	var out []*Record
	for _, r := range all {
		if r.Name == name && (version == "" || r.Version == version) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		if version == "" {
			return nil, NotTrustedf("%s is not trusted; trust it first with `berth trust SOURCE` (`berth list` shows what is trusted)", name)
		}
		var others []string
		for _, r := range all {
			if r.Name == name {
				others = append(others, r.Version)
			}
		}
		if len(others) == 0 {
			return nil, NotTrustedf("%s@%s is not trusted, nor is any version of %s; trust it first with `berth trust SOURCE` (`berth list` shows what is trusted)", name, version, name)
		}
		if len(others) == 1 {
			return nil, NotTrustedf("%s@%s is not trusted; the trusted version of %s is %s: name it (%s@%s), or trust %s@%s first with `berth trust SOURCE`", name, version, name, others[0], name, others[0], name, version)
		}
		// Records sorts by semver: the last is the newest.
		return nil, NotTrustedf("%s@%s is not trusted; the trusted versions of %s are %s: name one of them (%s@%s is the newest), or trust %s@%s first with `berth trust SOURCE`", name, version, name, strings.Join(others, ", "), name, others[len(others)-1], name, version)
	}
	return out, nil
}

// ErrNotTrusted means a plugin has no trust record. It wraps
// trust.ErrUntrusted.
var ErrNotTrusted = fmt.Errorf("no trust record: %w", trust.ErrUntrusted)

// NotTrustedf returns an error worded as given that is ErrNotTrusted
// (errors.Is), without the sentinel's own words appended: the message
// reads as one sentence.
func NotTrustedf(format string, args ...any) error {
	return &notTrustedError{fmt.Sprintf(format, args...)}
}

// Untrustedf returns an error worded as given (a %w in format wraps as
// with fmt.Errorf) that is also trust.ErrUntrusted (errors.Is), without
// the sentinel's word glued into the sentence.
func Untrustedf(format string, args ...any) error {
	return &categoryError{err: fmt.Errorf(format, args...), category: trust.ErrUntrusted}
}

// Driftf is Untrustedf for ErrDrift.
func Driftf(format string, args ...any) error {
	return &categoryError{err: fmt.Errorf(format, args...), category: ErrDrift}
}

// categoryError is an error worded as its err says, in a category
// (a sentinel such as trust.ErrUntrusted) that it does not name.
type categoryError struct{ err, category error }

func (e *categoryError) Error() string   { return e.err.Error() }
func (e *categoryError) Unwrap() []error { return []error{e.category, e.err} }

type notTrustedError struct{ msg string }

func (e *notTrustedError) Error() string { return e.msg }
func (e *notTrustedError) Unwrap() error { return ErrNotTrusted }

func (s *Store) recordsOf(name string) ([]*Record, error) {
	all, err := s.Records()
	if err != nil {
		return nil, err
	}
	var out []*Record
	for _, r := range all {
		if r.Name == name {
			out = append(out, r)
		}
	}
	return out, nil
}
