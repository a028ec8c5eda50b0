package bundle

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/berth-mcp/berth/bundle/runtimefetch"
	"github.com/berth-mcp/berth/internal/atomicfile"
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
	// nil means runtimefetch.HostRuntimeVersion.
	RuntimeVersion runtimefetch.RuntimeVersionFunc
	// Formats are the formats of other tools that Load reads besides
	// berth's own; nil means the registered ones (RegisterFormat).
	Formats []*Format
	// Without names servers of a converted source to leave out (berth
	// import --without): each must be a server of the source (its name
	// there, or the berth name it maps to), is not converted, and is
	// listed under importedFrom.notCarriedOver with the reason. Only
	// formats with ConvertWithout take it.
	Without []string
	// Pin, when set, pins the runtime fetches that a source of another
	// format leaves unpinned (npx -y pkg, pkg@latest, uvx pkg, an image by
	// tag): Open calls it for each, writes the result into the generated
	// berth.json and records it in importedFrom.pinned (berth import
	// --pin; runtimefetch.Resolver.Resolve does the resolving). nil
	// refuses them, as berth.json's rules do.
	Pin func(ctx context.Context, u *runtimefetch.Unpinned) (*runtimefetch.Pin, error)
}

// Kind is the form a bundle was read from.
type Kind string

// Kinds of bundle sources.
const (
	KindDirectory Kind = "directory"
	KindTarGz     Kind = "tar.gz"
	KindZip       Kind = "zip"
	// KindJSON is a server.json file (an MCP Registry entry).
	KindJSON Kind = "json"
)

// Bundle is an opened bundle: its tree on disk, its listing and digest, and
// its manifest. Close removes what Load or Open extracted.
type Bundle struct {
	// Source is what Load or Open was given.
	Source string
	// Kind is how the source was read.
	Kind Kind
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
// than once, and on a nil *Bundle.
func (b *Bundle) Close() error {
	if b == nil || b.tmp == "" {
		return nil
	}
	err := atomicfile.RemoveTree(b.tmp)
	b.tmp = ""
	return err
}

// Open reads a bundle from a directory, a .tar.gz/.tgz or a .zip, or a
// source of a registered format of another tool (Format; package
// bundle/formats registers an MCP Bundle .mcpb or its directory, a Claude
// Code plugin directory, an MCP Registry server.json), and
// validates it fail-closed. It returns either a valid Bundle, which the
// caller must Close, or an error and no Bundle. When the bundle breaks any
// rule the error is an *InvalidError that lists every problem, and
// errors.Is(err, ErrInvalidBundle) is true; use Load to keep an invalid
// bundle (to show its digest, say). Open never runs anything from the
// bundle and never reads an environment variable the manifest names.
func Open(ctx context.Context, source string, opts *Options) (*Bundle, error) {
	b, ps, err := Load(ctx, source, opts)
	if err != nil {
		return nil, err
	}
	if len(ps) > 0 {
		b.Close()
		return nil, &InvalidError{Source: source, Problems: ps, OnlyServer: b.OnlyServer(ps)}
	}
	return b, nil
}

// Load reads and validates a bundle like Open, but returns the problems of
// an invalid bundle separately: a non-nil Bundle with no problems is
// valid; a non-nil Bundle with problems holds as much as could be read
// (Tree, Digest and Manifest may be nil or empty); either way the caller
// must Close it. An error means the bundle could not be read at all (a
// missing source, an unsupported kind, an I/O failure); the Bundle is nil
// then. The problems are sorted by path, then rule.
func Load(ctx context.Context, source string, opts *Options) (*Bundle, []*Problem, error) {
	if opts == nil {
		opts = &Options{}
	}
	bv := opts.BerthVersion
	if bv == "" {
		bv = BerthVersion
	}
	fi, err := os.Stat(source)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot open bundle %s: %w", source, err)
	}
	formats := opts.Formats
	if formats == nil {
		formats = Formats()
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
			return nil, nil, fmt.Errorf("cannot open bundle %s: %w", source, err)
		}
		b.Kind, b.Dir = KindDirectory, dir
	case fi.Mode().IsRegular() && sourceKind(source, formats) != "":
		b.Kind = sourceKind(source, formats)
		tmp, err := os.MkdirTemp(opts.TempDir, "berth-extract-")
		if err != nil {
			return nil, nil, fmt.Errorf("cannot extract %s: %w", source, err)
		}
		b.tmp, b.Dir = tmp, filepath.Join(tmp, "bundle")
		if err := os.Mkdir(b.Dir, 0o700); err != nil {
			b.Close()
			return nil, nil, err
		}
		xps, err := b.unpack(ctx, source, b.Kind, &opts.Limits, formats)
		if err != nil {
			b.Close()
			return nil, nil, fmt.Errorf("cannot extract %s: %w", source, err)
		}
		if len(xps) > 0 {
			return b, xps, nil
		}
	default:
		return nil, nil, fmt.Errorf("%s is neither a directory nor a .tar.gz, .tgz, .zip or .mcpb archive nor a server.json; point berth at the bundle directory or its archive", source)
	}
	if err := b.prepareImport(ctx, opts, formats); err != nil {
		b.Close()
		return nil, nil, err
	}
	tree, tps, err := ReadTree(ctx, b.Dir, &opts.Limits)
	if err != nil {
		b.Close()
		return nil, nil, fmt.Errorf("cannot read bundle %s: %w", source, err)
	}
	b.Tree = tree
	ps.list = append(ps.list, tps...)
	if tree.Listing == nil {
		b.finishImport(&ps, tps)
		return b, ps.sorted(), nil
	}
	b.Digest = tree.Listing.Digest()
	d := b.readManifest(&ps)
	if d != nil {
		ps.list = append(ps.list, d.problems.list...)
		if d.manifest != nil {
			b.Manifest = d.manifest
			dv := &decoded{manifest: d.manifest, present: d.present, bad: d.bad}
			validate(dv, tree, bv, runtimeProbe{ctx: ctx, version: opts.RuntimeVersion}, formats)
			ps.list = append(ps.list, dv.problems.list...)
		}
	}
	b.finishImport(&ps, tps)
	if ps.empty() {
		return b, nil, nil
	}
	return b, ps.sorted(), nil
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
	n, _ := io.ReadFull(f, data)
	if sha256.Sum256(data[:n]) != e.SHA256 {
		ps.add(ManifestFile, RuleManifestNotRegular, "berth.json changed while berth read the bundle; make sure nothing writes to the bundle and try again")
		return nil
	}
	return decodeManifest(data[:n])
}
