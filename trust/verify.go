package trust

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// errOutOfScope is the attempt error of a signer scoped to another plugin.
var errOutOfScope = errors.New("signer scoped to another plugin")

// MaxSignatureSize is the largest signature bundle Verify reads (1 MiB).
const MaxSignatureSize = 1 << 20

// BundleMediaType is the media type of the signature bundles berth
// accepts: Sigstore bundle v0.3 JSON.
const BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// bundleMediaTypeAlt is the older spelling of the same v0.3 media type.
const bundleMediaTypeAlt = "application/vnd.dev.sigstore.bundle+json;version=0.3"

// VerifierOptions are the optional settings of NewVerifier. A nil
// *VerifierOptions means defaults.
type VerifierOptions struct {
	// Now returns the verification time against which key validity windows
	// are checked. nil means time.Now.
	Now func() time.Time
}

// Verifier checks Sigstore signature bundles over canonical listings
// against a signer policy, offline.
//
// A Verifier is immutable after NewVerifier and safe for concurrent use by
// multiple goroutines, provided the Now function given in its options is.
type Verifier struct {
	signers []preparedSigner
	now     func() time.Time
}

// preparedSigner is a policy entry with its trust material parsed once.
type preparedSigner struct {
	signer Signer

	// key signers
	keyMaterial root.TrustedMaterial

	// identity signers
	trustedRoot root.TrustedMaterial
	identity    verify.CertificateIdentity
}

// Result records a successful verification: which signer accepted the
// signature and what was verified.
type Result struct {
	// Signer is the policy entry that accepted the signature.
	Signer Signer
	// Kind is Signer.Kind.
	Kind SignerKind
	// KeyFingerprint is "sha256:<hex>" of the key, for key signers.
	KeyFingerprint string
	// Issuer and SAN come from the verified certificate, for identity signers.
	Issuer, SAN string
	// Timestamps are the verified observer timestamps (RFC 3161 timestamp
	// authority, transparency log) that were used. It is empty for key
	// signatures, whose validity is checked at the verification time.
	Timestamps []time.Time
	// MediaType is the media type of the signature bundle.
	MediaType string
	// ArtifactDigest is "sha256:<hex>" of the listing, i.e. the bundle digest.
	ArtifactDigest string
}

// NewVerifier prepares a verifier for the signer policy signers: it
// validates every signer, parses keys and loads trusted roots once. An
// empty policy is allowed; Verify then fails with advice on adding a
// signer. Errors wrap ErrInvalidSigner.
func NewVerifier(signers []Signer, opts *VerifierOptions) (*Verifier, error) {
	v := &Verifier{now: time.Now}
	if opts != nil && opts.Now != nil {
		v.now = opts.Now
	}
	seen := make(map[string]bool, len(signers))
	roots := make(map[string]*root.TrustedRoot) // one parse per trusted root file
	for _, s := range signers {
		s = s.clone() // the Verifier must not change if the caller's slice does
		if err := s.Validate(); err != nil {
			return nil, err
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("%w: the trust policy has two signers named %q: remove or rename one", ErrInvalidSigner, s.Name)
		}
		seen[s.Name] = true
		ps := preparedSigner{signer: s}
		switch s.Kind {
		case KindKey:
			km, err := keyMaterial(s)
			if err != nil {
				return nil, fmt.Errorf("%w: signer %q: %w", ErrInvalidSigner, s.Name, err)
			}
			ps.keyMaterial = km
		case KindIdentity:
			tr, ok := roots[s.TrustedRoot]
			if !ok {
				var err error
				if tr, err = loadTrustedRoot(s.TrustedRoot); err != nil {
					return nil, fmt.Errorf("%w: signer %q: %w", ErrInvalidSigner, s.Name, err)
				}
				roots[s.TrustedRoot] = tr
			}
			ps.trustedRoot = tr
			san, sanRE := s.SAN, ""
			if s.SANRegex != "" {
				san, sanRE = "", anchor(s.SANRegex)
			}
			id, err := verify.NewShortCertificateIdentity(s.Issuer, "", san, sanRE)
			if err != nil {
				return nil, fmt.Errorf("%w: signer %q: %w", ErrInvalidSigner, s.Name, err)
			}
			ps.identity = id
		}
		v.signers = append(v.signers, ps)
	}
	return v, nil
}

// keyMaterial turns a key signer into sigstore trusted material. The
// bundle's key hint is ignored: producers format it differently, and the
// policy entry names the one key to check against.
func keyMaterial(s Signer) (root.TrustedMaterial, error) {
	pub, err := parsePublicKeyPEM([]byte(s.PublicKey))
	if err != nil {
		return nil, err
	}
	sv, err := loadSignatureVerifier(pub)
	if err != nil {
		return nil, err
	}
	var start, end time.Time
	if s.NotBefore != nil {
		start = *s.NotBefore
	}
	if s.NotAfter != nil {
		end = *s.NotAfter
	}
	key := root.NewExpiringKey(sv, start, end)
	return root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
		return key, nil
	}), nil
}

// Verify checks that sigJSON, a Sigstore bundle v0.3 JSON, is a valid
// signature over listing by one of the policy's signers that are not
// scoped to a plugin, offline. Signers are tried in policy order and the
// first that accepts the signature is returned in the Result. A signer
// scoped to a plugin (Signer.Plugin) accepts nothing here: verify a
// plugin's bundle with VerifyPlugin.
//
// Every error wraps ErrUntrusted. When the bundle is well formed but no
// signer accepts it, the error is a *VerificationError naming every signer
// tried and why it failed.
func (v *Verifier) Verify(ctx context.Context, listing []byte, sigJSON []byte) (*Result, error) {
	return v.verify(ctx, "", listing, sigJSON)
}

// VerifyPlugin is Verify for a bundle of the plugin named plugin: the
// name in the manifest of the bundle whose canonical listing is listing
// (the listing covers the manifest, so the name cannot be swapped without
// breaking the signature). The policy's unscoped signers and those scoped
// to plugin are tried; a signer scoped to another plugin never accepts the
// signature, whatever key or identity made it.
func (v *Verifier) VerifyPlugin(ctx context.Context, plugin string, listing []byte, sigJSON []byte) (*Result, error) {
	if plugin == "" {
		panic("trust: VerifyPlugin needs the plugin's name; use Verify for a signature of no plugin")
	}
	return v.verify(ctx, plugin, listing, sigJSON)
}

func (v *Verifier) verify(ctx context.Context, plugin string, listing []byte, sigJSON []byte) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: verification stopped: %w", ErrUntrusted, err)
	}
	if len(v.signers) == 0 {
		return nil, fmt.Errorf("%w: the trust policy has no signers, so no signature can be trusted; %s", ErrUntrusted, fixAddSigner)
	}
	b, err := decodeBundle(sigJSON)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(listing)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	if err := checkMessageDigest(b.GetMessageSignature(), listing, digest); err != nil {
		return nil, err
	}
	keySigned := b.GetVerificationMaterial().GetPublicKey() != nil

	verr := &VerificationError{ArtifactDigest: digest}
	for _, ps := range v.signers {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: verification stopped: %w", ErrUntrusted, err)
		}
		var res *Result
		var a Attempt
		if sp := ps.signer.Plugin; sp != "" && sp != plugin {
			reason := "this signer is scoped to plugin " + sp + " only, and this is a bundle of " + plugin
			if plugin == "" {
				reason = "this signer is scoped to plugin " + sp + " only, and this signature was checked for no plugin"
			}
			verr.Attempts = append(verr.Attempts, Attempt{Signer: ps.signer.clone(), Reason: reason, Err: errOutOfScope})
			continue
		}
		switch ps.signer.Kind {
		case KindKey:
			res, a = v.verifyKey(ps, b, keySigned, listing)
		case KindIdentity:
			res, a = verifyIdentity(ps, b, keySigned, listing)
		}
		if res != nil {
			res.Signer = res.Signer.clone()
			res.MediaType = b.GetMediaType()
			res.ArtifactDigest = digest
			return res, nil
		}
		a.Signer = ps.signer.clone()
		verr.Attempts = append(verr.Attempts, a)
	}
	return nil, verr
}

func (v *Verifier) verifyKey(ps preparedSigner, b *bundle.Bundle, keySigned bool, listing []byte) (*Result, Attempt) {
	s := ps.signer.clone()
	if !keySigned {
		return nil, Attempt{
			Reason: "the signature carries a certificate (keyless signing), but this signer is a public key; add an identity signer for the certificate's issuer and SAN",
			Err:    errors.New("certificate-signed bundle offered to a key signer"),
		}
	}
	at := v.now()
	if (s.NotBefore != nil && at.Before(*s.NotBefore)) || (s.NotAfter != nil && at.After(*s.NotAfter)) {
		werr := &KeyWindowError{Signer: s.Name, NotBefore: s.NotBefore, NotAfter: s.NotAfter, At: at}
		return nil, Attempt{Reason: werr.Error(), Err: werr}
	}
	// WithCurrentTime: a key signature carries no trusted time of its own,
	// so sigstore-go also checks the key's window at the wall clock
	// (time.Now, not VerifierOptions.Now); the check above is the one that
	// honours the injected clock. Transparency-log entries and timestamps a
	// key bundle may carry are not required and not checked.
	sv, err := verify.NewVerifier(ps.keyMaterial, verify.WithCurrentTime())
	if err != nil {
		return nil, Attempt{Reason: "internal error configuring sigstore-go: " + err.Error(), Err: err}
	}
	res, err := sv.Verify(b, verify.NewPolicy(verify.WithArtifact(bytes.NewReader(listing)), verify.WithKey()))
	if err != nil {
		return nil, Attempt{Reason: explain(err), Err: err}
	}
	return &Result{
		Signer:         s,
		Kind:           KindKey,
		KeyFingerprint: s.Fingerprint,
		Timestamps:     observerTimes(res),
	}, Attempt{}
}

func verifyIdentity(ps preparedSigner, b *bundle.Bundle, keySigned bool, listing []byte) (*Result, Attempt) {
	if keySigned {
		return nil, Attempt{
			Reason: "the signature is made with a public key, but this signer is a certificate identity; add the publisher's key with `berth signers add-key NAME PUBKEY.pem`",
			Err:    errors.New("key-signed bundle offered to an identity signer"),
		}
	}
	// Fulcio certificates live minutes, so the signing time must be
	// vouched for by a third party: at least one observer timestamp (an
	// RFC 3161 timestamp or a transparency-log integrated time) verified
	// against the trusted root, and the certificate chain is checked at
	// that time. If the bundle carries transparency-log entries, at least
	// one must also verify; a bundle without any (e.g. signed with only a
	// timestamp authority) is accepted on its timestamp alone.
	opts := []verify.VerifierOption{verify.WithObserverTimestamps(1)}
	if len(b.GetVerificationMaterial().GetTlogEntries()) > 0 {
		opts = append(opts, verify.WithTransparencyLog(1))
	}
	sv, err := verify.NewVerifier(ps.trustedRoot, opts...)
	if err != nil {
		return nil, Attempt{Reason: "internal error configuring sigstore-go: " + err.Error(), Err: err}
	}
	res, err := sv.Verify(b, verify.NewPolicy(verify.WithArtifact(bytes.NewReader(listing)), verify.WithCertificateIdentity(ps.identity)))
	if err != nil {
		return nil, Attempt{Reason: explain(err), Err: err}
	}
	r := &Result{Signer: ps.signer, Kind: KindIdentity, Timestamps: observerTimes(res)}
	if res.Signature != nil && res.Signature.Certificate != nil {
		c := res.Signature.Certificate
		r.Issuer, r.SAN = c.Issuer, c.SubjectAlternativeName
	}
	return r, Attempt{}
}

// observerTimes returns the verified timestamps that came from a timestamp
// authority or a transparency log (not the wall clock).
func observerTimes(res *verify.VerificationResult) []time.Time {
	var ts []time.Time
	for _, t := range res.VerifiedTimestamps {
		if t.Type != "CurrentTime" {
			ts = append(ts, t.Timestamp)
		}
	}
	return ts
}

// decodeBundle reads a signature bundle, strictly: bounded size, JSON,
// the v0.3 media type, a valid Sigstore bundle, a message signature.
func decodeBundle(sigJSON []byte) (*bundle.Bundle, error) {
	if len(sigJSON) > MaxSignatureSize {
		return nil, fmt.Errorf("%w: the signature bundle is over the 1 MiB limit: a Sigstore bundle is a few KiB; %s",
			ErrUntrusted, fixResign)
	}
	var head struct {
		MediaType string `json:"mediaType"`
	}
	if err := json.Unmarshal(sigJSON, &head); err != nil {
		return nil, fmt.Errorf("%w: the signature bundle is not valid JSON (%w); %s", ErrUntrusted, err, fixResign)
	}
	if head.MediaType != BundleMediaType && head.MediaType != bundleMediaTypeAlt {
		return nil, fmt.Errorf("%w: the signature bundle has media type %s, want %q (Sigstore bundle v0.3); "+
			"re-sign the listing with `berth sign` or `cosign sign-blob --bundle FILE --new-bundle-format`",
			ErrUntrusted, quoteShort(head.MediaType), BundleMediaType)
	}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(sigJSON); err != nil {
		return nil, fmt.Errorf("%w: the signature bundle is not a valid Sigstore bundle (%w); %s", ErrUntrusted, err, fixResign)
	}
	if b.GetMessageSignature() == nil {
		return nil, fmt.Errorf("%w: the signature bundle holds a DSSE envelope (an attestation), not a message signature over the listing; "+
			"sign the listing itself with `berth sign` or `cosign sign-blob --bundle FILE --new-bundle-format`", ErrUntrusted)
	}
	return &b, nil
}

// checkMessageDigest compares the digest recorded in the bundle with the
// listing's. The recorded digest is not authenticated, so a match proves
// nothing (the signature check does that), but a mismatch means no signer
// can verify, and says why more plainly than a failed signature check.
func checkMessageDigest(ms *protocommon.MessageSignature, listing []byte, digest string) error {
	md := ms.GetMessageDigest()
	var got []byte
	var alg string
	switch md.GetAlgorithm() {
	case protocommon.HashAlgorithm_SHA2_256:
		s := sha256.Sum256(listing)
		got, alg = s[:], "sha256"
	case protocommon.HashAlgorithm_SHA2_384:
		s := sha512.Sum384(listing)
		got, alg = s[:], "sha384"
	case protocommon.HashAlgorithm_SHA2_512:
		s := sha512.Sum512(listing)
		got, alg = s[:], "sha512"
	default:
		return fmt.Errorf("%w: the signature bundle uses digest algorithm %s, which berth does not verify (SHA2_256, SHA2_384 or SHA2_512); %s",
			ErrUntrusted, md.GetAlgorithm(), fixResign)
	}
	if bytes.Equal(got, md.GetDigest()) {
		return nil
	}
	recorded := md.GetDigest()
	if len(recorded) > 64 {
		recorded = recorded[:64] // untrusted input: keep the message short
	}
	made := alg + ":" + hex.EncodeToString(recorded)
	return fmt.Errorf("%w: the signature was made for content with digest %s, not for this listing (%s): "+
		"the bundle changed after signing or this is another bundle's signature; %s", ErrUntrusted, made, digest, fixResign)
}

// explain turns a sigstore-go verification error into one plain line
// (with sigstore's own words in brackets). A mismatched certificate
// identity is found by its type; sigstore-go v1.3.0 has no typed error for
// the other failures, so they are told apart by its messages, which the
// tests against real signatures pin (verify_test.go).
func explain(err error) string {
	// sigstore-go formats an empty errors.Join with %w as "%!w(<nil>)".
	msg := strings.ReplaceAll(err.Error(), "; error: %!w(<nil>)", "")
	var nm *verify.ErrNoMatchingCertificateIdentity
	if errors.As(err, &nm) {
		why := "the certificate's identity does not match this signer"
		if errs := nm.Unwrap(); len(errs) > 0 {
			return why + ": " + errs[len(errs)-1].Error()
		}
		return why + " [sigstore: " + msg + "]"
	}
	var why string
	switch {
	case strings.Contains(msg, "could not verify message"),
		strings.Contains(msg, "invalid signature"),
		strings.Contains(msg, "verification error"):
		why = "the signature does not verify with this key: it was made with another key, or the signature bytes were altered"
	case strings.Contains(msg, "artifact digest does not match"):
		why = "the signature was made for other content than this listing"
	case strings.Contains(msg, "outside of public key validity window"):
		why = "the key's validity window does not cover the current time"
	case strings.Contains(msg, "expected key signature, not certificate"):
		why = "the signature carries a certificate, but this signer is a public key"
	case strings.Contains(msg, "not signed with a certificate"):
		why = "the signature is made with a public key, but this signer is a certificate identity"
	case strings.Contains(msg, "no matching CertificateIdentity"), strings.Contains(msg, "failed to verify certificate identity"):
		why = "the certificate's identity does not match this signer"
		if i := strings.Index(msg, "last error: "); i >= 0 {
			why += ": " + msg[i+len("last error: "):]
			return why
		}
	case strings.Contains(msg, "threshold not met"), strings.Contains(msg, "no valid observer timestamps"):
		why = "no timestamp in the bundle verifies under this signer's trusted root (a certificate signature needs an RFC 3161 timestamp or a transparency-log entry from that root)"
	case strings.Contains(msg, "failed to verify leaf certificate"):
		why = "the certificate does not chain to a Fulcio CA of this signer's trusted root at the signing time"
	case strings.Contains(msg, "log inclusion"), strings.Contains(msg, "log entries"):
		why = "the bundle's transparency-log entry does not verify under this signer's trusted root"
	default:
		why = "sigstore verification failed"
	}
	return why + " [sigstore: " + msg + "]"
}

// quoteShort quotes an untrusted string for a message, cut to 80 bytes.
func quoteShort(s string) string {
	if s == "" {
		return "(none)"
	}
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return fmt.Sprintf("%q", s)
}
