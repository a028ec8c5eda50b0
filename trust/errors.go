package trust

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrUntrusted marks every signature verification failure: a signature
// bundle that cannot be read, one made for other content, one that no
// signer of the policy accepts, or an empty policy. The CLI maps it to
// exit code 4. Test for it with errors.Is.
var ErrUntrusted = errors.New("untrusted")

// ErrInvalidSigner marks a signer policy entry that cannot be used: a bad
// name, an unsupported or malformed public key, a fingerprint that does
// not match its key, an identity that is not exact, or a trusted root that
// does not load. It is a configuration problem, not a verdict on a
// signature, so it does not wrap ErrUntrusted.
var ErrInvalidSigner = errors.New("invalid signer")

// ErrInvalidKey marks a private key that Sign cannot use: not PEM, an
// encrypted PEM, or an unsupported algorithm or size. The message never
// contains key material.
var ErrInvalidKey = errors.New("invalid private key")

// fixAddSigner is the advice given when a policy has no signer that could
// accept a signature.
const fixAddSigner = "add the publisher's key with `berth signers add-key NAME PUBKEY.pem`, " +
	"or its certificate identity with `berth signers add-identity NAME --issuer URL --san VALUE`"

// fixResign is the advice given when a signature bundle is unusable as such.
const fixResign = "get the signature file that belongs to this bundle from its publisher, " +
	"or re-sign the listing with `berth sign`"

// Attempt records why one signer of the policy did not accept a signature.
type Attempt struct {
	// Signer is the policy entry that was tried.
	Signer Signer
	// Reason says in one line why it did not verify.
	Reason string
	// Err is the underlying error (often from sigstore-go).
	Err error
}

// VerificationError is returned by Verifier.Verify when the signature
// bundle is well formed but no signer of the policy accepts it. It lists
// every signer tried, in policy order, and wraps ErrUntrusted and each
// attempt's error.
type VerificationError struct {
	// ArtifactDigest is "sha256:<hex>" of the listing that was checked.
	ArtifactDigest string
	// Attempts holds one entry per signer of the policy.
	Attempts []Attempt
}

func (e *VerificationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: no signer in the trust policy accepts the signature of %s (%d tried):",
		ErrUntrusted, e.ArtifactDigest, len(e.Attempts))
	for _, a := range e.Attempts {
		fmt.Fprintf(&b, "\n  %s: %s", a.Signer, a.Reason)
	}
	b.WriteString("\nfix: if you trust this publisher, " + fixAddSigner +
		"; if the bundle or its signature changed after signing, get a fresh copy or re-sign it with `berth sign`")
	return b.String()
}

// Unwrap returns ErrUntrusted followed by every attempt's error.
func (e *VerificationError) Unwrap() []error {
	errs := []error{ErrUntrusted}
	for _, a := range e.Attempts {
		if a.Err != nil {
			errs = append(errs, a.Err)
		}
	}
	return errs
}

// KeyWindowError reports a key signer used outside its validity window.
// Verify returns it inside a VerificationError (find it with errors.As);
// it wraps ErrUntrusted.
type KeyWindowError struct {
	Signer    string
	NotBefore *time.Time // nil: no lower bound
	NotAfter  *time.Time // nil: no upper bound
	At        time.Time  // the verification time that fell outside
}

func (e *KeyWindowError) Error() string {
	state := "is outside"
	switch {
	case e.NotBefore != nil && e.At.Before(*e.NotBefore):
		state = "is before the start of"
	case e.NotAfter != nil && e.At.After(*e.NotAfter):
		state = "is after the end of"
	}
	return fmt.Sprintf("verification time %s %s the validity window of key %q (%s): "+
		"ask the publisher to sign with a current key, or re-add the key with a window that covers this time if you still trust it",
		e.At.UTC().Format(time.RFC3339), state, e.Signer, formatWindow(e.NotBefore, e.NotAfter))
}

func (e *KeyWindowError) Unwrap() error { return ErrUntrusted }

func formatWindow(notBefore, notAfter *time.Time) string {
	from, until := "any time", "no end"
	if notBefore != nil {
		from = notBefore.UTC().Format(time.RFC3339)
	}
	if notAfter != nil {
		until = notAfter.UTC().Format(time.RFC3339)
	}
	return "valid from " + from + " until " + until
}
