// Package trust verifies the Sigstore signatures of berth bundles against
// the operator's signer policy, and signs bundles with a key.
//
// The signed artifact of a bundle is its canonical listing (see package
// bundle); the bundle digest is "sha256:" + hex(sha256(listing)). A
// signature is a Sigstore bundle, v0.3 JSON
// ("application/vnd.dev.sigstore.bundle.v0.3+json") holding a message
// signature over the listing, as written by Sign, by `berth sign`, or by
// `cosign sign-blob --bundle FILE --new-bundle-format`.
//
// # Signer policy
//
// A [Signer] is one entry of the policy, plain data kept in config.json:
//
//   - a key signer ([NewKeySigner]) trusts one public key (ECDSA P-256 or
//     P-384, RSA of 2048 bits or more), optionally within a validity window
//     checked against the verification time;
//   - an identity signer ([NewIdentitySigner]) trusts Fulcio certificates
//     for one exact OIDC issuer and one SAN, given exactly or as a regular
//     expression that berth always anchors, under a Sigstore trusted root
//     (the embedded public-good root, or a trusted_root.json file).
//
// # Verification
//
// [NewVerifier] prepares a policy once; [Verifier.Verify] checks a
// signature offline with sigstore-go, trying each signer in order, and
// returns a [Result] naming the signer that accepted it. Every failure
// wraps [ErrUntrusted]; when no signer accepts a well-formed signature the
// error is a [*VerificationError] listing each signer and why it failed.
// Key signatures are checked at the current time; certificate signatures
// need at least one verified observer timestamp (RFC 3161 or
// transparency log), and a verified transparency-log entry when the bundle
// carries one.
//
// # Signing
//
// [GenerateKey] and [WriteKeyPair] make an ECDSA P-256 key pair; [Sign]
// produces a key-based v0.3 bundle with no transparency-log entry and no
// timestamp, entirely offline.
//
// This package keeps no state on disk: package store keeps the signer
// policy in config.json, and its Store.Trust (the install pipeline)
// verifies with a Verifier of this package before it records anything.
//
// The package keeps no global mutable state.
package trust
