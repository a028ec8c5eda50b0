package store

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/trust"
)

// verified is what record writes: a bundle that Trust opened, verified
// against the signer policy (or accepted unsigned by its pinned digest)
// and reviewed. Only Trust makes one, so a record always comes from a
// verification that Trust itself made.
type verified struct {
	bundle *bundle.Bundle
	// signature is the Sigstore bundle JSON and result its verification;
	// both nil for an unsigned bundle.
	signature []byte
	result    *trust.Result
	// reviewHash is review.Disclosure.Hash of the bundle.
	reviewHash        string
	source            string
	allowSignerChange bool
	// sameSource is TrustOptions.SameSource.
	sameSource bool
	// newSigner is a proposed signer that verified the signature: it is
	// added to the policy, scoped to the plugin, with the record.
	newSigner *trust.Signer
	// catalog is the catalog origin the record names, if any.
	catalog *CatalogOrigin
	// stageProgress is told how far staging has got; nil reports nothing.
	stageProgress StageProgress
	// fetched are the resolved trees of the runtime-fetched servers.
	fetched resolvedFetches
}

// record stages the bundle and writes its trust record, under the lock: a
// version already trusted with another digest is refused (versions are
// immutable), a signer other than the latest version's is refused unless
// allowed, the snapshot is staged (or reused), the signature stored, the
// record written last, and the generation bumped.
func (s *Store) record(ctx context.Context, v *verified) (*TrustResult, error) {
	b := v.bundle
	if b == nil || b.Manifest == nil || b.Listing() == nil {
		panic("store: record needs a bundle that bundle.Open accepted")
	}
	if (v.result == nil) != (v.signature == nil) {
		panic("store: record needs both a signature and its verification, or neither")
	}
	name, version := b.Manifest.Name, b.Manifest.Version
	if err := CheckRef(name, version); err != nil {
		return nil, fmt.Errorf("the bundle's manifest: %w", err)
	}
	digest, err := ParseDigest(b.Digest)
	if err != nil {
		return nil, fmt.Errorf("the bundle's digest: %w", err)
	}
	var ref *SignerRef
	if v.result != nil {
		ref = refOf(v.result)
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()

	existing, err := s.recordsOf(name)
	if err != nil {
		return nil, err
	}
	for _, r := range existing {
		if r.Version == version && r.Digest != b.Digest {
			return nil, Untrustedf("%s@%s is already trusted with digest %s, and this bundle's digest is %s; versions are immutable, so the publisher must release a new version (or run `berth revoke %s@%s` if you mean to replace it)",
				name, version, r.Digest, b.Digest, name, version)
		}
		if r.Version != version && SameVersion(r.Version, version) {
			return nil, Untrustedf("%s@%s is already trusted, and %s differs from it only in build metadata, which semver ignores: it is the same version with other content; versions are immutable, so the publisher must release a new version (or run `berth revoke %s@%s` if you mean to replace it)",
				name, r.Version, version, name, r.Version)
		}
	}
	if len(existing) > 0 {
		latest := existing[len(existing)-1]
		if latest.Signer.identity() != ref.identity() && !v.allowSignerChange {
			return nil, &SignerChangeError{Name: name, Version: latest.Version, Trusted: latest.Signer, Offered: ref}
		}
		if v.sameSource && ref == nil && latest.Signer == nil && SourceOrigin(latest.Source) != SourceOrigin(v.source) {
			return nil, &SourceChangeError{Name: name, Version: latest.Version, Trusted: latest.Source, Offered: v.source}
		}
	}
	if err := s.CheckNotRevoked(name, version, b.Digest); err != nil {
		return nil, err
	}
	res := &TrustResult{}
	if v.newSigner != nil {
		// The signer goes in first: a crash before the record leaves a
		// scoped signer the operator confirmed, and no record that the
		// policy could not verify.
		ns := *v.newSigner
		_, err := s.updateConfigLocked(func(c *Config) error {
			if have, ok := c.Signer(ns.Name); ok {
				if sameSigner(have, ns) {
					return ErrNoChange
				}
				return fmt.Errorf("a signer named %q was added meanwhile, and it is not %s; nothing was changed", ns.Name, ns)
			}
			c.Signers = append(c.Signers, ns)
			return nil
		})
		if err != nil {
			return nil, err
		}
		s.hook("signer-added")
		res.NewSigner = &ns
	}
	for _, r := range existing {
		// A version trusted by hand and now installed from a catalog is
		// recorded again, with its origin.
		if r.Version == version && r.Signer.identity() == ref.identity() && (v.catalog == nil || r.Catalog != nil) {
			// Already trusted, unless the snapshot drifted or the fetched
			// trees are other ones (an older berth recorded none): then it
			// is staged afresh below.
			if _, err := s.checkSnapshot(ctx, digest); err == nil && s.sameFetched(ctx, r.Fetched, v.fetched) {
				res.Record, res.Already, res.Reused = r, true, true
				res.Snapshot = s.paths.Snapshot(digest)
				return res, nil
			}
		}
	}
	if res.Reused, err = s.stageLocked(ctx, b, digest, v.stageProgress); err != nil {
		return nil, err
	}
	for _, f := range v.fetched {
		if err := s.stageTreeLocked(ctx, f.dir, f.lock.Tree); err != nil {
			return nil, fmt.Errorf("staging the fetched tree of server %s: %w", f.lock.Server, err)
		}
	}
	s.hook("fetched-staged")
	if v.signature != nil {
		if err := atomicfile.WriteFile(s.paths.Signature(name, version), v.signature, 0o600); err != nil {
			return nil, err
		}
	} else {
		os.Remove(s.paths.Signature(name, version))
	}
	s.hook("signature-written")
	rec := &Record{
		Name:       name,
		Version:    version,
		Digest:     b.Digest,
		Signer:     ref,
		Unsigned:   ref == nil,
		ReviewHash: v.reviewHash,
		Source:     v.source,
		TrustedAt:  s.now().UTC().Truncate(time.Second),
		Catalog:    v.catalog,
		Fetched:    v.fetched.locks(),
	}
	if b.Import != nil {
		rec.Pinned = b.Import.Pinned
	}
	if err := atomicfile.WriteJSON(s.paths.Record(name, version), rec, 0o600); err != nil {
		return nil, err
	}
	s.hook("record-written")
	if _, err := s.updateLocked(func(*State) error { return nil }); err != nil {
		return nil, err
	}
	s.hook("generation-bumped")
	res.Record = rec
	res.Snapshot = s.paths.Snapshot(digest)
	return res, nil
}
