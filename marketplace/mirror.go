package marketplace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/internal/textio"
	"github.com/berth-mcp/berth/trust"
)

// MirrorOptions tune Mirror. A nil *MirrorOptions means the defaults.
type MirrorOptions struct {
	// MaxSize caps each archive; 0 means DefaultMaxDownload.
	MaxSize int64
	// SourceOnly reads the catalog's source, not its mirror: dest is
	// written to where that mirror is served from (an OCI repository
	// the mirror is pushed to), and a mirror read to rewrite itself
	// would never advance.
	SourceOnly bool
}

// MirrorResult is what Mirror wrote.
type MirrorResult struct {
	Catalog string `json:"catalog"`
	// Dir is the mirror's directory, absolute.
	Dir string `json:"dir"`
	// RootSHA256 is the hex sha256 of the mirror's 1.root.json, the pin
	// its users add it with (berth marketplace add NAME DIR --root-sha256).
	RootSHA256 string `json:"rootSHA256"`
	// TargetsVersion is the version of the catalog the mirror serves.
	TargetsVersion int64 `json:"targetsVersion"`
	// Metadata, Archives and Signatures count the files written; Bytes
	// is their total size.
	Metadata   int   `json:"metadataFiles"`
	Archives   int   `json:"archives"`
	Signatures int   `json:"signatures"`
	Bytes      int64 `json:"bytes"`
	// Reused counts the archives taken, checked, from the earlier mirror
	// in Dir instead of downloaded again.
	Reused int `json:"reused"`
	// Replaced is true when Dir held an earlier mirror of the catalog.
	Replaced bool `json:"replaced"`
	// NotMirrored are the locations the catalog lists that the mirror
	// does not serve: absolute URLs (their origin serves them).
	NotMirrored []NotMirrored `json:"notMirrored"`
	// Skipped counts the catalog's entries berth skipped as malformed:
	// the mirror serves the signed catalog whole, but none of their files.
	Skipped int `json:"skipped"`
	// MirrorFailure is the update's: why the catalog's own mirror could
	// not be reached, when the canonical source was read.
	MirrorFailure string `json:"mirrorFailure,omitempty"`
}

// Files is the count of files written.
func (r *MirrorResult) Files() int { return r.Metadata + r.Archives + r.Signatures }

// NotMirrored is a location of a version that a mirror does not serve.
type NotMirrored struct {
	Plugin   string `json:"plugin"`
	Version  string `json:"version"`
	Location string `json:"location"`
	Reason   string `json:"reason"`
}

func (n NotMirrored) String() string {
	return fmt.Sprintf("%s@%s %s (%s)", n.Plugin, n.Version, n.Location, n.Reason)
}

const reasonAbsolute = "an absolute URL; the mirror serves only what is inside the catalog"

// Mirror copies the signed catalog name into the directory dest, so that
// a network without access to its source can add dest with the same root
// pin. It first runs Refresh (every refusal of an update is Mirror's),
// then reads the catalog again from the pinned root on (every root
// version, timestamp, snapshot, targets, the catalog target, each
// verified by the TUF client) and writes exactly the verified bytes under
// the names clients fetch, and every archive and signature the catalog
// lists at a relative location, each archive checked against its size
// and sha256 while it downloads. Absolute URLs are not copied: they are
// listed in NotMirrored.
//
// The mirror is built in a temp directory beside dest and renamed into
// place. dest may be missing, empty, or an earlier mirror of the same
// catalog (the same 1.root.json), which is replaced: a reader sees the
// old mirror or the new one, never a mix. Anything else in dest is
// refused, and nothing is written through a symbolic link.
//
// An unsigned source (ErrUnsignedSource) or the built-in catalog cannot
// be mirrored. A refusal is a *VerifyError (exit 4); an unreachable
// source wraps ErrNetwork.
func (c *Cache) Mirror(ctx context.Context, name, dest string, opts *MirrorOptions) (*MirrorResult, error) {
	o := MirrorOptions{}
	if opts != nil {
		o = *opts
	}
	if o.MaxSize <= 0 {
		o.MaxSize = DefaultMaxDownload
	}
	st, err := c.readState(name)
	if err != nil {
		return nil, err
	}
	if st.Kind != "" {
		what := "an unsigned " + st.Kind + " source"
		if st.Kind == KindBuiltin {
			what = "berth's built-in catalog, which every berth carries"
		}
		return nil, fmt.Errorf("%w: catalog %s is %s; berth mirrors only signed (TUF) catalogs, whose pinned root lets the mirror's users check everything it serves", ErrUnsignedSource, name, what)
	}
	d, err := openMirrorDest(dest)
	if err != nil {
		return nil, err
	}
	defer d.close()
	// What a mirror killed outright (SIGKILL, a crash) left beside dest.
	fsx.SweepTemp(d.parentDir, []string{"." + d.base + ".mirror-", "." + d.base + ".old-"}, time.Now().Add(-fsx.TempLeftoverAge))
	// A mirror is never read to rewrite itself: it would never advance.
	self := d.isMirrorOf(st) || o.SourceOnly
	ref, err := c.refresh(ctx, name, self)
	if err != nil {
		return nil, err
	}
	if st, err = c.readState(name); err != nil {
		return nil, err
	}
	srcs, err := c.sources(st)
	if err != nil {
		return nil, err
	}
	if self {
		srcs = srcs[len(srcs)-1:]
	}
	tmp, err := d.makeTemp()
	if err != nil {
		return nil, err
	}
	done := false
	defer func() {
		if !done {
			d.parent.RemoveAll(tmp)
		}
	}()
	var w *walked
	for i, s := range srcs {
		w, err = c.walk(ctx, st, s.src, filepath.Join(d.parentDir, tmp))
		if err == nil || !errors.Is(err, ErrNetwork) || ctx.Err() != nil || i == len(srcs)-1 {
			if s.mirror {
				err = fromMirror(err, st.Mirror)
			}
			break
		}
	}
	if err != nil {
		return nil, err
	}
	if err := w.sameAs(st.Name, &ref.Info); err != nil {
		return nil, err
	}
	if err := d.checkReplace(name, w.rootSHA); err != nil {
		return nil, err
	}
	res := &MirrorResult{Catalog: name, Dir: d.dir, RootSHA256: w.rootSHA, TargetsVersion: ref.TargetsVersion,
		NotMirrored: []NotMirrored{}, Skipped: len(w.problems), MirrorFailure: ref.MirrorFailure, Replaced: d.existing && d.oldRootSHA != ""}
	out, err := d.parent.OpenRoot(tmp)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	for _, rel := range sortedKeys(w.files) {
		if err := writeIn(out, rel, w.files[rel]); err != nil {
			return nil, err
		}
		res.Metadata++
		res.Bytes += int64(len(w.files[rel]))
	}
	if err := c.mirrorBundles(ctx, st, w, srcs, d, out, o.MaxSize, res); err != nil {
		return nil, err
	}
	if err := syncTree(filepath.Join(d.parentDir, tmp)); err != nil {
		return nil, err
	}
	if err := d.commit(tmp); err != nil {
		return nil, err
	}
	done = true
	return res, nil
}

// placedSource is one place a catalog is read from.
type placedSource struct {
	src    *Source
	mirror bool
}

// sources are where st is read, in order: its mirror, then its source.
func (c *Cache) sources(st *state) ([]placedSource, error) {
	src, err := recordedSource(st.Source, st.Mirror != "")
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", st.Name, err)
	}
	out := []placedSource{{src: src}}
	if st.Mirror != "" {
		m, err := recordedSource(st.Mirror, true)
		if err != nil {
			return nil, fmt.Errorf("catalog %s: its mirror: %w", st.Name, err)
		}
		out = append([]placedSource{{src: m, mirror: true}}, out...)
	}
	return out, nil
}

// walked is a catalog read from its first root on.
type walked struct {
	// files are the verified metadata, by the path clients fetch.
	files    map[string][]byte
	catalog  *catalog.Catalog
	problems []*catalog.Problem
	rootSHA  string
	versions [4]int64 // root, timestamp, snapshot, targets
}

// walk runs a TUF update of st's catalog at src from its 1.root.json,
// which must be the pinned root or lead to it, and keeps every file it
// verified. scratch is a directory for the TUF client's paths (nothing
// is written there).
func (c *Cache) walk(ctx context.Context, st *state, src *Source, scratch string) (*walked, error) {
	rctx, cancel := c.requestContext(ctx)
	one, err := readAll(rctx, src.opener(&c.o.Source), "1.root.json", 512000, func(n int64) error {
		return &VerifyError{Catalog: st.Name, Kind: KindMalformed, File: "1.root.json", Detail: fmt.Sprintf("it is larger than %d bytes", n)}
	})
	cancel()
	if err != nil {
		return nil, classify(st.Name, "1.root.json", err)
	}
	up, f, localDir, err := c.tufRefresh(ctx, st, src, scratch, nil, one, c.o.Now())
	if err != nil {
		return nil, err
	}
	catData, err := fetchCatalog(st, up, f, nil, localDir)
	if err != nil {
		return nil, err
	}
	cat, problems, err := catalog.Parse(catData)
	if err != nil {
		return nil, &VerifyError{Catalog: st.Name, Kind: KindMalformed, File: catalog.TargetName, Detail: err.Error(), Err: err}
	}
	w := &walked{files: map[string][]byte{"1.root.json": one}, catalog: cat, problems: problems}
	for name, data := range f.got {
		w.files[name] = data
	}
	pinned := false
	for name, data := range w.files {
		if strings.HasSuffix(name, ".root.json") && "sha256:"+hexSHA256(data) == st.RootPin {
			pinned = true
		}
	}
	if !pinned {
		return nil, &VerifyError{Catalog: st.Name, Kind: KindRootPin, File: "1.root.json",
			Detail: fmt.Sprintf("no root version the source serves is the root you pinned (%s)", st.RootPin)}
	}
	trusted := up.GetTrustedMetadataSet()
	w.versions = [4]int64{trusted.Root.Signed.Version, trusted.Timestamp.Signed.Version, trusted.Snapshot.Signed.Version, trusted.Targets[metadata.TARGETS].Signed.Version}
	w.files["root.json"] = w.files[fmt.Sprintf("%d.root.json", w.versions[0])]
	w.rootSHA = hexSHA256(one)
	return w, nil
}

// sameAs checks that the walk verified the versions the refresh did: the
// mirror holds what the cache verified against its last copy (so never
// a rollback).
func (w *walked) sameAs(name string, info *Info) error {
	want := [4]int64{info.RootVersion, info.TimestampVersion, info.SnapshotVersion, info.TargetsVersion}
	if w.versions != want {
		return fmt.Errorf("catalog %s changed while berth mirrored it (root, timestamp, snapshot and targets versions %v, then %v); nothing was written: run berth mirror again", name, want, w.versions)
	}
	return nil
}

// mirrorBundles writes every archive and signature the catalog lists at
// a relative location into out.
func (c *Cache) mirrorBundles(ctx context.Context, st *state, w *walked, srcs []placedSource, d *mirrorDest, out *os.Root, maxSize int64, res *MirrorResult) error {
	var ops []opener
	if d.old != nil {
		ops = append(ops, &rootOpener{root: d.old})
	}
	for _, s := range srcs {
		ops = append(ops, s.src.opener(&c.o.Source))
	}
	timeout := c.o.Source.DownloadTimeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	written := map[string]string{} // path -> the sha256 of the archive, "" for a signature
	for _, p := range w.catalog.Plugins {
		for _, v := range p.Versions {
			for _, loc := range v.URLs {
				if textio.HasScheme(loc) {
					res.NotMirrored = append(res.NotMirrored, NotMirrored{Plugin: p.Name, Version: v.Version, Location: loc, Reason: reasonAbsolute})
					continue
				}
				if err := checkMirrorPath(st.Name, w, written, loc, v.Archive.SHA256); err != nil {
					return err
				}
				if _, ok := written[loc]; ok {
					continue
				}
				if v.Archive.Size > maxSize {
					return fmt.Errorf("catalog %s: the archive of %s@%s is %d bytes, over the download cap of %d; raise the cap if you expected a bundle this large", st.Name, p.Name, v.Version, v.Archive.Size, maxSize)
				}
				reused, err := copyArchive(ctx, st.Name, ops, d.old != nil, out, loc, v.Archive, timeout)
				if err != nil {
					return err
				}
				written[loc] = v.Archive.SHA256
				res.Archives++
				res.Bytes += v.Archive.Size
				if reused {
					res.Reused++
				}
			}
			loc := v.SignatureURL
			if textio.HasScheme(loc) {
				res.NotMirrored = append(res.NotMirrored, NotMirrored{Plugin: p.Name, Version: v.Version, Location: loc, Reason: reasonAbsolute})
				continue
			}
			if err := checkMirrorPath(st.Name, w, written, loc, ""); err != nil {
				return err
			}
			if _, ok := written[loc]; ok {
				continue
			}
			sctx, cancel := context.WithTimeout(ctx, timeout)
			sig, err := sourceOpeners(ops[len(ops)-len(srcs):]).readSignature(sctx, loc)
			cancel()
			var nf *errNotFound
			if errors.As(err, &nf) {
				return fmt.Errorf("%w: the signature URL %s of %s@%s in catalog %s has no signature; tell the catalog's curator", trust.ErrUntrusted, loc, p.Name, v.Version, st.Name)
			}
			if err != nil {
				return fmt.Errorf("catalog %s, the signature of %s@%s: %w", st.Name, p.Name, v.Version, err)
			}
			if err := writeIn(out, loc, sig); err != nil {
				return err
			}
			written[loc] = ""
			res.Signatures++
			res.Bytes += int64(len(sig))
		}
	}
	return nil
}

// checkMirrorPath refuses a relative location that is no file path
// inside the mirror, that names a metadata file, or that two versions
// list for different archives.
func checkMirrorPath(name string, w *walked, written map[string]string, loc, sha string) error {
	if !filepath.IsLocal(filepath.FromSlash(loc)) || path.Clean(loc) != loc {
		return fmt.Errorf("%w: catalog %s lists %q, which is not a path inside the catalog", trust.ErrUntrusted, name, loc)
	}
	if _, ok := w.files[loc]; ok {
		return fmt.Errorf("%w: catalog %s lists its metadata file %s as a bundle's file; tell the catalog's curator", trust.ErrUntrusted, name, loc)
	}
	if prev, ok := written[loc]; ok && prev != sha {
		return fmt.Errorf("%w: catalog %s lists %s for two different files; tell the catalog's curator", trust.ErrUntrusted, name, loc)
	}
	return nil
}

// copyArchive writes the archive at loc into out from the first opener
// that serves it with the size and sha256 a says; when hasOld, the first
// opener is the earlier mirror, whose copy is taken only if it matches.
// It reports whether the earlier mirror's copy was taken.
func copyArchive(ctx context.Context, name string, ops []opener, hasOld bool, out *os.Root, loc string, a catalog.Archive, timeout time.Duration) (bool, error) {
	var errs []error
	for i, op := range ops {
		dctx, cancel := context.WithTimeout(ctx, timeout)
		err := fetchChecked(dctx, op, loc, a, nil,
			func() (*os.File, error) { return createIn(out, loc) },
			func() { out.Remove(filepath.FromSlash(loc)) })
		cancel()
		if err == nil {
			return hasOld && i == 0, nil
		}
		if hasOld && i == 0 {
			continue // the earlier mirror's copy is only a shortcut
		}
		var ve *VerifyError
		if errors.As(err, &ve) {
			ve.Catalog = name
			return false, err
		}
		var nf *errNotFound
		if !errors.As(err, &nf) && !errors.Is(err, ErrNetwork) || ctx.Err() != nil {
			return false, err
		}
		errs = append(errs, err)
	}
	return false, fmt.Errorf("catalog %s: could not download %s: %w", name, loc, errors.Join(errs...))
}

// createIn creates the new file rel (slash-separated) inside root, with
// its directories, mode 0644 (directories 0755) so a web server can
// serve it.
func createIn(root *os.Root, rel string) (*os.File, error) {
	name := filepath.FromSlash(rel)
	if dir := filepath.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("writing %s into the mirror: %w", rel, err)
		}
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("writing %s into the mirror: %w", rel, err)
	}
	if err := f.Chmod(0o644); err != nil { // the umask may have cleared bits
		f.Close()
		return nil, err
	}
	return f, nil
}

// writeIn writes the new file rel inside root, synced.
func writeIn(root *os.Root, rel string, data []byte) error {
	f, err := createIn(root, rel)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s into the mirror: %w", rel, err)
	}
	return nil
}

// syncTree syncs every directory of the tree at dir.
func syncTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.IsDir() {
			return err
		}
		return atomicfile.SyncDir(p)
	})
}

// rootOpener reads the regular files of a directory through an os.Root
// (an earlier mirror being replaced): a link or special file is missing.
type rootOpener struct{ root *os.Root }

func (r *rootOpener) open(ctx context.Context, loc string) (io.ReadCloser, error) {
	name := filepath.FromSlash(loc)
	fi, err := r.root.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, &errNotFound{loc: loc}
	}
	f, err := r.root.Open(name)
	if err != nil {
		return nil, &errNotFound{loc: loc}
	}
	if st, err := f.Stat(); err != nil || !os.SameFile(fi, st) {
		f.Close()
		return nil, &errNotFound{loc: loc}
	}
	return &ctxFile{Reader: fsx.ContextReader(ctx, f), Closer: f}, nil
}

// mirrorDest is the directory a mirror goes to, opened through its parent.
type mirrorDest struct {
	dir, parentDir, base string
	parent               *os.Root
	// existing is true when dir exists (empty, or an earlier mirror).
	existing bool
	// oldRootSHA is the sha256 of the earlier mirror's 1.root.json.
	oldRootSHA string
	// old reads the earlier mirror; nil when there is none.
	old *os.Root
}

// mirrorEntry matches the names at the top of a directory a mirror has.
var mirrorEntry = regexp.MustCompile(`^([0-9]+\.(root|snapshot|targets)\.json|root\.json|timestamp\.json|snapshot\.json|targets\.json|targets|bundles)$`)

func openMirrorDest(dest string) (*mirrorDest, error) {
	abs, err := filepath.Abs(dest)
	if err != nil {
		return nil, err
	}
	d := &mirrorDest{dir: abs, parentDir: filepath.Dir(abs), base: filepath.Base(abs)}
	if d.parentDir == abs {
		return nil, fmt.Errorf("the mirror's directory %s is a file system root; give a directory to write the mirror into", abs)
	}
	if d.parent, err = os.OpenRoot(d.parentDir); err != nil {
		return nil, fmt.Errorf("the mirror's directory %s: %w; create its parent directory first", abs, err)
	}
	fail := func(err error) (*mirrorDest, error) {
		d.close()
		return nil, err
	}
	fi, err := d.parent.Lstat(d.base)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return d, nil
	case err != nil:
		return fail(err)
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := d.parent.Readlink(d.base)
		return fail(fmt.Errorf("the mirror's directory %s is a symbolic link (to %s); berth writes a mirror only into a directory it replaces, never through a link: give the directory itself", abs, target))
	case !fi.IsDir():
		return fail(fmt.Errorf("%s exists and is not a directory; give a new, empty directory or an earlier mirror of the catalog", abs))
	}
	d.existing = true
	f, err := d.parent.Open(d.base)
	if err != nil {
		return fail(err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return fail(err)
	}
	if len(names) == 0 {
		return d, nil
	}
	sort.Strings(names)
	for _, n := range names {
		if !mirrorEntry.MatchString(n) {
			return fail(fmt.Errorf("%s is not empty and is not a mirror berth wrote (it has %s, which a mirror does not); berth replaces only an earlier mirror of the same catalog: give a new or empty directory", abs, n))
		}
	}
	if d.old, err = d.parent.OpenRoot(d.base); err != nil {
		return fail(err)
	}
	data, err := fsx.ReadIn(filepath.Join(d.parentDir, d.base), "1.root.json", 512000)
	if err != nil {
		return fail(fmt.Errorf("%s is not empty and is not a mirror berth wrote (1.root.json: %v); berth replaces only an earlier mirror of the same catalog: give a new or empty directory", abs, err))
	}
	d.oldRootSHA = hexSHA256(data)
	return d, nil
}

// isMirrorOf reports whether d is the directory st's catalog is read
// from first (its mirror).
func (d *mirrorDest) isMirrorOf(st *state) bool {
	if st.Mirror == "" {
		return false
	}
	m, err := recordedSource(st.Mirror, true)
	return err == nil && m.Kind == "directory" && filepath.Clean(m.Dir) == d.dir
}

// checkReplace refuses to replace an earlier mirror of another catalog.
func (d *mirrorDest) checkReplace(name, rootSHA string) error {
	if d.oldRootSHA != "" && d.oldRootSHA != rootSHA {
		return fmt.Errorf("%s holds a mirror of another catalog (its 1.root.json has sha256 %s, catalog %s's has %s); berth replaces only an earlier mirror of the same catalog: give another directory", d.dir, d.oldRootSHA, name, rootSHA)
	}
	return nil
}

// makeTemp makes the directory the mirror is built in, beside dir.
func (d *mirrorDest) makeTemp() (string, error) {
	tmp := "." + d.base + ".mirror-" + randomHex(6)
	if err := d.parent.Mkdir(tmp, 0o755); err != nil {
		return "", fmt.Errorf("making the mirror's temp directory beside %s: %w", d.dir, err)
	}
	return tmp, nil
}

// commit renames the built mirror tmp into place; an earlier one is
// swapped with it in one step (Linux), or renamed aside first where the
// system cannot, and removed after.
func (d *mirrorDest) commit(tmp string) error {
	if !d.existing {
		if err := d.parent.Rename(tmp, d.base); err != nil {
			return fmt.Errorf("moving the mirror into place at %s: %w", d.dir, err)
		}
		return atomicfile.SyncDir(d.parentDir)
	}
	// Swapped in one step where the system can, so that a crash leaves
	// the old mirror or the new one at dir, never neither.
	if pd, err := d.parent.Open("."); err == nil {
		xerr := atomicfile.Exchange(pd, tmp, d.base)
		pd.Close()
		if xerr == nil {
			if err := atomicfile.SyncDir(d.parentDir); err != nil {
				return err
			}
			if d.old != nil {
				d.old.Close()
				d.old = nil
			}
			return d.parent.RemoveAll(tmp)
		}
		if !errors.Is(xerr, errors.ErrUnsupported) {
			return fmt.Errorf("swapping the mirror into place at %s: %w; the earlier mirror stays", d.dir, xerr)
		}
	}
	aside := "." + d.base + ".old-" + randomHex(6)
	if err := d.parent.Rename(d.base, aside); err != nil {
		return fmt.Errorf("moving the earlier mirror at %s aside: %w", d.dir, err)
	}
	if err := d.parent.Rename(tmp, d.base); err != nil {
		if rerr := d.parent.Rename(aside, d.base); rerr != nil {
			return fmt.Errorf("moving the mirror into place at %s: %w (and the earlier mirror could not be put back from %s: %v)", d.dir, err, filepath.Join(d.parentDir, aside), rerr)
		}
		return fmt.Errorf("moving the mirror into place at %s: %w; the earlier mirror stays", d.dir, err)
	}
	if err := atomicfile.SyncDir(d.parentDir); err != nil {
		return err
	}
	if d.old != nil {
		d.old.Close()
		d.old = nil
	}
	return d.parent.RemoveAll(aside)
}

func (d *mirrorDest) close() {
	if d.old != nil {
		d.old.Close()
	}
	if d.parent != nil {
		d.parent.Close()
	}
}

func hexSHA256(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func sortedKeys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// SetMirror sets the mirror of the signed catalog name, where every
// update reads it first (nil drops it). Nothing is read now: the next
// update verifies what the mirror serves, against the same pinned root
// and the verified copy, as Refresh does.
func (c *Cache) SetMirror(ctx context.Context, name string, mirror *Source) (*CatalogInfo, error) {
	unlock, err := c.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	st, err := c.readState(name)
	if err != nil {
		return nil, err
	}
	if st.Kind != "" {
		return nil, fmt.Errorf("%w: catalog %s is not a signed catalog (it is %s); a mirror is only for a signed catalog, whose pinned root lets berth check what the mirror serves", ErrUnsignedSource, name, st.Kind)
	}
	st.Mirror = ""
	if mirror != nil {
		if mirror.String() == st.Source {
			return nil, fmt.Errorf("the mirror %s is catalog %s's source itself; give another place that serves the catalog", mirror, name)
		}
		st.Mirror = mirror.String()
	}
	if err := writeState(filepath.Join(c.dir, name), st); err != nil {
		return nil, err
	}
	return c.info(st), nil
}
