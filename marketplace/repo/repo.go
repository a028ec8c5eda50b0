package repo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofrs/flock"
	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/internal/textio"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// Files of a catalog repository directory (docs/marketplace.md):
//
//	DIR/1.root.json, 2.root.json…   every root version (clients walk rotations)
//	DIR/root.json                   the current root
//	DIR/timestamp.json              the only file replaced in place; written last
//	DIR/N.snapshot.json             snapshot version N
//	DIR/N.targets.json              targets version N
//	DIR/targets/<sha256>.catalog.json   the catalog target, by content
//	DIR/bundles/<name>/<version>/…  archives and signatures copied in
//	DIR/catalog.json                the working copy the curator edits
//	DIR/berth-catalog.json          the settings: name and expiries
const (
	settingsFile = "berth-catalog.json"
	workingFile  = "catalog.json"
	repoLockFile = ".berth-catalog.lock"
)

// Expiries are how long each role's metadata is valid after it is signed.
type Expiries struct {
	Timestamp, Snapshot, Targets, Root time.Duration
}

// DefaultExpiries: timestamp 1 day, snapshot 7 days, targets 90 days,
// root 1 year.
var DefaultExpiries = Expiries{
	Timestamp: 24 * time.Hour,
	Snapshot:  7 * 24 * time.Hour,
	Targets:   90 * 24 * time.Hour,
	Root:      365 * 24 * time.Hour,
}

func (e Expiries) withDefaults() Expiries {
	for _, f := range []struct{ v, d *time.Duration }{
		{&e.Timestamp, &DefaultExpiries.Timestamp}, {&e.Snapshot, &DefaultExpiries.Snapshot},
		{&e.Targets, &DefaultExpiries.Targets}, {&e.Root, &DefaultExpiries.Root},
	} {
		if *f.v <= 0 {
			*f.v = *f.d
		}
	}
	return e
}

// settings is DIR/berth-catalog.json: what init chose, used by every
// later command.
type settings struct {
	Name    string          `json:"name,omitempty"`
	Expires settingsExpires `json:"expires"`
}

type settingsExpires struct {
	Timestamp string `json:"timestamp"`
	Snapshot  string `json:"snapshot"`
	Targets   string `json:"targets"`
	Root      string `json:"root"`
}

// Options tune Init and Open. A nil *Options
// means the defaults.
type Options struct {
	// Name is the catalog's name, written into the catalog (init only).
	Name string
	// Expiries chosen at init; zero fields take DefaultExpiries. Later
	// commands use what init kept in DIR.
	Expiries Expiries
	// Now is the clock for expiries and release times; nil means time.Now.
	Now func() time.Time
}

// Repository is a catalog repository on the curator's side: a directory
// of static TUF files that any web server, or a plain directory, can
// serve, and the directory of role keys that signs it. Every change
// publishes a new consistent version: new files are written first, the
// timestamp last, so a reader of DIR sees the old version or the new one,
// never a mix. A Repository takes a file lock in DIR for every change, so
// concurrent commands on one DIR are serialized.
type Repository struct {
	dir, keyDir string
	name        string
	exp         Expiries
	now         func() time.Time
}

// InitResult says what Init made.
type InitResult struct {
	// RootPath is DIR/1.root.json, the initial root that clients pin.
	RootPath string
	// RootSHA256 is the hex sha256 of that file, for --root-sha256.
	RootSHA256 string
	// Keys are the paths of the four role keys.
	Keys map[string]string
}

// Init creates a catalog repository in dir and its role keys in
// keyDir: one Ed25519 key per top-level role (threshold 1), in files of
// mode 0600 in a directory of mode 0700. keyDir may not be dir or inside
// it (the keys would be served with the catalog). The first version holds
// an empty catalog.
func Init(ctx context.Context, dir, keyDir string, opts *Options) (*InitResult, error) {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Name != "" && !bundle.IsValidName(o.Name) {
		return nil, fmt.Errorf("%q is not a catalog name: lower-case letters, digits and '-'", o.Name)
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	exp := o.Expiries.withDefaults()
	absDir, err := resolvePath(dir)
	if err != nil {
		return nil, err
	}
	absKeys, err := resolvePath(keyDir)
	if err != nil {
		return nil, err
	}
	if within(absKeys, absDir) {
		return nil, fmt.Errorf("the key directory %s is inside the catalog directory %s, so the private keys would be published with the catalog; keep them in a directory outside it, like ~/.berth-catalog-keys/NAME", keyDir, dir)
	}
	for _, f := range []string{"root.json", "1.root.json", "timestamp.json", settingsFile, workingFile} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			return nil, fmt.Errorf("%s already holds a catalog (%s exists); berth catalog init makes a new one in an empty directory", dir, f)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := ensurePrivateDir(keyDir); err != nil {
		return nil, err
	}
	for _, role := range roleNames {
		if _, err := os.Lstat(keyPath(keyDir, role)); err == nil {
			return nil, fmt.Errorf("%s exists already; berth never overwrites a key: use an empty key directory", keyPath(keyDir, role))
		}
	}
	unlock, err := lockDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	keys, err := generateKeys(keyDir)
	if err != nil {
		return nil, err
	}
	t := now().UTC().Truncate(time.Second)
	root := metadata.Root(t.Add(exp.Root))
	for _, role := range roleNames {
		if err := root.Signed.AddKey(keys[role].key, role); err != nil {
			return nil, err
		}
	}
	if _, err := root.Sign(keys[metadata.ROOT].signer); err != nil {
		return nil, err
	}
	rootData, err := root.ToBytes(true)
	if err != nil {
		return nil, err
	}
	st := settings{Name: o.Name, Expires: settingsExpires{
		Timestamp: exp.Timestamp.String(), Snapshot: exp.Snapshot.String(), Targets: exp.Targets.String(), Root: exp.Root.String(),
	}}
	sdata, _ := json.MarshalIndent(st, "", "  ")
	if err := writeServed(dir, settingsFile, append(sdata, '\n')); err != nil {
		return nil, err
	}
	cat := &catalog.Catalog{CatalogVersion: catalog.FormatVersion, Name: o.Name, Plugins: []*catalog.Plugin{}}
	data := cat.Marshal()
	if err := writeServed(dir, workingFile, data); err != nil {
		return nil, err
	}
	// The root first: nothing else can be verified without it.
	if err := writeServed(dir, "1.root.json", rootData); err != nil {
		return nil, err
	}
	if err := writeServed(dir, "root.json", rootData); err != nil {
		return nil, err
	}
	r := &Repository{dir: dir, keyDir: keyDir, name: o.Name, exp: exp, now: now}
	pub := &published{root: root, rootData: rootData}
	if _, err := r.publish(pub, keys, compact(data), true); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(rootData)
	res := &InitResult{RootPath: filepath.Join(dir, "1.root.json"), RootSHA256: hex.EncodeToString(sum[:]), Keys: map[string]string{}}
	for _, role := range roleNames {
		res.Keys[role] = keyPath(keyDir, role)
	}
	return res, nil
}

// NotCatalogError is Open given a directory Dir that has no
// File (the catalog's settings): it is not a catalog repository;
// Init makes one.
type NotCatalogError struct {
	Dir, File string
}

func (e *NotCatalogError) Error() string {
	return fmt.Sprintf("%s is not a berth catalog (it has no %s); make one with InitRepository and its role keys", e.Dir, e.File)
}

// ReadmeError is AddVersion refusing the README.md of bundle Source: Size
// bytes, over MaxReadme, or not UTF-8 text (NotUTF8). The fix is a
// shorter README or AddRequest.OmitReadme.
type ReadmeError struct {
	Source  string
	Size    int64
	NotUTF8 bool
}

func (e *ReadmeError) Error() string {
	if e.NotUTF8 {
		return fmt.Sprintf("%s: README.md is not UTF-8 text; convert it, or leave it out (OmitReadme)", e.Source)
	}
	return fmt.Sprintf("%s: README.md is %d bytes, over the %d a catalog carries; shorten it, or leave it out (OmitReadme)", e.Source, e.Size, catalog.MaxReadme)
}

// Open opens the catalog repository in dir, whose role keys are
// in keyDir. Keys are read only when a command needs them: refresh needs
// only the snapshot and timestamp keys, so the root and targets keys can
// stay offline.
func Open(dir, keyDir string, opts *Options) (*Repository, error) {
	now := time.Now
	if opts != nil && opts.Now != nil {
		now = opts.Now
	}
	data, err := os.ReadFile(filepath.Join(dir, settingsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &NotCatalogError{Dir: dir, File: settingsFile}
	}
	if err != nil {
		return nil, err
	}
	var st settings
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("%s is damaged (%v); it holds the catalog's name and expiries as berth catalog init wrote them", filepath.Join(dir, settingsFile), err)
	}
	r := &Repository{dir: dir, keyDir: keyDir, name: st.Name, now: now}
	for _, f := range []struct {
		s string
		d *time.Duration
	}{{st.Expires.Timestamp, &r.exp.Timestamp}, {st.Expires.Snapshot, &r.exp.Snapshot}, {st.Expires.Targets, &r.exp.Targets}, {st.Expires.Root, &r.exp.Root}} {
		d, err := ParseDuration(f.s)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", filepath.Join(dir, settingsFile), err)
		}
		*f.d = d
	}
	if keyDir != "" {
		absDir, err1 := resolvePath(dir)
		absKeys, err2 := resolvePath(keyDir)
		if err1 == nil && err2 == nil && within(absKeys, absDir) {
			return nil, fmt.Errorf("the key directory %s is inside the catalog directory %s, so the private keys would be published with the catalog; move them out", keyDir, dir)
		}
	}
	return r, nil
}

// Expiries returns the expiries kept in DIR.
func (r *Repository) Expiries() Expiries { return r.exp }

// Dir returns the repository directory.
func (r *Repository) Dir() string { return r.dir }

// published is the repository's current version, read from DIR and
// checked against its own root.
type published struct {
	root      *metadata.Metadata[metadata.RootType]
	rootData  []byte
	timestamp *metadata.Metadata[metadata.TimestampType]
	snapshot  *metadata.Metadata[metadata.SnapshotType]
	snapData  []byte
	targets   *metadata.Metadata[metadata.TargetsType]
	targData  []byte
	catalog   []byte
}

// load reads the current version of DIR and checks every signature and
// link of it (timestamp → snapshot → targets → catalog), so a command
// never re-signs files someone swapped in DIR.
func (r *Repository) load() (*published, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("the catalog in %s is inconsistent: %s; restore DIR from the curator's copy (berth never re-signs files it did not write)", r.dir, fmt.Sprintf(format, args...))
	}
	p := &published{}
	var err error
	if p.rootData, err = os.ReadFile(filepath.Join(r.dir, "root.json")); err != nil {
		return nil, bad("%v", err)
	}
	if p.root, err = metadata.Root().FromBytes(p.rootData); err != nil {
		return nil, bad("root.json: %v", err)
	}
	if err := p.root.VerifyDelegate(metadata.ROOT, p.root); err != nil {
		return nil, bad("root.json is not signed by its own root keys: %v", err)
	}
	tsData, err := os.ReadFile(filepath.Join(r.dir, "timestamp.json"))
	if err != nil {
		return nil, bad("%v", err)
	}
	if p.timestamp, err = metadata.Timestamp().FromBytes(tsData); err != nil {
		return nil, bad("timestamp.json: %v", err)
	}
	if err := p.root.VerifyDelegate(metadata.TIMESTAMP, p.timestamp); err != nil {
		return nil, bad("timestamp.json: %v", err)
	}
	sm := p.timestamp.Signed.Meta["snapshot.json"]
	if sm == nil {
		return nil, bad("timestamp.json names no snapshot")
	}
	snapName := fmt.Sprintf("%d.snapshot.json", sm.Version)
	if p.snapData, err = os.ReadFile(filepath.Join(r.dir, snapName)); err != nil {
		return nil, bad("%v", err)
	}
	if err := sm.VerifyLengthHashes(p.snapData); err != nil {
		return nil, bad("%s does not match timestamp.json: %v", snapName, err)
	}
	if p.snapshot, err = metadata.Snapshot().FromBytes(p.snapData); err != nil {
		return nil, bad("%s: %v", snapName, err)
	}
	if err := p.root.VerifyDelegate(metadata.SNAPSHOT, p.snapshot); err != nil {
		return nil, bad("%s: %v", snapName, err)
	}
	tm := p.snapshot.Signed.Meta["targets.json"]
	if tm == nil {
		return nil, bad("%s names no targets", snapName)
	}
	targName := fmt.Sprintf("%d.targets.json", tm.Version)
	if p.targData, err = os.ReadFile(filepath.Join(r.dir, targName)); err != nil {
		return nil, bad("%v", err)
	}
	if err := tm.VerifyLengthHashes(p.targData); err != nil {
		return nil, bad("%s does not match %s: %v", targName, snapName, err)
	}
	if p.targets, err = metadata.Targets().FromBytes(p.targData); err != nil {
		return nil, bad("%s: %v", targName, err)
	}
	if err := p.root.VerifyDelegate(metadata.TARGETS, p.targets); err != nil {
		return nil, bad("%s: %v", targName, err)
	}
	tf := p.targets.Signed.Targets[catalog.TargetName]
	if tf == nil {
		return nil, bad("%s has no %s target", targName, catalog.TargetName)
	}
	cpath := filepath.Join(r.dir, targetFile(tf))
	if p.catalog, err = os.ReadFile(cpath); err != nil {
		return nil, bad("%v", err)
	}
	if err := tf.VerifyLengthHashes(p.catalog); err != nil {
		return nil, bad("%s does not match %s: %v", cpath, targName, err)
	}
	return p, nil
}

// targetFile is the consistent-snapshot path of a target: targets/<sha256>.<name>.
func targetFile(tf *metadata.TargetFiles) string {
	return filepath.Join("targets", hex.EncodeToString(tf.Hashes["sha256"])+"."+catalog.TargetName)
}

// PublishResult describes a newly published version.
type PublishResult struct {
	// TargetsVersion is the version of the targets metadata now
	// published.
	TargetsVersion int64 `json:"targetsVersion"`
	// SnapshotVersion is the version of the snapshot now published.
	SnapshotVersion int64 `json:"snapshotVersion"`
	// TimestampVersion is the version of the timestamp now published.
	TimestampVersion int64 `json:"timestampVersion"`
	// TimestampExpires is when the timestamp expires (berth catalog
	// refresh renews it).
	TimestampExpires time.Time `json:"timestampExpires"`
	// SnapshotExpires is when the snapshot expires.
	SnapshotExpires time.Time `json:"snapshotExpires"`
	// TargetsExpires is when the targets metadata expires (berth catalog
	// sign renews it).
	TargetsExpires time.Time `json:"targetsExpires"`
	// RootExpires is when the root expires.
	RootExpires time.Time `json:"rootExpires"`
	// SnapshotSigned is true when the snapshot was re-signed.
	SnapshotSigned bool `json:"snapshotSigned"`
	// Warnings name metadata that expires soon and the command that renews it.
	Warnings []string `json:"warnings,omitempty"`
}

// publish writes a new version of the repository: a new targets version
// with catalog as its one target (when catalog is non-nil), a new snapshot
// (when the targets changed or resignSnapshot), and always a new
// timestamp. Files are written in an order that keeps every published
// version whole: the target, then targets, then snapshot (all new files,
// never referenced yet), and the timestamp, which makes them current,
// last. Each write is atomic (temp file, fsync, rename).
func (r *Repository) publish(p *published, keys map[string]*roleKey, catalogJSON []byte, resignSnapshot bool) (*PublishResult, error) {
	t := r.now().UTC().Truncate(time.Second)
	res := &PublishResult{RootExpires: p.root.Signed.Expires}
	targData := p.targData
	targets := p.targets
	if catalogJSON != nil {
		var version int64 = 1
		if p.targets != nil {
			version = p.targets.Signed.Version + 1
		}
		tf, err := metadata.TargetFile().FromBytes(catalog.TargetName, catalogJSON, "sha256")
		if err != nil {
			return nil, err
		}
		if err := writeServed(r.dir, targetFile(tf), catalogJSON); err != nil {
			return nil, err
		}
		targets = metadata.Targets(t.Add(r.exp.Targets))
		targets.Signed.Version = version
		targets.Signed.Targets[catalog.TargetName] = tf
		if _, err := targets.Sign(keys[metadata.TARGETS].signer); err != nil {
			return nil, err
		}
		if targData, err = targets.ToBytes(true); err != nil {
			return nil, err
		}
		if err := writeServed(r.dir, fmt.Sprintf("%d.targets.json", version), targData); err != nil {
			return nil, err
		}
		resignSnapshot = true
	}
	snapData := p.snapData
	snapshot := p.snapshot
	if resignSnapshot {
		var version int64 = 1
		if p.snapshot != nil {
			version = p.snapshot.Signed.Version + 1
		}
		snapshot = metadata.Snapshot(t.Add(r.exp.Snapshot))
		snapshot.Signed.Version = version
		snapshot.Signed.Meta["targets.json"] = metaFile(targets.Signed.Version, targData)
		if _, err := snapshot.Sign(keys[metadata.SNAPSHOT].signer); err != nil {
			return nil, err
		}
		var err error
		if snapData, err = snapshot.ToBytes(true); err != nil {
			return nil, err
		}
		if err := writeServed(r.dir, fmt.Sprintf("%d.snapshot.json", version), snapData); err != nil {
			return nil, err
		}
		res.SnapshotSigned = true
	}
	var version int64 = 1
	if p.timestamp != nil {
		version = p.timestamp.Signed.Version + 1
	}
	ts := metadata.Timestamp(t.Add(r.exp.Timestamp))
	ts.Signed.Version = version
	ts.Signed.Meta["snapshot.json"] = metaFile(snapshot.Signed.Version, snapData)
	if _, err := ts.Sign(keys[metadata.TIMESTAMP].signer); err != nil {
		return nil, err
	}
	tsData, err := ts.ToBytes(true)
	if err != nil {
		return nil, err
	}
	if err := writeServed(r.dir, "timestamp.json", tsData); err != nil {
		return nil, err
	}
	res.TargetsVersion, res.TargetsExpires = targets.Signed.Version, targets.Signed.Expires
	res.SnapshotVersion, res.SnapshotExpires = snapshot.Signed.Version, snapshot.Signed.Expires
	res.TimestampVersion, res.TimestampExpires = ts.Signed.Version, ts.Signed.Expires
	res.Warnings = expiryWarnings(t, r.exp, res.TargetsExpires, res.RootExpires)
	return res, nil
}

// expiryWarnings warns about the roles whose keys stay offline: targets
// (renewed by berth catalog sign) and root.
func expiryWarnings(now time.Time, exp Expiries, targets, root time.Time) []string {
	var w []string
	soon := 2 * exp.Timestamp
	if soon < 14*24*time.Hour {
		soon = 14 * 24 * time.Hour
	}
	if targets.Sub(now) < soon {
		w = append(w, fmt.Sprintf("the targets metadata expires at %s; clients refuse the catalog after that: run berth catalog sign with the targets key before then", targets.Format(time.RFC3339)))
	}
	if root.Sub(now) < 30*24*time.Hour {
		w = append(w, fmt.Sprintf("the root metadata expires at %s; clients refuse the catalog after that, and berth cannot renew a root yet: make a new catalog before then", root.Format(time.RFC3339)))
	}
	return w
}

func metaFile(version int64, data []byte) *metadata.MetaFiles {
	m := metadata.MetaFile(version)
	sum := sha256.Sum256(data)
	m.Length = int64(len(data))
	m.Hashes = metadata.Hashes{"sha256": sum[:]}
	return m
}

// keysFor loads the keys of the given roles.
func (r *Repository) keysFor(root *metadata.RootType, roles ...string) (map[string]*roleKey, error) {
	if r.keyDir == "" {
		return nil, fmt.Errorf("signing the catalog needs its key directory, and none was given")
	}
	keys := map[string]*roleKey{}
	for _, role := range roles {
		k, err := loadKey(r.keyDir, role, root)
		if err != nil {
			return nil, err
		}
		keys[role] = k
	}
	return keys, nil
}

// AddRequest is what Repository.Add publishes.
type AddRequest struct {
	// Source is the bundle: a directory or a .tar.gz/.tgz/.zip archive.
	Source string
	// BundleOptions are the limits for opening it; nil means defaults.
	BundleOptions *bundle.Options
	// Signature is the bundle's Sigstore signature (JSON).
	Signature []byte
	// Verifier holds the signer policy of the berth that runs the command;
	// the signature must verify against it.
	Verifier *trust.Verifier
	// URL is the absolute https URL where the archive Source will be
	// served. "" copies the archive (or, for a directory, a .tar.gz packed
	// from it) into DIR/bundles/ and lists it relative to the catalog.
	URL string
	// Tier sets the plugin's tier; "" keeps it (community for a new one).
	Tier catalog.Tier
	// Tags replace the plugin's tags when non-nil.
	Tags []string
	// Icon is a PNG image for the plugin (CheckIcon); nil keeps the one
	// it has.
	Icon []byte
	// OmitReadme leaves the bundle's README.md out. The plugin's README is
	// that of its highest version: adding a new highest version replaces
	// it (with none, when OmitReadme is set or the bundle has none).
	OmitReadme bool
}

// AddResult says what Repository.Add did.
type AddResult struct {
	Plugin, Version, Digest string
	Signer                  *catalog.Signer
	SignerRef               *store.SignerRef
	// NewPlugin is true when the plugin was not in the catalog before.
	NewPlugin bool
	// Already is true when this version with this digest was in the
	// catalog already; nothing was published.
	Already bool
	// Archive is where the archive was copied in DIR ("" with a URL).
	Archive string
	Publish *PublishResult
}

// ErrVersionChanged marks an attempt to publish a version that the
// catalog already lists with another digest: versions are immutable. The
// error also wraps trust.ErrUntrusted (exit 4), as berth trust does.
var ErrVersionChanged = errors.New("published versions are immutable")

// Add validates the bundle, verifies its signature against the signer
// policy, checks the signer against the plugin's allowed signers (and
// records it the first time), computes the digest and review summary,
// copies the archive and signature into DIR (archive only without a URL),
// and publishes a new version of the catalog.
func (r *Repository) Add(ctx context.Context, req AddRequest) (*AddResult, error) {
	if req.Verifier == nil {
		panic("marketplace: AddRequest.Verifier is nil")
	}
	switch req.Tier {
	case "", catalog.TierOfficial, catalog.TierVerified, catalog.TierCommunity:
	default:
		return nil, fmt.Errorf("tier %q: write official, verified or community", req.Tier)
	}
	for _, t := range req.Tags {
		if !catalog.ValidTag(t) {
			return nil, fmt.Errorf("%q is not a tag: lower-case letters, digits and '-', up to 32 characters", t)
		}
	}
	if req.URL != "" {
		if err := catalog.CheckLocation(req.URL); err != nil || !strings.HasPrefix(strings.ToLower(req.URL), "https://") {
			return nil, fmt.Errorf("the archive's URL %q is not an absolute https URL; give the URL where the archive will be served", req.URL)
		}
	}
	if req.Icon != nil {
		if err := catalog.CheckIcon(req.Icon); err != nil {
			return nil, err
		}
	}
	pub, unlock, err := r.lockLoad(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cat, err := r.working()
	if err != nil {
		return nil, err
	}
	b, err := bundle.Open(ctx, req.Source, req.BundleOptions)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	isDir := b.Kind == bundle.KindDirectory
	if req.URL != "" && isDir {
		return nil, fmt.Errorf("a URL names where an archive is served, but %s is a directory: give the archive file itself", req.Source)
	}
	m := b.Manifest
	res, err := req.Verifier.VerifyPlugin(ctx, m.Name, b.Listing().Bytes(), req.Signature)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", req.Source, err)
	}
	ref := signerRefOf(res)
	out := &AddResult{Plugin: m.Name, Version: m.Version, Digest: b.Digest, Signer: catalog.SignerFor(res), SignerRef: ref}
	p := cat.Plugin(m.Name)
	if p == nil {
		out.NewPlugin = true
		p = &catalog.Plugin{Name: m.Name, Description: m.Description, Tier: catalog.TierCommunity, Homepage: m.Homepage, License: m.License, Signers: []*catalog.Signer{out.Signer}, Versions: []*catalog.Version{}}
		if m.Publisher != nil {
			p.Publisher = &catalog.Publisher{Name: m.Publisher.Name, URL: m.Publisher.URL}
		}
		cat.Plugins = append(cat.Plugins, p)
	} else {
		allowed := false
		var names []string
		for _, s := range p.Signers {
			names = append(names, s.String())
			allowed = allowed || s.Matches(ref)
		}
		if !allowed {
			return nil, fmt.Errorf("%w: %s is signed by %s, but this catalog allows only %s to publish %s; if its publisher really changed signers, add the new one to the plugin's \"signers\" in %s and run berth catalog sign",
				trust.ErrUntrusted, req.Source, ref, strings.Join(names, ", "), m.Name, filepath.Join(r.dir, workingFile))
		}
	}
	if v := p.Version(m.Version); v != nil {
		if v.Digest == b.Digest {
			if isPublished(pub.catalog, m.Name, m.Version, b.Digest) {
				out.Already = true
				return out, nil
			}
			// The working copy has it but no published version does: an
			// add that stopped before publishing. Publish it now.
			keys, err := r.keysFor(&pub.root.Signed, metadata.TARGETS, metadata.SNAPSHOT, metadata.TIMESTAMP)
			if err != nil {
				return nil, err
			}
			if out.Publish, err = r.publish(pub, keys, compact(cat.Marshal()), true); err != nil {
				return nil, err
			}
			return out, nil
		}
		return nil, fmt.Errorf("%w: %s %s is already in the catalog with digest %s, and this bundle has %s; %w, so publish the change as a new version", trust.ErrUntrusted, m.Name, m.Version, v.Digest, b.Digest, ErrVersionChanged)
	}
	if req.Tier != "" {
		p.Tier = req.Tier
	}
	if req.Tags != nil {
		p.Tags = append([]string(nil), req.Tags...)
	}
	if req.Icon != nil {
		p.Icon = base64.StdEncoding.EncodeToString(req.Icon)
	}
	if isHighest(p, m.Version) {
		p.Readme = ""
		if !req.OmitReadme {
			if p.Readme, err = bundleReadme(b); err != nil {
				return nil, err
			}
		}
	}
	keys, err := r.keysFor(&pub.root.Signed, metadata.TARGETS, metadata.SNAPSHOT, metadata.TIMESTAMP)
	if err != nil {
		return nil, err
	}
	format := string(b.Kind)
	if isDir {
		format = "tar.gz"
	}
	v := &catalog.Version{
		Version:  m.Version,
		Digest:   b.Digest,
		Released: r.now().UTC().Truncate(time.Second),
		Status:   catalog.StatusActive,
		Summary:  catalog.NewSummary(review.New(b)),
	}
	if m.Requires != nil {
		v.RequiresBerth = m.Requires.Berth
	}
	rel := filepath.ToSlash(filepath.Join("bundles", m.Name, m.Version, m.Name+"-"+m.Version+"."+format))
	// The archive: packed from a directory, or the archive file as given.
	var archive []byte
	if isDir {
		var buf bytes.Buffer
		if err := packTarGz(ctx, b, &buf); err != nil {
			return nil, err
		}
		archive = buf.Bytes()
		if err := checkPacked(ctx, r.dir, archive, b.Digest, req.BundleOptions); err != nil {
			return nil, err
		}
	} else if archive, err = os.ReadFile(req.Source); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(archive)
	v.Archive = catalog.Archive{Format: format, Size: int64(len(archive)), SHA256: "sha256:" + hex.EncodeToString(sum[:])}
	if req.URL != "" {
		v.URLs = []string{req.URL}
	} else {
		v.URLs = []string{rel}
		out.Archive = filepath.Join(r.dir, filepath.FromSlash(rel))
	}
	v.SignatureURL = rel + ".sigstore.json"
	p.Versions = append(p.Versions, v)
	cat.Sort()
	if ps := catalog.CheckPlugin(p, "plugin "+p.Name); catalog.HasErrors(ps) {
		return nil, fmt.Errorf("the new entry of %s breaks catalog rules:\n  %s", p.Name, joinProblems(ps))
	}
	if req.URL == "" {
		if err := writeServed(r.dir, rel, archive); err != nil {
			return nil, err
		}
	}
	if err := writeServed(r.dir, v.SignatureURL, req.Signature); err != nil {
		return nil, err
	}
	data := cat.Marshal()
	if err := writeServed(r.dir, workingFile, data); err != nil {
		return nil, err
	}
	if out.Publish, err = r.publish(pub, keys, compact(data), true); err != nil {
		return nil, err
	}
	return out, nil
}

// isHighest reports whether version is above every version p lists.
func isHighest(p *catalog.Plugin, version string) bool {
	for _, v := range p.Versions {
		if !bundle.VersionLess(v.Version, version) {
			return false
		}
	}
	return true
}

// bundleReadme reads the bundle's README.md, a regular file of at most
// MaxReadme bytes whose content is the one the listing hashed; "" when it
// has none.
func bundleReadme(b *bundle.Bundle) (string, error) {
	e, ok := b.Listing().Lookup("README.md")
	if !ok || e.Mode == bundle.ModeSymlink {
		return "", nil
	}
	if e.Size > catalog.MaxReadme {
		return "", &ReadmeError{Source: b.Source, Size: e.Size}
	}
	data, err := textio.ReadFileLimited(filepath.Join(b.Dir, "README.md"), catalog.MaxReadme)
	if err != nil {
		return "", err
	}
	if sha256.Sum256(data) != e.SHA256 {
		return "", fmt.Errorf("%s: README.md changed while berth read the bundle; run the command again", b.Source)
	}
	if !utf8.Valid(data) {
		return "", &ReadmeError{Source: b.Source, NotUTF8: true}
	}
	return string(data), nil
}

// isPublished reports whether the published catalog lists name@version
// with digest.
func isPublished(catalogJSON []byte, name, version, digest string) bool {
	c, _, err := catalog.Parse(catalogJSON)
	if err != nil {
		return false
	}
	p := c.Plugin(name)
	if p == nil {
		return false
	}
	v := p.Version(version)
	return v != nil && v.Digest == digest
}

// checkPacked re-opens a packed archive and checks that it has the digest
// of the directory it was packed from.
func checkPacked(ctx context.Context, dir string, archive []byte, digest string, opts *bundle.Options) error {
	tmp, err := os.CreateTemp(dir, ".tmp-pack-*.tar.gz")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(archive); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	b, err := bundle.Open(ctx, tmp.Name(), opts)
	if err != nil {
		return fmt.Errorf("the archive packed from the bundle does not open: %w", err)
	}
	defer b.Close()
	if b.Digest != digest {
		return fmt.Errorf("the archive packed from the bundle has digest %s, not %s; the bundle changed while it was packed", b.Digest, digest)
	}
	return nil
}

func joinProblems(ps []*catalog.Problem) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.String())
	}
	return strings.Join(s, "\n  ")
}

// SetStatus sets the status of name@version and publishes the catalog.
// reason is required for deprecated, yanked and revoked; replacement is
// allowed only for deprecated.
func (r *Repository) SetStatus(ctx context.Context, name, version string, status catalog.Status, reason, replacement string) (*PublishResult, error) {
	switch status {
	case catalog.StatusActive:
		if reason != "" || replacement != "" {
			return nil, fmt.Errorf("an active version has no reason or replacement")
		}
	case catalog.StatusDeprecated, catalog.StatusYanked, catalog.StatusRevoked:
		if strings.TrimSpace(reason) == "" {
			return nil, fmt.Errorf("a %s version needs a reason: users see it when they look at the plugin", status)
		}
		if replacement != "" && status != catalog.StatusDeprecated {
			return nil, fmt.Errorf("only a deprecated version names a replacement")
		}
		if replacement != "" && !bundle.IsValidName(replacement) {
			return nil, fmt.Errorf("the replacement %q is not a plugin name", replacement)
		}
	default:
		return nil, fmt.Errorf("status %q: write active, deprecated, yanked or revoked", status)
	}
	pub, unlock, err := r.lockLoad(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cat, err := r.working()
	if err != nil {
		return nil, err
	}
	p := cat.Plugin(name)
	if p == nil {
		return nil, fmt.Errorf("the catalog has no plugin %q (berth catalog lint %s lists what it has)", name, r.dir)
	}
	v := p.Version(version)
	if v == nil {
		var vs []string
		for _, x := range p.Versions {
			vs = append(vs, x.Version)
		}
		return nil, fmt.Errorf("the catalog has no version %s of %s (it has %s)", version, name, strings.Join(vs, ", "))
	}
	keys, err := r.keysFor(&pub.root.Signed, metadata.TARGETS, metadata.SNAPSHOT, metadata.TIMESTAMP)
	if err != nil {
		return nil, err
	}
	v.Status, v.Reason, v.Replacement = status, reason, replacement
	data := cat.Marshal()
	if err := writeServed(r.dir, workingFile, data); err != nil {
		return nil, err
	}
	return r.publish(pub, keys, compact(data), true)
}

// Refresh re-signs the timestamp, and the snapshot when it is due (less
// than half of its lifetime left, or expiring before the new timestamp),
// as a curator's cron job does. It needs only the timestamp key, and the
// snapshot key when the snapshot is due.
func (r *Repository) Refresh(ctx context.Context) (*PublishResult, error) {
	pub, unlock, err := r.lockLoad(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	now := r.now()
	left := pub.snapshot.Signed.Expires.Sub(now)
	due := left < r.exp.Snapshot/2 || pub.snapshot.Signed.Expires.Before(now.Add(r.exp.Timestamp))
	roles := []string{metadata.TIMESTAMP}
	if due {
		roles = append(roles, metadata.SNAPSHOT)
	}
	keys, err := r.keysFor(&pub.root.Signed, roles...)
	if err != nil {
		return nil, err
	}
	return r.publish(pub, keys, nil, due)
}

// Sign publishes the working copy DIR/catalog.json after a curator edited
// it by hand: it must decode strictly and pass every catalog rule (Lint);
// contextTokens are recomputed from the listed tools. berth never trusts a
// catalog's review summary because it was signed: install compares it
// with the real bundle.
func (r *Repository) Sign(ctx context.Context) (*PublishResult, error) {
	pub, unlock, err := r.lockLoad(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cat, err := r.readWorking(true)
	if err != nil {
		return nil, err
	}
	keys, err := r.keysFor(&pub.root.Signed, metadata.TARGETS, metadata.SNAPSHOT, metadata.TIMESTAMP)
	if err != nil {
		return nil, err
	}
	data := cat.Marshal()
	if err := writeServed(r.dir, workingFile, data); err != nil {
		return nil, err
	}
	return r.publish(pub, keys, compact(data), true)
}

// working reads the working copy, which must be valid.
func (r *Repository) working() (*catalog.Catalog, error) { return r.readWorking(false) }

// readWorking decodes DIR/catalog.json strictly (unknown fields anywhere
// are errors) and checks every entry. With normalize, contextTokens are
// recomputed first.
func (r *Repository) readWorking(normalize bool) (*catalog.Catalog, error) {
	path := filepath.Join(r.dir, workingFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cat, err := decodeStrict(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v; fix it (berth catalog lint %s says more)", path, err, r.dir)
	}
	if normalize {
		for _, p := range cat.Plugins {
			for _, v := range p.Versions {
				if v != nil {
					v.Summary.ContextTokens = catalog.EstimateTokens(v.Summary.Tools)
				}
			}
		}
	}
	if _, ps, err := catalog.Parse(cat.Marshal()); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	} else if catalog.HasErrors(ps) {
		var errs []*catalog.Problem
		for _, p := range ps {
			if !p.Warning {
				errs = append(errs, p)
			}
		}
		return nil, fmt.Errorf("%s breaks catalog rules, so berth will not publish it:\n  %s\nfix these entries and run the command again", path, joinProblems(errs))
	}
	cat.Sort()
	return cat, nil
}

// decodeStrict decodes a whole catalog document, failing on any unknown
// field, any trailing data and any catalogVersion but 1.
func decodeStrict(data []byte) (*catalog.Catalog, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	cat := &catalog.Catalog{}
	if err := dec.Decode(cat); err != nil {
		return nil, errors.New(textio.JSONError(err))
	}
	if dec.More() {
		return nil, errors.New("data after the catalog's JSON object")
	}
	if cat.CatalogVersion != catalog.FormatVersion {
		return nil, fmt.Errorf("catalogVersion is %d; write %d", cat.CatalogVersion, catalog.FormatVersion)
	}
	if cat.Plugins == nil {
		cat.Plugins = []*catalog.Plugin{}
	}
	for i, p := range cat.Plugins {
		if p == nil {
			return nil, fmt.Errorf("plugins[%d] is null", i)
		}
	}
	return cat, nil
}

// compact is the published form of a working copy: the same JSON without
// the indentation (about 40% smaller to download).
func compact(working []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, working); err != nil {
		panic("marketplace: compact of a catalog berth marshalled: " + err.Error())
	}
	return b.Bytes()
}

// writeServed writes rel inside dir atomically, with mode 0644 and
// directories of mode 0755, so a web server can serve it.
func writeServed(dir, rel string, data []byte) error {
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(p, data, 0o644)
}

// lockDir takes the repository's file lock.
// lockLoad takes the repository's lock and loads its published
// metadata; the caller calls unlock when it is done.
func (r *Repository) lockLoad(ctx context.Context) (pub *published, unlock func(), err error) {
	unlock, err = lockDir(ctx, r.dir)
	if err != nil {
		return nil, nil, err
	}
	pub, err = r.load()
	if err != nil {
		unlock()
		return nil, nil, err
	}
	return pub, unlock, nil
}

func lockDir(ctx context.Context, dir string) (func(), error) {
	fl := flock.New(filepath.Join(dir, repoLockFile))
	ok, err := fl.TryLockContext(ctx, 10*time.Millisecond)
	if err != nil {
		return nil, fmt.Errorf("waiting for the catalog lock %s: %w", filepath.Join(dir, repoLockFile), err)
	}
	if !ok {
		return nil, fmt.Errorf("could not take the catalog lock %s", filepath.Join(dir, repoLockFile))
	}
	return func() { fl.Unlock() }, nil
}

// ensurePrivateDir makes dir with mode 0700, or checks that an existing
// one is not open to others.
func ensurePrivateDir(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return os.MkdirAll(dir, 0o700)
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("the key directory %s is open to other users (mode %04o); keys must be private: chmod 700 %s, or use a new directory", dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// resolvePath returns the absolute, symlink-resolved form of p, resolving
// the longest prefix that exists.
func resolvePath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for cur := abs; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest), nil
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// within reports whether child is parent or inside it.
func within(child, parent string) bool {
	rel, err := filepath.Rel(parent, child)
	return err == nil && (rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))))
}

// signerRefOf names the signer of a verification result as trust records
// do.
func signerRefOf(res *trust.Result) *store.SignerRef {
	ref := &store.SignerRef{Kind: res.Kind, Name: res.Signer.Name}
	if res.Kind == trust.KindKey {
		ref.Fingerprint = res.KeyFingerprint
	} else {
		ref.Issuer, ref.SAN = res.Issuer, res.SAN
	}
	return ref
}
