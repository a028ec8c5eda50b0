package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/fetched"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/trust"
)

// TrustOptions tune Store.Trust. A nil *TrustOptions means the defaults:
// a signed bundle whose signature lies beside it (DefaultSignatureFile),
// recorded as coming from its absolute path, trusted without asking.
type TrustOptions struct {
	// Bundle tunes how the source is read: its size caps and where an
	// archive is extracted.
	Bundle *bundle.Options
	// Signature is the signature to verify: a Sigstore bundle, v0.3 JSON.
	// When nil, Trust reads it from SignatureFile.
	Signature []byte
	// SignatureFile is the file of the signature when Signature is nil; ""
	// means DefaultSignatureFile(source). It may come with an untrusted
	// bundle, so at most trust.MaxSignatureSize+1 bytes of it are read.
	SignatureFile string
	// Digest, unless zero, is the digest the bundle must have: another
	// one is a *DigestMismatchError.
	Digest Digest
	// UnsignedUnsafe trusts the bundle without a signature, by its exact
	// Digest alone (which must be set); the record says unsigned.
	UnsignedUnsafe bool
	// AllowSignerChange accepts a signer other than the one that signed
	// the plugin's latest trusted version; otherwise that is a
	// *SignerChangeError.
	AllowSignerChange bool
	// Source is the origin the trust record names (a catalog's URL, say);
	// "" means the absolute path of the source.
	Source string
	// SameSource, for an unsigned bundle, refuses it with a
	// *SourceChangeError when the plugin's latest trusted version is
	// unsigned and came from another source (SourceOrigin differs): one
	// unsigned source must not replace another's plugin of the same name,
	// since signer continuity cannot tell them apart. An upgrade from the
	// same source passes.
	SameSource bool
	// AllowedSigners, when not nil, are the only signers whose signature
	// is accepted (a catalog's allowed signers of the plugin), compared by
	// key fingerprint, or by issuer and SAN: a signature that the policy
	// accepts but by anyone else is a *SignerNotAllowedError. An empty,
	// non-nil list accepts nobody.
	AllowedSigners []SignerRef
	// ProposedSigners are signers the policy does not have yet that may
	// have signed the bundle (a catalog vouches for them for this plugin).
	// Trust scopes each one to the bundle's plugin (trust.Signer.Plugin)
	// and tries them after the policy's own. When one of them verifies
	// the signature, Candidate.NewSigner names it, and once Confirm
	// accepts, it is added to the policy, scoped, under the same lock that
	// writes the record. A name must be free in the policy (or name the
	// same signer); ScopedSignerName makes one. An identity signer here
	// uses the embedded Sigstore public-good root (no TrustedRoot).
	ProposedSigners []trust.Signer
	// Catalog, when set, is the catalog origin the record names. It needs
	// Digest and AllowedSigners, and a signature: a record names a catalog
	// only for a bundle checked against the digest and the signers the
	// catalog gives.
	Catalog *CatalogOrigin
	// Confirm, when set, is called once the bundle is validated, verified
	// and reviewed, before anything is written: it shows the candidate to
	// a person, or decides itself. An error from it ends Trust with that
	// error, and nothing is changed. nil confirms.
	Confirm func(*Candidate) error
	// StageProgress, when set, is told how far copying the bundle into
	// the store has got (StageProgress). nil reports nothing.
	StageProgress StageProgress
	// Fetch tunes how the bundle's runtime-fetched servers are resolved
	// before the review (fetched.Resolve): the package managers' base
	// environment, the launcher of confined install scripts, their
	// output. Fetchers and AllowScripts are the store's ($BERTH_HOME/
	// fetchers, config.json's fetchAllowScripts) whatever it says. nil
	// means defaults.
	Fetch *fetched.Options
}

// StageProgress is told, while a bundle is copied into the store, how
// many bytes of its files are copied (copied) of how many (total). It is
// called often, from the goroutine that stages, with the store locked: it
// must return quickly.
type StageProgress func(copied, total int64)

// Candidate is what Trust is about to record, as Confirm sees it.
type Candidate struct {
	// Bundle is the opened, valid bundle; Trust closes it when it returns.
	Bundle *bundle.Bundle
	// Review is the bundle's disclosure; its Hash goes into the record.
	Review *review.Disclosure
	// Signer is the signer of the policy that accepted the signature, and
	// Verification the result; both nil when trusted unsigned.
	Signer       *SignerRef
	Verification *trust.Result
	// NewSigner is set when the signature was verified by one of
	// TrustOptions.ProposedSigners: the signer, scoped to this plugin,
	// that Trust adds to the policy if Confirm accepts.
	NewSigner *trust.Signer
	// Fetched are the trees of the bundle's runtime-fetched servers,
	// resolved before Confirm and staged with the record.
	Fetched []*fetched.Lock
}

// TrustResult reports what Trust did.
type TrustResult struct {
	Record *Record
	// Snapshot is the directory of the staged snapshot.
	Snapshot string
	// Review is the disclosure of the bundle (the one Confirm saw).
	Review *review.Disclosure
	// Already is true when this exact version and digest were trusted
	// before; nothing changed then.
	Already bool
	// Reused is true when the snapshot already existed.
	Reused bool
	// NewSigner is the signer Trust added to the policy, scoped to the
	// plugin (one of TrustOptions.ProposedSigners); nil when none.
	NewSigner *trust.Signer
}

// DefaultSignatureFile is where the signature of a bundle lies unless
// told otherwise: <dir>.sigstore.json beside a directory,
// <archive>.sigstore.json beside an archive.
func DefaultSignatureFile(source string) string {
	return filepath.Clean(source) + ".sigstore.json"
}

// Trust runs berth's install pipeline on source (a bundle directory or
// archive): it opens and validates the bundle (an *bundle.InvalidError on
// any problem), checks the pinned digest, verifies the signature offline
// against the signer policy of config.json, reviews the bundle, asks
// Confirm, and then, under the state lock, stages an immutable copy and
// writes the trust record last (see the package doc). Trust does not
// enable the plugin.
//
// The record can only come from this path: the signer it names is one
// that Trust itself verified, against the policy as it was read here.
// Every refusal of the signature or the signer policy wraps
// trust.ErrUntrusted.
func (s *Store) Trust(ctx context.Context, source string, opts *TrustOptions) (*TrustResult, error) {
	if opts == nil {
		opts = &TrustOptions{}
	}
	if opts.UnsignedUnsafe && opts.Digest.IsZero() {
		return nil, fmt.Errorf("trusting %s without a signature needs its exact digest (TrustOptions.Digest): %w", source, trust.ErrUntrusted)
	}
	if opts.UnsignedUnsafe && (opts.Signature != nil || opts.SignatureFile != "") {
		return nil, fmt.Errorf("trusting %s: TrustOptions.UnsignedUnsafe contradicts a given signature; set one of them", source)
	}
	if opts.UnsignedUnsafe && (opts.AllowedSigners != nil || len(opts.ProposedSigners) > 0) {
		return nil, fmt.Errorf("trusting %s: TrustOptions.UnsignedUnsafe contradicts allowed or proposed signers; set one of them", source)
	}
	if opts.Catalog != nil && (opts.Digest.IsZero() || opts.AllowedSigners == nil || opts.UnsignedUnsafe) {
		return nil, fmt.Errorf("trusting %s from catalog %s needs the catalog's digest (TrustOptions.Digest), its signers (TrustOptions.AllowedSigners) and a signature: %w", source, opts.Catalog.Name, trust.ErrUntrusted)
	}
	b, err := bundle.Open(ctx, source, opts.Bundle)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if !opts.Digest.IsZero() && opts.Digest.String() != b.Digest {
		return nil, &DigestMismatchError{Source: source, Got: b.Digest, Want: opts.Digest.String()}
	}
	v := &verified{bundle: b, source: opts.Source, allowSignerChange: opts.AllowSignerChange, sameSource: opts.SameSource, catalog: opts.Catalog, stageProgress: opts.StageProgress}
	if v.source == "" {
		v.source = absSource(source)
	}
	if !opts.UnsignedUnsafe {
		cfg, err := s.Config()
		if err != nil {
			return nil, err
		}
		proposed, err := proposals(cfg, b.Manifest.Name, opts.ProposedSigners)
		if err != nil {
			return nil, err
		}
		signers := append(append([]trust.Signer(nil), cfg.Signers...), proposed...)
		if len(signers) == 0 {
			return nil, &NoSignerError{Source: source, Digest: b.Digest}
		}
		ver, err := trust.NewVerifier(signers, nil)
		if err != nil {
			return nil, err
		}
		sig := opts.Signature
		if sig == nil {
			path := opts.SignatureFile
			if path == "" {
				path = DefaultSignatureFile(source)
			}
			if sig, err = readSignature(path); err != nil {
				return nil, &SignatureMissingError{Source: source, Path: path, Err: err}
			}
		}
		res, err := ver.VerifyPlugin(ctx, b.Manifest.Name, b.Listing().Bytes(), sig)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		if opts.AllowedSigners != nil {
			ref := refOf(res)
			ok := false
			for _, a := range opts.AllowedSigners {
				ok = ok || a.identity() == ref.identity()
			}
			if !ok {
				return nil, &SignerNotAllowedError{Source: source, Offered: ref, Allowed: opts.AllowedSigners}
			}
		}
		for i := range proposed {
			if proposed[i].Name == res.Signer.Name {
				v.newSigner = &proposed[i]
			}
		}
		v.signature, v.result = sig, res
	}
	d := review.New(b)
	v.reviewHash = d.Hash()
	rs, err := s.resolveFetches(ctx, b, opts.Fetch)
	defer rs.remove()
	if err != nil {
		return nil, err
	}
	v.fetched = rs
	if opts.Confirm != nil {
		c := &Candidate{Bundle: b, Review: d, Verification: v.result, NewSigner: v.newSigner, Fetched: rs.locks()}
		if v.result != nil {
			c.Signer = refOf(v.result)
		}
		if err := opts.Confirm(c); err != nil {
			return nil, err
		}
	}
	res, err := s.record(ctx, v)
	if err != nil {
		return nil, err
	}
	res.Review = d
	return res, nil
}

// proposals returns the proposed signers that the policy cfg does not
// have yet, each scoped to plugin, or an error naming a proposal that
// cannot be added.
func proposals(cfg *Config, plugin string, ps []trust.Signer) ([]trust.Signer, error) {
	var out []trust.Signer
	seen := map[string]bool{}
	for _, p := range ps {
		if p.Plugin != "" && p.Plugin != plugin {
			return nil, fmt.Errorf("the proposed signer %s cannot sign %s: %w", p, plugin, trust.ErrUntrusted)
		}
		if p.Kind == trust.KindIdentity && p.TrustedRoot != "" {
			return nil, fmt.Errorf("the proposed signer %s names a trusted root; a proposed identity is checked against the Sigstore public-good root", p)
		}
		p.Plugin = plugin
		if err := p.Validate(); err != nil {
			return nil, err
		}
		if have, ok := cfg.Signer(p.Name); ok {
			if sameSigner(have, p) {
				continue // in the policy already: it verifies as the policy's
			}
			return nil, fmt.Errorf("the policy has a signer named %q already, and it is not %s; remove it (`berth signers remove %s`) or pick another name", p.Name, p, p.Name)
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("two proposed signers are named %q", p.Name)
		}
		seen[p.Name] = true
		out = append(out, p)
	}
	return out, nil
}

// readSignature reads at most trust.MaxSignatureSize+1 bytes of a
// signature file, which may come with an untrusted bundle: Verify refuses
// anything larger.
func readSignature(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, trust.MaxSignatureSize+1))
}

// absSource is the source a record names: a URL as it is, a path made
// absolute.
func absSource(s string) string {
	if strings.Contains(s, "://") {
		return s
	}
	if abs, err := filepath.Abs(s); err == nil {
		return abs
	}
	return s
}

// DigestMismatchError refuses a bundle whose digest is not the pinned
// one (TrustOptions.Digest). It wraps trust.ErrUntrusted.
type DigestMismatchError struct {
	Source    string
	Got, Want string
}

func (e *DigestMismatchError) Error() string {
	return fmt.Sprintf("%s has digest %s, but the pinned digest is %s; make sure you have the bundle you meant to trust", e.Source, e.Got, e.Want)
}

// Unwrap returns trust.ErrUntrusted.
func (e *DigestMismatchError) Unwrap() error { return trust.ErrUntrusted }

// NoSignerError refuses a signed trust while the signer policy is empty.
// It wraps trust.ErrUntrusted.
type NoSignerError struct {
	Source string
	// Digest is the bundle's, for trusting it unsigned by that digest.
	Digest string
}

func (e *NoSignerError) Error() string {
	return fmt.Sprintf("no signer is configured, so berth cannot trust %s; add the publisher's key or identity to the signer policy (Store.AddSigner), or trust it unsigned by its exact digest %s (TrustOptions.UnsignedUnsafe with TrustOptions.Digest)", e.Source, e.Digest)
}

// Unwrap returns trust.ErrUntrusted.
func (e *NoSignerError) Unwrap() error { return trust.ErrUntrusted }

// SignatureMissingError means the signature file could not be read. It
// wraps trust.ErrUntrusted and the read error.
type SignatureMissingError struct {
	Source, Path string
	Err          error
}

func (e *SignatureMissingError) Error() string {
	return fmt.Sprintf("no signature for %s at %s (%v); get the signature from the publisher and give it in TrustOptions.Signature or TrustOptions.SignatureFile", e.Source, e.Path, pathCause(e.Err))
}

// Unwrap returns trust.ErrUntrusted and the read error.
func (e *SignatureMissingError) Unwrap() []error { return []error{trust.ErrUntrusted, e.Err} }

// pathCause is the cause inside an *os.PathError (the path is named
// already).
func pathCause(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// SignerChangeError refuses a new version signed by someone other than
// the signer of the plugin's latest trusted version, unless
// TrustOptions.AllowSignerChange. It wraps trust.ErrUntrusted.
type SignerChangeError struct {
	// Name and Version are the plugin and its latest trusted version.
	Name, Version string
	// Trusted signed that version; Offered signed this bundle (nil:
	// unsigned).
	Trusted, Offered *SignerRef
}

func (e *SignerChangeError) Error() string {
	return fmt.Sprintf("%s %s was trusted from %s, but this bundle comes from %s; if the publisher really changed signers, trust it with TrustOptions.AllowSignerChange",
		e.Name, e.Version, e.Trusted, e.Offered)
}

// Unwrap returns trust.ErrUntrusted.
func (e *SignerChangeError) Unwrap() error { return trust.ErrUntrusted }

// SourceChangeError refuses an unsigned bundle whose plugin's latest
// trusted version, unsigned too, came from another source
// (TrustOptions.SameSource). It wraps trust.ErrUntrusted.
type SourceChangeError struct {
	// Name and Version are the plugin and its latest trusted version.
	Name, Version string
	// Trusted is the source of that version; Offered this bundle's.
	Trusted, Offered string
}

func (e *SourceChangeError) Error() string {
	return fmt.Sprintf("%s@%s is installed unsigned from %s, and this bundle of the same name comes from %s, another source; berth does not let one unsigned source replace another's plugin. If you mean to replace it, remove the installed plugin first (berth revoke %s), then install again",
		e.Name, e.Version, e.Trusted, e.Offered, e.Name)
}

// Unwrap returns trust.ErrUntrusted.
func (e *SourceChangeError) Unwrap() error { return trust.ErrUntrusted }
