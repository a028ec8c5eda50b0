package bundle

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
)

// BerthVersion is the version of berth that this package belongs to; it is
// what requires.berth is checked against unless Options says otherwise.
const BerthVersion = "0.1.0"

// Options tune Open. A nil *Options means the defaults.
type Options struct {
	Limits Limits
	// BerthVersion is checked against requires.berth; "" means
	// BerthVersion.
	BerthVersion string
	// TempDir is where archives are extracted; "" means os.TempDir().
	TempDir string
	// RuntimeVersion checks the runtimes an imported bundle declares;
	// nil means HostRuntimeVersion.
	RuntimeVersion RuntimeVersionFunc
}

// Bundle is an opened bundle: its tree on disk, its listing and digest, and
// its manifest. Close removes what Open extracted.
type Bundle struct {
	// Source is what Open was given.
	Source string
	// Kind is "directory", "tar.gz", "zip" (also a .mcpb) or "json" (a
	// server.json file).
	Kind string
	// Dir is the bundle's root on disk: the source directory itself, or
	// the directory an archive was extracted into.
	Dir string
	// Tree holds the listing; nil when the tree could not be listed.
	Tree *Tree
	// Manifest is nil when berth.json could not be decoded.
	Manifest *Manifest
	// Digest is "sha256:<hex>" of the canonical listing; "" when the tree
	// could not be listed.
	Digest string
	// Import is set when the source is of another format (import.go).
	Import *Import
	// Notes are remarks on how the source was read, for the person
	// reading the review (a manifest of another format beside berth.json).
	Notes []string

	tmp string
	imp *importState
}

// Listing returns the canonical listing, or nil.
func (b *Bundle) Listing() *Listing {
	if b.Tree == nil {
		return nil
	}
	return b.Tree.Listing
}

// Close removes the extracted copy of an archive. It is safe to call more
// than once.
func (b *Bundle) Close() error {
	if b == nil || b.tmp == "" {
		return nil
	}
	err := removeAll(b.tmp)
	b.tmp = ""
	return err
}

// removeAll removes a tree even where directories were made read-only.
func removeAll(dir string) error {
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// Open reads a bundle from a directory, a .tar.gz/.tgz or a .zip, and
// validates it fail-closed. When the bundle breaks any rule, Open returns
// the Bundle (as far as it could be read, so its digest can still be shown)
// together with an *InvalidError that lists every problem; errors.Is(err,
// ErrInvalidBundle) is then true. Other errors (a missing source, an I/O
// failure) return a nil Bundle. Open never runs anything from the bundle
// and never reads an environment variable the manifest names.
func Open(ctx context.Context, source string, opts *Options) (*Bundle, error) {
	if opts == nil {
		opts = &Options{}
	}
	bv := opts.BerthVersion
	if bv == "" {
		bv = BerthVersion
	}
	fi, err := os.Stat(source)
	if err != nil {
		return nil, fmt.Errorf("cannot open bundle %s: %w", source, err)
	}
	b := &Bundle{Source: source}
	var ps problems
	switch {
	case fi.IsDir():
		dir, err := filepath.Abs(source)
		if err == nil {
			dir, err = filepath.EvalSymlinks(dir)
		}
		if err != nil {
			return nil, fmt.Errorf("cannot open bundle %s: %w", source, err)
		}
		b.Kind, b.Dir = "directory", dir
	case fi.Mode().IsRegular() && sourceKind(source) != "":
		b.Kind = sourceKind(source)
		tmp, err := os.MkdirTemp(opts.TempDir, "berth-extract-")
		if err != nil {
			return nil, fmt.Errorf("cannot extract %s: %w", source, err)
		}
		b.tmp, b.Dir = tmp, filepath.Join(tmp, "bundle")
		if err := os.Mkdir(b.Dir, 0o700); err != nil {
			b.Close()
			return nil, err
		}
		xps, err := b.unpack(ctx, source, b.Kind, &opts.Limits)
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("cannot extract %s: %w", source, err)
		}
		if len(xps) > 0 {
			return b, &InvalidError{Source: source, Problems: xps}
		}
	default:
		return nil, fmt.Errorf("%s is neither a directory nor a .tar.gz, .tgz, .zip or .mcpb archive nor a server.json; point berth at the bundle directory or its archive", source)
	}
	if err := b.prepareImport(ctx, opts); err != nil {
		b.Close()
		return nil, err
	}
	tree, tps, err := ReadTree(ctx, b.Dir, &opts.Limits)
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("cannot read bundle %s: %w", source, err)
	}
	b.Tree = tree
	ps.list = append(ps.list, tps...)
	if tree.Listing == nil {
		b.finishImport(&ps)
		return b, &InvalidError{Source: source, Problems: ps.sorted()}
	}
	b.Digest = tree.Listing.Digest()
	d := b.readManifest(&ps)
	if d != nil {
		ps.list = append(ps.list, d.problems.list...)
		if d.manifest != nil {
			b.Manifest = d.manifest
			dv := &decoded{manifest: d.manifest, present: d.present, bad: d.bad}
			validate(dv, tree, bv, runtimeProbe{ctx: ctx, version: opts.RuntimeVersion})
			ps.list = append(ps.list, dv.problems.list...)
		}
	}
	b.finishImport(&ps)
	if !ps.empty() {
		return b, &InvalidError{Source: source, Problems: ps.sorted()}
	}
	return b, nil
}

func (b *Bundle) readManifest(ps *problems) *decoded {
	e, ok := b.Tree.Listing.Lookup(ManifestFile)
	switch {
	case !ok && b.Tree.dirs[ManifestFile]:
		ps.add(ManifestFile, RuleManifestNotRegular, "berth.json is a directory; it must be a regular file at the bundle's root")
		return nil
	case !ok:
		ps.add(ManifestFile, RuleManifestMissing, "the bundle has no berth.json at its root; add one (docs/manifest.md), or point berth at the directory that holds it")
		return nil
	case e.Mode == ModeSymlink:
		ps.add(ManifestFile, RuleManifestNotRegular, "berth.json is a symlink; it must be a regular file at the bundle's root")
		return nil
	case e.Size > MaxManifestSize:
		ps.add(ManifestFile, RuleManifestTooLarge, "berth.json is %d bytes, over the limit of %d (1 MiB); move large data into files of the bundle", e.Size, MaxManifestSize)
		return nil
	}
	f, err := openNoFollow(filepath.Join(b.Dir, ManifestFile))
	if err != nil {
		ps.add(ManifestFile, RuleManifestNotRegular, "cannot read berth.json: %v", err)
		return nil
	}
	defer f.Close()
	data := make([]byte, MaxManifestSize+1)
	n, _ := readFull(f, data)
	if sha256.Sum256(data[:n]) != e.SHA256 {
		ps.add(ManifestFile, RuleManifestNotRegular, "berth.json changed while berth read the bundle; make sure nothing writes to the bundle and try again")
		return nil
	}
	return decodeManifest(data[:n])
}

func readFull(f *os.File, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := f.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
