package repo

import (
	"bytes"
	"context"
	"crypto/rand"
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
	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/marketplace/catalog"
)

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
	pub, cat, unlock, err := r.lockWorking(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
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
// directories of mode 0755, so a web server can serve it. It writes only
// a regular file inside dir: a symbolic link in any component of rel (a
// directory on the way or the file itself), or a special file where the
// file goes, is a *ServedPathError, and the write goes through os.Root,
// so nothing swapped in meanwhile can lead it out of dir. The new file is
// a temp file created beside rel (O_EXCL) and renamed over it.
func writeServed(dir, rel string, data []byte) (err error) {
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return fmt.Errorf("internal error: %q is not a path inside the catalog", rel)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	parts := strings.Split(rel, "/")
	for i := 1; i <= len(parts); i++ {
		p := filepath.Join(parts[:i]...)
		last := i == len(parts)
		fi, err := root.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist) && last:
		case errors.Is(err, fs.ErrNotExist):
			if err := root.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := root.Readlink(p)
			return &ServedPathError{Dir: dir, Rel: rel, Path: filepath.ToSlash(p), Problem: fmt.Sprintf("is a symbolic link (to %s)", target)}
		case !last && !fi.IsDir():
			return &ServedPathError{Dir: dir, Rel: rel, Path: filepath.ToSlash(p), Problem: "is not a directory"}
		case last && !fi.Mode().IsRegular():
			return &ServedPathError{Dir: dir, Rel: rel, Path: filepath.ToSlash(p), Problem: "is not a regular file"}
		}
	}
	name := filepath.FromSlash(rel)
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+atomicfile.DefaultTempTag+hex.EncodeToString(rnd[:]))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Join(dir, name), err)
	}
	defer func() {
		if err != nil {
			f.Close()
			root.Remove(tmp)
		}
	}()
	if err = f.Chmod(0o644); err != nil { // the umask may have cleared bits
		return err
	}
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Join(dir, name), err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Join(dir, name), err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Join(dir, name), err)
	}
	if err = root.Rename(tmp, name); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Join(dir, name), err)
	}
	return atomicfile.SyncDir(filepath.Join(dir, filepath.Dir(name)))
}

// ServedPathError refuses to write a file of a catalog's directory where
// a symbolic link, or something else than a directory or regular file,
// stands in the way: berth writes archives, signatures and metadata only
// as regular files inside the directory, never through a link that could
// lead elsewhere.
type ServedPathError struct {
	// Dir is the catalog's directory; Rel the file berth was writing;
	// Path the component in the way (slash-separated, relative to Dir).
	Dir, Rel, Path string
	Problem        string
}

func (e *ServedPathError) Error() string {
	return fmt.Sprintf("refused to write %s in the catalog directory %s: %s %s, and berth writes only regular files inside the catalog's directory, never through a link; remove it (rm %s) and run the command again",
		e.Rel, e.Dir, e.Path, e.Problem, fsx.ShellQuote(filepath.Join(e.Dir, filepath.FromSlash(e.Path))))
}
