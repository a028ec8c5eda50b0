package repo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/internal/strictjson"
	"github.com/berth-mcp/berth/marketplace/catalog"
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
	// commands use what init kept in DIR, except where Open is given a
	// non-zero field: that lifetime is used by this Repository only
	// (berth catalog refresh --timestamp-expires), and DIR keeps init's.
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
	if ps := strictjson.Decode(data, &st, strictjson.Options{FoldCase: true, Nulls: strictjson.NullAnywhere}); len(ps) > 0 {
		return nil, settingsError(filepath.Join(dir, settingsFile), ps)
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
	if opts != nil {
		for _, f := range []struct{ over, d *time.Duration }{
			{&opts.Expiries.Timestamp, &r.exp.Timestamp}, {&opts.Expiries.Snapshot, &r.exp.Snapshot},
			{&opts.Expiries.Targets, &r.exp.Targets}, {&opts.Expiries.Root, &r.exp.Root},
		} {
			if *f.over > 0 {
				*f.d = *f.over
			}
		}
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

// Name returns the catalog's name kept in DIR.
func (r *Repository) Name() string { return r.name }

// Dir returns the repository directory.
func (r *Repository) Dir() string { return r.dir }

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

// lockWorking is lockLoad that also reads the working copy, which must
// be valid.
func (r *Repository) lockWorking(ctx context.Context) (pub *published, cat *catalog.Catalog, unlock func(), err error) {
	pub, unlock, err = r.lockLoad(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	if cat, err = r.working(); err != nil {
		unlock()
		return nil, nil, nil, err
	}
	return pub, cat, unlock, nil
}

// lockDir takes the repository's file lock.
func lockDir(ctx context.Context, dir string) (func(), error) {
	p := filepath.Join(dir, repoLockFile)
	unlock, err := fsx.Lock(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("waiting for the catalog lock %s: %w", p, err)
	}
	return unlock, nil
}

// settingsError words the problems of the settings file at path: a key
// given twice (or twice but for letter case) says which and how to fix it.
func settingsError(path string, ps []strictjson.Problem) error {
	for _, p := range ps {
		if p.Kind == strictjson.DuplicateKey || p.Kind == strictjson.FoldedKey {
			return fmt.Errorf("%s is damaged (%s); berth catalog init writes each key once: keep the one you mean and delete the other", path, p)
		}
	}
	return fmt.Errorf("%s is damaged (%v); it holds the catalog's name and expiries as berth catalog init wrote them", path, &strictjson.Error{Problems: ps})
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
