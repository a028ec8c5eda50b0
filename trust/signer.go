package trust

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/berth-mcp/berth/bundle"
)

// SignerKind says how a Signer recognises a signature.
type SignerKind string

const (
	// KindKey is a signer identified by a long-lived public key.
	KindKey SignerKind = "key"
	// KindIdentity is a signer identified by a Fulcio certificate identity
	// (OIDC issuer + subject alternative name) under a Sigstore trusted root.
	KindIdentity SignerKind = "identity"
)

// Limits on key sizes accepted for key signers and for Sign.
const (
	minRSABits = 2048
	maxRSABits = 16384
)

// Signer is one entry of the operator's signer policy. It is plain data,
// stored in $BERTH_HOME/config.json; build one with NewKeySigner or
// NewIdentitySigner and re-check one read back from disk with Validate.
type Signer struct {
	// Name identifies the signer in the policy, in trust records and in
	// messages. It matches ^[a-z0-9]([a-z0-9_-]{0,62}[a-z0-9])?$.
	Name string `json:"name"`
	// Kind is KindKey or KindIdentity.
	Kind SignerKind `json:"kind"`

	// PublicKey is the PEM public key of a key signer: ECDSA P-256 or
	// P-384, or RSA of at least 2048 bits.
	PublicKey string `json:"publicKey,omitempty"`
	// Fingerprint is "sha256:" + hex of sha256 of the key's PKIX DER. It is
	// derived from PublicKey and checked against it by Validate.
	Fingerprint string `json:"fingerprint,omitempty"`
	// NotBefore and NotAfter bound the time at which a key signer's
	// signatures are accepted (inclusive; nil means unbounded). They are
	// checked against the verification time.
	NotBefore *time.Time `json:"notBefore,omitempty"`
	NotAfter  *time.Time `json:"notAfter,omitempty"`

	// Issuer is the exact OIDC issuer URL of an identity signer (https).
	Issuer string `json:"issuer,omitempty"`
	// SAN is the exact subject alternative name of an identity signer's
	// certificate (an e-mail address or a URI). Exactly one of SAN and
	// SANRegex is set.
	SAN string `json:"san,omitempty"`
	// SANRegex is a Go regular expression the whole SAN must match: berth
	// always anchors it as ^(?:SANRegex)$, so "bot@example\.com" does not
	// match "evil-bot@example.com.attacker".
	SANRegex string `json:"sanRegex,omitempty"`
	// TrustedRoot is the absolute path of a trusted_root.json holding the
	// Fulcio CAs, timestamp authorities and transparency logs to trust.
	// Empty means the Sigstore public-good root embedded in berth.
	TrustedRoot string `json:"trustedRoot,omitempty"`

	// Plugin, when set, scopes the signer to one plugin: it accepts the
	// signatures of bundles of that plugin name only (Verifier.VerifyPlugin)
	// and never another's, nor a signature checked without a plugin name
	// (Verifier.Verify). berth install adds a catalog's signer this way,
	// for the one plugin the catalog vouches for it.
	Plugin string `json:"plugin,omitempty"`
}

// KeySignerOptions are the optional settings of NewKeySigner. A nil
// *KeySignerOptions means no validity window.
type KeySignerOptions struct {
	// NotBefore and NotAfter bound the key's validity window; the zero
	// time means no bound.
	NotBefore time.Time
	NotAfter  time.Time
}

var signerNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9_-]{0,62}[a-z0-9])?$`)

// NewKeySigner returns a key signer for the PEM public key pubPEM ("PUBLIC
// KEY", PKIX). It rejects unsupported keys (Ed25519, RSA under 2048 bits or
// over 16384, curves other than P-256 and P-384), stores the key as a
// canonical PEM block and fills Fingerprint. Errors wrap ErrInvalidSigner.
func NewKeySigner(name string, pubPEM []byte, opts *KeySignerOptions) (Signer, error) {
	s := Signer{Name: name, Kind: KindKey, PublicKey: string(pubPEM)}
	if opts != nil {
		if !opts.NotBefore.IsZero() {
			t := opts.NotBefore.UTC()
			s.NotBefore = &t
		}
		if !opts.NotAfter.IsZero() {
			t := opts.NotAfter.UTC()
			s.NotAfter = &t
		}
	}
	if pub, err := parsePublicKeyPEM(pubPEM); err == nil {
		// Store the key re-encoded, without any text around the PEM block.
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			return Signer{}, fmt.Errorf("%w: signer %q: encoding the public key: %w", ErrInvalidSigner, name, err)
		}
		s.PublicKey = string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
		s.Fingerprint = fingerprint(pub)
	}
	if err := s.Validate(); err != nil {
		return Signer{}, err
	}
	return s, nil
}

// NewIdentitySigner returns an identity signer: signatures are accepted when
// they carry a certificate issued under the trusted root for exactly this
// OIDC issuer and a SAN equal to san, or matching the anchored regular
// expression sanRegex (exactly one of the two). trustedRootPath names a
// trusted_root.json; "" selects the embedded Sigstore public-good root. The
// file is loaded once here to check it, and stored as an absolute path.
// Errors wrap ErrInvalidSigner.
func NewIdentitySigner(name, issuer, san, sanRegex, trustedRootPath string) (Signer, error) {
	s := Signer{Name: name, Kind: KindIdentity, Issuer: issuer, SAN: san, SANRegex: sanRegex}
	if trustedRootPath != "" {
		abs, err := filepath.Abs(trustedRootPath)
		if err != nil {
			return Signer{}, fmt.Errorf("%w: signer %q: trusted root %q: %w", ErrInvalidSigner, name, trustedRootPath, err)
		}
		s.TrustedRoot = abs
	}
	if err := s.Validate(); err != nil {
		return Signer{}, err
	}
	if _, err := loadTrustedRoot(s.TrustedRoot); err != nil {
		return Signer{}, fmt.Errorf("%w: signer %q: %w", ErrInvalidSigner, name, err)
	}
	return s, nil
}

// Validate re-checks a signer, typically one read back from config.json:
// the name, the kind, and the fields of that kind (and no fields of the
// other kind). It does not read the trusted root file; NewVerifier does.
// All problems are reported in one error that wraps ErrInvalidSigner.
func (s Signer) Validate() error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	if !signerNameRE.MatchString(s.Name) {
		add("name %q does not match ^[a-z0-9]([a-z0-9_-]{0,62}[a-z0-9])?$ (lowercase letters, digits, '-' and '_', 1 to 64 characters; use a name like \"acme-release\")", s.Name)
	}
	if s.Plugin != "" && !bundle.IsValidName(s.Plugin) {
		add("plugin %q is not a plugin name (^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$): a scoped signer names the one plugin it may sign", s.Plugin)
	}
	switch s.Kind {
	case KindKey:
		s.validateKey(add)
	case KindIdentity:
		s.validateIdentity(add)
	default:
		add("kind %q is not %q or %q", s.Kind, KindKey, KindIdentity)
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: signer %q: %s", ErrInvalidSigner, s.Name, strings.Join(problems, "; "))
}

func (s Signer) validateKey(add func(string, ...any)) {
	pub, err := parsePublicKeyPEM([]byte(s.PublicKey))
	switch {
	case err != nil:
		add("publicKey: %v", err)
	case s.Fingerprint != fingerprint(pub):
		add("fingerprint %q does not match the public key (%s): the entry was edited or corrupted; remove it and add the key again with `berth signers add-key`", s.Fingerprint, fingerprint(pub))
	}
	if s.NotBefore != nil && s.NotAfter != nil && s.NotAfter.Before(*s.NotBefore) {
		add("notAfter %s is before notBefore %s: give a window whose end follows its start",
			s.NotAfter.UTC().Format(time.RFC3339), s.NotBefore.UTC().Format(time.RFC3339))
	}
	if s.Issuer != "" || s.SAN != "" || s.SANRegex != "" || s.TrustedRoot != "" {
		add("issuer, san, sanRegex and trustedRoot belong to identity signers, not key signers: remove them")
	}
}

func (s Signer) validateIdentity(add func(string, ...any)) {
	if err := checkIssuer(s.Issuer); err != nil {
		add("issuer: %v", err)
	}
	switch {
	case s.SAN == "" && s.SANRegex == "":
		add("set exactly one of san (exact value, e.g. ci@acme.example) and sanRegex; both are empty")
	case s.SAN != "" && s.SANRegex != "":
		add("set exactly one of san and sanRegex, not both")
	case s.SANRegex != "":
		if _, err := regexp.Compile(s.SANRegex); err != nil {
			add("sanRegex %q does not compile: %v", s.SANRegex, err)
		} else if _, err := regexp.Compile(anchor(s.SANRegex)); err != nil {
			add("sanRegex %q does not compile: %v", s.SANRegex, err)
		}
	}
	if s.TrustedRoot != "" && !filepath.IsAbs(s.TrustedRoot) {
		add("trustedRoot %q is not an absolute path: give the full path of the trusted_root.json", s.TrustedRoot)
	}
	if s.PublicKey != "" || s.Fingerprint != "" || s.NotBefore != nil || s.NotAfter != nil {
		add("publicKey, fingerprint, notBefore and notAfter belong to key signers, not identity signers: remove them")
	}
}

// String describes the signer for humans, e.g.
// `key "acme" (sha256:ab12cd34ef56ab12…)`,
// `identity "ci" (issuer https://token.actions.githubusercontent.com, SAN ci@acme.example)`
// or, scoped to a plugin,
// `key "acme-notes-1f2e3d4c5b6a7980" (sha256:ab12cd34ef56ab12…), for plugin acme-notes only`.
func (s Signer) String() string {
	if s.Plugin != "" {
		u := s
		u.Plugin = ""
		return u.String() + ", for plugin " + s.Plugin + " only"
	}
	switch s.Kind {
	case KindKey:
		return fmt.Sprintf("key %q (%s)", s.Name, shortFingerprint(s.Fingerprint))
	case KindIdentity:
		san := "SAN " + s.SAN
		if s.SANRegex != "" {
			san = "SAN matching " + anchor(s.SANRegex)
		}
		rootDesc := ""
		if s.TrustedRoot != "" {
			rootDesc = ", trusted root " + s.TrustedRoot
		}
		return fmt.Sprintf("identity %q (issuer %s, %s%s)", s.Name, s.Issuer, san, rootDesc)
	default:
		return fmt.Sprintf("%s %q", s.Kind, s.Name)
	}
}

// clone returns a copy of s that shares no memory with it.
func (s Signer) clone() Signer {
	if s.NotBefore != nil {
		t := *s.NotBefore
		s.NotBefore = &t
	}
	if s.NotAfter != nil {
		t := *s.NotAfter
		s.NotAfter = &t
	}
	return s
}

func shortFingerprint(fp string) string {
	const keep = len("sha256:") + 16
	if len(fp) > keep {
		return fp[:keep] + "…"
	}
	return fp
}

// anchor makes a SAN regular expression match whole values only.
func anchor(re string) string { return "^(?:" + re + ")$" }

func checkIssuer(issuer string) error {
	if issuer == "" {
		return fmt.Errorf("empty: give the exact OIDC issuer URL, e.g. https://token.actions.githubusercontent.com")
	}
	u, err := url.Parse(issuer)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", issuer, err)
	}
	if u.Scheme != "https" || u.Host == "" || u.User != nil {
		return fmt.Errorf("%q is not an https URL with a host: OIDC issuers are https URLs such as https://accounts.google.com", issuer)
	}
	return nil
}

// parsePublicKeyPEM decodes one PKIX "PUBLIC KEY" PEM block and checks
// that berth supports the key.
func parsePublicKeyPEM(data []byte) (crypto.PublicKey, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("no PEM block found: give a PEM public key (\"-----BEGIN PUBLIC KEY-----\")")
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("extra data after the PEM block: give exactly one public key")
	}
	switch block.Type {
	case "PUBLIC KEY":
	case "CERTIFICATE":
		return nil, fmt.Errorf("PEM block is a certificate, not a public key: for keyless (certificate) signers use `berth signers add-identity`")
	default:
		return nil, fmt.Errorf("PEM block type %q is not \"PUBLIC KEY\": give the PKIX public key (cosign.pub or the .pub file written by berth)", block.Type)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("cannot parse the PKIX public key: %w", err)
	}
	if err := checkKeyAlgorithm(pub); err != nil {
		return nil, err
	}
	return pub, nil
}

// checkKeyAlgorithm enforces the supported key types and sizes.
func checkKeyAlgorithm(pub crypto.PublicKey) error {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() {
			return fmt.Errorf("ECDSA curve %s is not supported: use P-256 or P-384", k.Curve.Params().Name)
		}
	case *rsa.PublicKey:
		if bits := k.N.BitLen(); bits < minRSABits || bits > maxRSABits {
			return fmt.Errorf("RSA key of %d bits is not supported: use %d to %d bits (or ECDSA P-256)", bits, minRSABits, maxRSABits)
		}
	case ed25519.PublicKey:
		return fmt.Errorf("ed25519 keys are not supported (sigstore-go cannot verify pure Ed25519 message signatures): use an ECDSA P-256 key")
	default:
		return fmt.Errorf("key type %T is not supported: use ECDSA P-256/P-384 or RSA", pub)
	}
	return nil
}

// hashFor is the digest algorithm berth and sigstore use with a key.
func hashFor(pub crypto.PublicKey) crypto.Hash {
	if k, ok := pub.(*ecdsa.PublicKey); ok && k.Curve == elliptic.P384() {
		return crypto.SHA384
	}
	return crypto.SHA256
}

// loadSignatureVerifier returns the sigstore verifier for a supported key:
// ECDSA with SHA-256 (P-256) or SHA-384 (P-384), RSA PKCS#1 v1.5 with SHA-256.
func loadSignatureVerifier(pub crypto.PublicKey) (signature.Verifier, error) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		return signature.LoadECDSAVerifier(k, hashFor(k))
	case *rsa.PublicKey:
		return signature.LoadRSAPKCS1v15Verifier(k, crypto.SHA256)
	}
	return nil, fmt.Errorf("key type %T is not supported", pub)
}

// fingerprint is "sha256:" + hex(sha256(PKIX DER)).
func fingerprint(pub crypto.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:])
}
