package trust

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/atomicfile"
)

// Store is berth's on-disk state: the content-addressed snapshots, the
// trust records with their signatures, state.json and config.json. Every
// change happens under one file lock and is written atomically; a crash
// at any point leaves the old state or the new one. A Store is safe for
// concurrent use by goroutines and by processes.
type Store struct {
	paths Paths
	now   func() time.Time
	hook  func(step string)
}

// StoreOptions tune a Store. A nil *StoreOptions means the defaults.
type StoreOptions struct {
	// Now is the clock for record times; nil means time.Now.
	Now func() time.Time
	// CrashHookUnsafe, when set, is called at each named step of a state
	// change ("stage-copied", "stage-meta-written", "stage-renamed",
	// "signature-written", "record-written", "generation-bumped",
	// "revoke-state-written", "revoke-removed"). Crash tests use it to
	// kill the process there; nothing else should set it.
	CrashHookUnsafe func(step string)
}

// OpenStore returns the store under paths. It creates nothing until the
// first change.
func OpenStore(paths Paths, opts *StoreOptions) *Store {
	s := &Store{paths: paths, now: time.Now, hook: func(string) {}}
	if opts != nil {
		if opts.Now != nil {
			s.now = opts.Now
		}
		if opts.CrashHookUnsafe != nil {
			s.hook = opts.CrashHookUnsafe
		}
	}
	return s
}

// Paths returns the store's paths.
func (s *Store) Paths() Paths { return s.paths }

// SignerRef names the signer that a trust record was accepted from.
type SignerRef struct {
	Kind        SignerKind `json:"kind"`
	Name        string     `json:"name"`
	Fingerprint string     `json:"fingerprint,omitempty"`
	Issuer      string     `json:"issuer,omitempty"`
	SAN         string     `json:"san,omitempty"`
}

// identity is what signer continuity compares: the key or the certificate
// identity, not the policy entry's name.
func (r *SignerRef) identity() string {
	if r == nil {
		return "unsigned"
	}
	if r.Kind == KindKey {
		return "key " + r.Fingerprint
	}
	return "identity " + r.Issuer + " " + r.SAN
}

func (r *SignerRef) String() string {
	if r == nil {
		return "no signature (trusted unsigned by digest)"
	}
	if r.Kind == KindKey {
		return fmt.Sprintf("key %q (%s)", r.Name, r.Fingerprint)
	}
	return fmt.Sprintf("identity %q (issuer %s, SAN %s)", r.Name, r.Issuer, r.SAN)
}

// RefOf returns the signer reference of a verification result.
func RefOf(res *Result) *SignerRef {
	ref := &SignerRef{Kind: res.Kind, Name: res.Signer.Name}
	if res.Kind == KindKey {
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
		if _, err := readJSON(m, r); err != nil {
			return nil, err
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
		return semverLess(rs[i].Version, rs[j].Version)
	})
}

func semverLess(a, b string) bool {
	va, ea := semver.StrictNewVersion(a)
	vb, eb := semver.StrictNewVersion(b)
	if ea != nil || eb != nil {
		return a < b
	}
	return va.LessThan(vb)
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
		what := name
		if version != "" {
			what += "@" + version
		}
		return nil, fmt.Errorf("%s is not trusted: %w; trust it first with `berth trust SOURCE` (`berth list` shows what is trusted)", what, ErrNotTrusted)
	}
	return out, nil
}

// ErrNotTrusted means a plugin has no trust record. It wraps ErrUntrusted.
var ErrNotTrusted = fmt.Errorf("no trust record: %w", ErrUntrusted)

// TrustRequest is everything Trust records. Verification and review
// happen before; Trust re-checks the rules that need the lock.
type TrustRequest struct {
	Bundle     *bundle.Bundle
	ReviewHash string
	Source     string
	// Signature is the Sigstore bundle JSON, and Verified its result.
	// Both are nil for an unsigned bundle, which needs UnsignedUnsafe.
	Signature []byte
	Verified  *Result
	// UnsignedUnsafe records an unsigned bundle; the caller must have
	// pinned its digest.
	UnsignedUnsafe bool
	// AllowSignerChange accepts a signer other than the one that signed
	// the plugin's latest trusted version.
	AllowSignerChange bool
}

// TrustResult reports what Trust did.
type TrustResult struct {
	Record *Record
	// Already is true when this exact version and digest were trusted
	// before; nothing changed then.
	Already bool
	// Reused is true when the snapshot already existed.
	Reused bool
}

// Trust stages the bundle and writes its trust record, under the lock:
// a version already trusted with another digest is refused (versions are
// immutable), a signer other than the latest version's is refused unless
// allowed, the snapshot is staged (or reused), the signature stored, the
// record written last, and the generation bumped.
func (s *Store) Trust(ctx context.Context, req TrustRequest) (*TrustResult, error) {
	b := req.Bundle
	if b == nil || b.Manifest == nil || b.Listing() == nil {
		panic("trust: Trust needs a bundle that bundle.Open accepted")
	}
	if (req.Verified == nil) != (req.Signature == nil) || (req.Verified == nil && !req.UnsignedUnsafe) || (req.Verified != nil && req.UnsignedUnsafe) {
		panic("trust: Trust needs either Signature and Verified, or UnsignedUnsafe")
	}
	name, version := b.Manifest.Name, b.Manifest.Version
	if err := CheckRef(name, version); err != nil {
		return nil, fmt.Errorf("the bundle's manifest: %w", err)
	}
	var ref *SignerRef
	if req.Verified != nil {
		ref = RefOf(req.Verified)
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
			return nil, fmt.Errorf("%s@%s is already trusted with digest %s, and this bundle's digest is %s: %w; versions are immutable, so the publisher must release a new version (or run `berth revoke %s@%s` if you mean to replace it)",
				name, version, r.Digest, b.Digest, ErrUntrusted, name, version)
		}
	}
	if len(existing) > 0 {
		latest := existing[len(existing)-1]
		if latest.Signer.identity() != ref.identity() && !req.AllowSignerChange {
			return nil, fmt.Errorf("%s %s was trusted from %s, but this bundle comes from %s: %w; if the publisher really changed signers, run again with --allow-signer-change",
				name, latest.Version, latest.Signer, ref, ErrUntrusted)
		}
	}
	res := &TrustResult{}
	for _, r := range existing {
		if r.Version == version && r.Signer.identity() == ref.identity() {
			// Already trusted, unless the snapshot drifted: then it is
			// staged afresh below.
			if _, err := s.checkSnapshot(ctx, r.Digest); err == nil {
				res.Record, res.Already, res.Reused = r, true, true
				return res, nil
			}
		}
	}
	if res.Reused, err = s.stageLocked(ctx, b); err != nil {
		return nil, err
	}
	if req.Signature != nil {
		if err := atomicfile.WriteFile(s.paths.Signature(name, version), req.Signature, 0o600); err != nil {
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
		ReviewHash: req.ReviewHash,
		Source:     req.Source,
		TrustedAt:  s.now().UTC().Truncate(time.Second),
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
	return res, nil
}

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

// Stage copies a valid bundle into the content-addressed store, under the
// lock, and returns its path.
func (s *Store) Stage(ctx context.Context, b *bundle.Bundle) (string, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := s.stageLocked(ctx, b); err != nil {
		return "", err
	}
	return s.paths.Snapshot(b.Digest), nil
}

// stageLocked copies the bundle into a temp dir inside the store,
// re-computes the digest of the copy, makes it read-only, records its
// fingerprints and renames it into place. An intact existing snapshot of
// the same digest is reused; a damaged one is replaced.
func (s *Store) stageLocked(ctx context.Context, b *bundle.Bundle) (reused bool, err error) {
	final := s.paths.Snapshot(b.Digest)
	if _, err := os.Stat(final); err == nil {
		if _, derr := s.checkSnapshot(ctx, b.Digest); derr == nil {
			return true, nil
		}
		// Damaged: move it aside for gc and stage afresh.
		aside := filepath.Join(s.paths.Store(), ".tmp-damaged-"+filepath.Base(final)+"-"+fmt.Sprint(s.now().UnixNano()))
		if err := os.Rename(final, aside); err != nil {
			return false, fmt.Errorf("replacing the damaged snapshot %s: %w", final, err)
		}
	}
	if err := os.MkdirAll(s.paths.Store(), 0o700); err != nil {
		return false, err
	}
	tmp, err := os.MkdirTemp(s.paths.Store(), ".tmp-")
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			atomicfile.RemoveTree(tmp)
		}
	}()
	if err := copyBundle(ctx, b, tmp); err != nil {
		return false, err
	}
	s.hook("stage-copied")
	tree, ps, err := bundle.ReadTree(ctx, tmp, nil)
	if err != nil {
		return false, err
	}
	if len(ps) > 0 || tree.Listing == nil || tree.Listing.Digest() != b.Digest {
		return false, fmt.Errorf("the staged copy of %s does not match the bundle (the source changed while berth copied it?); try again", b.Source)
	}
	if err := makeReadOnly(tmp); err != nil {
		return false, err
	}
	fps, err := fingerprints(ctx, tmp)
	if err != nil {
		return false, err
	}
	meta := &snapshotMeta{Digest: b.Digest, Listing: string(tree.Listing.Bytes()), Files: fps}
	if err := atomicfile.WriteJSON(s.paths.SnapshotMeta(b.Digest), meta, 0o600); err != nil {
		return false, err
	}
	s.hook("stage-meta-written")
	if err := os.Rename(tmp, final); err != nil {
		return false, err
	}
	if err := atomicfile.SyncDir(s.paths.Store()); err != nil {
		return false, err
	}
	s.hook("stage-renamed")
	return false, nil
}

// copyBundle copies the bundle's directories, files and symlinks into dst,
// checking each file's hash against the listing while copying.
func copyBundle(ctx context.Context, b *bundle.Bundle, dst string) error {
	for _, d := range b.Tree.Dirs() {
		if err := os.MkdirAll(filepath.Join(dst, filepath.FromSlash(d)), 0o700); err != nil {
			return err
		}
	}
	buf := make([]byte, 256<<10)
	for _, e := range b.Listing().Entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		to := filepath.Join(dst, filepath.FromSlash(e.Path))
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			return err
		}
		if e.Mode == bundle.ModeSymlink {
			if err := os.Symlink(e.Target, to); err != nil {
				return err
			}
			continue
		}
		perm := os.FileMode(0o600)
		if e.Mode == bundle.ModeExec {
			perm = 0o700
		}
		if err := copyFile(filepath.Join(b.Dir, filepath.FromSlash(e.Path)), to, perm, e, buf); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string, perm os.FileMode, e bundle.Entry, buf []byte) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(out, h), io.LimitReader(in, e.Size+1), buf)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if n != e.Size || [32]byte(h.Sum(nil)) != e.SHA256 {
		return fmt.Errorf("%s changed while berth copied it; make sure nothing writes to the bundle and try again", from)
	}
	return nil
}

// Revoke removes the trust records of name (one version, or all when
// version is ""), drops their enablements and bumps the generation. The
// snapshots stay until GC.
func (s *Store) Revoke(ctx context.Context, name, version string) ([]*Record, error) {
	if err := CheckRef(name, version); err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	recs, err := s.recordsOf(name)
	if err != nil {
		return nil, err
	}
	var gone []*Record
	for _, r := range recs {
		if version == "" || r.Version == version {
			gone = append(gone, r)
		}
	}
	if len(gone) == 0 {
		what := name
		if version != "" {
			what += "@" + version
		}
		return nil, fmt.Errorf("%s is not trusted, so there is nothing to revoke: %w (`berth list` shows what is trusted)", what, ErrNotTrusted)
	}
	// The state goes first: with the enablements dropped and the
	// generation bumped, running pools stop the plugin even if berth dies
	// before the records are gone (running revoke again finishes). The
	// records follow at once, before the directory syncs, so a pool that
	// reacts to the bump finds them gone.
	st, err := s.State()
	if err != nil {
		return nil, err
	}
	for _, w := range st.Workspaces {
		if e := w.Plugins[name]; e != nil {
			for _, r := range gone {
				if e.Version == r.Version {
					delete(w.Plugins, name)
				}
			}
		}
	}
	if err := s.replaceStateLocked(st); err != nil {
		return nil, err
	}
	s.hook("revoke-state-written")
	for _, r := range gone {
		if err := os.Remove(s.paths.Record(r.Name, r.Version)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		os.Remove(s.paths.Signature(r.Name, r.Version))
	}
	s.hook("revoke-removed")
	atomicfile.SyncDir(s.paths.PluginTrustDir(name))
	os.Remove(s.paths.PluginTrustDir(name)) // only if empty
	return gone, atomicfile.SyncDir(s.paths.Root)
}

// isLeftover reports whether name is a staging temp dir (".tmp-*") or the
// temp file of an interrupted atomic write (".<base>.tmp-*").
func isLeftover(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-")
}

// GCResult lists what GC removed.
type GCResult struct {
	Snapshots []string `json:"snapshots"`
	Leftovers []string `json:"leftovers"`
}

// GC removes snapshots no trust record points to, their metadata, and
// the leftovers of interrupted staging and record writes.
func (s *Store) GC(ctx context.Context) (*GCResult, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	recs, err := s.Records()
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	for _, r := range recs {
		if h, err := ParseDigest(r.Digest); err == nil {
			keep[h] = true
		}
	}
	res := &GCResult{Snapshots: []string{}, Leftovers: []string{}}
	// Temp files of record and signature writes that a crash cut short.
	temps, err := filepath.Glob(filepath.Join(s.paths.TrustDir(), "*", ".*.tmp-*"))
	if err != nil {
		return nil, err
	}
	for _, p := range temps {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		res.Leftovers = append(res.Leftovers, p)
	}
	entries, err := os.ReadDir(s.paths.Store())
	if errors.Is(err, fs.ErrNotExist) {
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := e.Name()
		p := filepath.Join(s.paths.Store(), name)
		switch {
		case isLeftover(name):
			if err := atomicfile.RemoveTree(p); err != nil {
				return nil, err
			}
			res.Leftovers = append(res.Leftovers, p)
		case strings.HasSuffix(name, ".meta.json"):
			h := strings.TrimSuffix(name, ".meta.json")
			if !keep[h] {
				if err := os.Remove(p); err != nil {
					return nil, err
				}
				if _, err := os.Stat(filepath.Join(s.paths.Store(), h)); errors.Is(err, fs.ErrNotExist) {
					res.Leftovers = append(res.Leftovers, p)
				}
			}
		case e.IsDir() && !keep[name]:
			if err := atomicfile.RemoveTree(p); err != nil {
				return nil, err
			}
			res.Snapshots = append(res.Snapshots, "sha256:"+name)
		}
	}
	return res, atomicfile.SyncDir(s.paths.Store())
}
