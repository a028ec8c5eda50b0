package bundle

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// ArchiveKind returns KindTarGz or KindZip for a supported archive name,
// or "" for anything else.
func ArchiveKind(name string) Kind {
	lower := strings.ToLower(name)
	switch {
	case strings.HasSuffix(lower, ".tar.gz"), strings.HasSuffix(lower, ".tgz"):
		return KindTarGz
	case strings.HasSuffix(lower, ".zip"):
		return KindZip
	}
	return ""
}

// Extract unpacks the archive src into the empty directory dest. Nothing is
// ever written outside dest: entries that are absolute, contain "..", are
// hard links, devices or duplicates are problems and are not written;
// symlinks are created last, after every file, so no write goes through
// one. Sizes are counted while streaming, never trusted from headers, so a
// zip bomb stops at the cap. err is set when the archive cannot be read.
func Extract(ctx context.Context, src, dest string, limits *Limits) ([]*Problem, error) {
	ps, _, err := extract(ctx, src, ArchiveKind(src), dest, limits, Formats())
	return ps, err
}

// extract is Extract of an archive of the given kind. A block that one of
// formats appends to a zip (an MCPB signature block) is removed before the
// zip is read (format.go) and returned.
func extract(ctx context.Context, src string, kind Kind, dest string, limits *Limits, formats []*Format) ([]*Problem, *MCPBSignature, error) {
	lim := limits.withDefaults()
	x := &extractor{dest: dest, lim: lim, seen: map[string]entryKind{}, folded: map[string]string{}, formats: formats}
	f, err := os.Open(src)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	switch kind {
	case KindTarGz:
		err = x.tarGz(ctx, f)
	case KindZip:
		err = x.zip(ctx, f)
	default:
		return nil, nil, fmt.Errorf("%s: not a supported archive; berth reads directories, .tar.gz, .tgz, .zip and .mcpb", src)
	}
	if errors.Is(err, errStop) {
		err = nil
	}
	if err != nil {
		var fe *formatError
		if !errors.As(err, &fe) {
			return nil, nil, err
		}
		x.ps.add(".", RuleArchiveFormat, "%s: %v; re-create the archive with tar -czf or zip", filepath.Base(src), fe.err)
	}
	if x.ps.empty() {
		x.symlinks()
	}
	return x.ps.sorted(), x.sig, nil
}

// errStop ends extraction after a cap was hit; the problem is recorded.
var errStop = errors.New("stop")

type formatError struct{ err error }

func (e *formatError) Error() string { return e.err.Error() }

// entryKind is what an archive entry is, or "implied" for a directory
// that only the paths of other entries name.
type entryKind string

const (
	entryFile     entryKind = "file"
	entryDir      entryKind = "dir"
	entrySymlink  entryKind = "symlink"
	entryHardLink entryKind = "hardlink"
	entrySpecial  entryKind = "special"
	entryImplied  entryKind = "implied"
)

type extractor struct {
	dest    string
	lim     Limits
	ps      problems
	seen    map[string]entryKind // clean path -> kind
	folded  map[string]string
	links   []walkEntry
	total   int64
	entries int
	sig     *MCPBSignature
	formats []*Format
}

func (x *extractor) tarGz(ctx context.Context, r io.Reader) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return &formatError{fmt.Errorf("not gzip data: %w", err)}
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return &formatError{err}
		}
		var kind entryKind
		// The reader reports the legacy TypeRegA as TypeReg (or TypeDir
		// for a name ending in "/").
		switch hdr.Typeflag {
		case tar.TypeReg:
			kind = entryFile
		case tar.TypeDir:
			kind = entryDir
		case tar.TypeSymlink:
			kind = entrySymlink
		case tar.TypeLink:
			kind = entryHardLink
		case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
			kind = entrySpecial
		default:
			return &formatError{fmt.Errorf("entry %q has tar type %q, which berth does not read", hdr.Name, hdr.Typeflag)}
		}
		if err := x.entry(hdr.Name, kind, hdr.Mode&0o111 != 0, hdr.Linkname, tr); err != nil {
			return err
		}
		if err := x.drain(tr); err != nil {
			return err
		}
	}
}

// drain reads the data that entry left of a tar entry (one it refused),
// counting it against the size cap: the reader would otherwise decompress
// it to find the next header, without any limit.
func (x *extractor) drain(r io.Reader) error {
	n, err := io.Copy(io.Discard, io.LimitReader(r, x.lim.MaxTotalSize-x.total+1))
	x.total += n
	if err != nil {
		return &formatError{err}
	}
	if x.total > x.lim.MaxTotalSize {
		x.ps.addLimit(".", RuleTreeTooLarge, LimitMaxTotalSize, "the archive unpacks to more than %d bytes; remove what the plugin does not need, or raise the cap", x.lim.MaxTotalSize)
		return errStop
	}
	return nil
}

func (x *extractor) zip(ctx context.Context, f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size, sig, ok := x.zipTrailer(f, fi.Size())
	if !ok {
		return nil
	}
	x.sig = sig
	zr, err := zip.NewReader(io.NewSectionReader(f, 0, size), size)
	if err != nil {
		return &formatError{err}
	}
	for _, zf := range zr.File {
		if err := ctx.Err(); err != nil {
			return err
		}
		mode := zf.Mode()
		kind := entryFile
		switch {
		case mode.IsDir() || strings.HasSuffix(zf.Name, "/"):
			kind = entryDir
		case mode&os.ModeSymlink != 0:
			kind = entrySymlink
		case !mode.IsRegular():
			kind = entrySpecial
		}
		var target string
		var body io.Reader
		if kind == entrySymlink || kind == entryFile {
			rc, err := zf.Open()
			if err != nil {
				return &formatError{fmt.Errorf("entry %q: %w", zf.Name, err)}
			}
			if kind == entrySymlink {
				b, err := io.ReadAll(io.LimitReader(rc, int64(x.lim.MaxPathLen)+1))
				rc.Close()
				if err != nil {
					return &formatError{fmt.Errorf("entry %q: %w", zf.Name, err)}
				}
				target = string(b)
			} else {
				body = rc
			}
		}
		err := x.entry(zf.Name, kind, mode.Perm()&0o111 != 0, target, body)
		if c, ok := body.(io.Closer); ok {
			c.Close()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// entry checks one archive entry and writes it when it is a file or a
// directory. Symlinks are collected and created at the end.
func (x *extractor) entry(name string, kind entryKind, exec bool, linkname string, body io.Reader) error {
	x.entries++
	if x.entries > x.lim.MaxEntries {
		x.ps.addLimit(".", RuleTreeTooManyEntries, LimitMaxEntries, "the archive has more than %d entries; remove what the plugin does not need, or raise the cap", x.lim.MaxEntries)
		return errStop
	}
	rel, ok := x.cleanName(name)
	if !ok || rel == "" {
		return nil
	}
	if !checkPath(&x.ps, rel, x.lim.MaxPathLen) {
		return nil
	}
	if prev, dup := x.seen[rel]; dup && !(prev == entryImplied && kind == entryDir) {
		x.ps.add(rel, RuleArchiveDuplicate, "the archive holds this path more than once; keep one entry")
		return nil
	}
	key := foldPath(rel)
	if other, ok := x.folded[key]; ok && other != rel {
		x.ps.add(rel, RulePathCaseCollision, "%q and %q differ only in case or Unicode normalization and would collide on macOS and Windows; rename one", other, rel)
		return nil
	}
	x.folded[key] = rel
	for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
		switch x.seen[dir] {
		case "", entryImplied, entryDir:
			if x.seen[dir] == "" {
				x.seen[dir] = entryImplied
				dk := foldPath(dir)
				if other, ok := x.folded[dk]; ok && other != dir {
					x.ps.add(dir, RulePathCaseCollision, "%q and %q differ only in case or Unicode normalization and would collide on macOS and Windows; rename one", other, dir)
					return nil
				}
				x.folded[dk] = dir
			}
		default:
			x.ps.add(rel, RuleArchiveDuplicate, "this entry is inside %q, which the archive also holds as a %s; keep one", dir, x.seen[dir])
			return nil
		}
	}
	switch kind {
	case entryHardLink:
		x.ps.add(rel, RuleHardLink, "this archive entry is a hard link to %q; store a copy or a relative symlink instead", linkname)
		return nil
	case entrySpecial:
		x.ps.add(rel, RuleSpecialFile, "this archive entry is a device, FIFO or other special file; a bundle may hold only regular files, directories and symlinks")
		return nil
	}
	x.seen[rel] = kind
	abs := filepath.Join(x.dest, filepath.FromSlash(rel))
	switch kind {
	case entryDir:
		return os.MkdirAll(abs, 0o755)
	case entrySymlink:
		if len(linkname) > x.lim.MaxPathLen {
			x.ps.addLimit(rel, RulePathTooLong, LimitMaxPathLen, "this symlink's target is longer than the cap of %d bytes; shorten it, or raise the cap", x.lim.MaxPathLen)
			return nil
		}
		x.links = append(x.links, walkEntry{rel: rel, abs: abs, target: linkname})
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return err
	}
	perm := os.FileMode(0o644)
	if exec {
		perm = 0o755
	}
	out, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	remaining := x.lim.MaxTotalSize - x.total
	n, err := io.Copy(out, io.LimitReader(body, remaining+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	x.total += n
	if err != nil {
		if errors.Is(err, zip.ErrChecksum) || errors.Is(err, zip.ErrFormat) || errors.Is(err, io.ErrUnexpectedEOF) {
			x.ps.add(rel, RuleArchiveSizeMismatch, "this entry's data does not match its declared size or checksum (%v); re-create the archive", err)
			return errStop
		}
		return err
	}
	if x.total > x.lim.MaxTotalSize {
		x.ps.addLimit(".", RuleTreeTooLarge, LimitMaxTotalSize, "the archive unpacks to more than %d bytes; remove what the plugin does not need, or raise the cap", x.lim.MaxTotalSize)
		return errStop
	}
	return nil
}

// cleanName turns an archive entry name into a clean relative path. A
// leading "./" is dropped; absolute names and ".." are problems.
func (x *extractor) cleanName(name string) (string, bool) {
	if name == "" {
		x.ps.add(".", RuleArchiveFormat, "the archive has an entry with an empty name; re-create the archive")
		return "", false
	}
	if strings.HasPrefix(name, "/") || (len(name) >= 2 && name[1] == ':') {
		x.ps.add(fmt.Sprintf("%q", name), RuleArchiveAbsolute, "this archive entry has an absolute path; archive the bundle with paths relative to its root (tar -czf b.tgz -C dir .)")
		return "", false
	}
	parts := strings.Split(strings.TrimSuffix(name, "/"), "/")
	var out []string
	for _, p := range parts {
		switch p {
		case "", ".":
			continue
		case "..":
			x.ps.add(fmt.Sprintf("%q", name), RuleArchiveTraversal, "this archive entry's path contains \"..\" and could write outside the destination; re-create the archive from the bundle directory")
			return "", false
		}
		out = append(out, p)
	}
	return strings.Join(out, "/"), true
}

// symlinks creates the collected symlinks. Their parents are real
// directories (a symlink that is also a parent was refused), so nothing is
// written through a link. Their targets are checked by ReadTree.
func (x *extractor) symlinks() {
	sort.Slice(x.links, func(i, j int) bool { return x.links[i].rel < x.links[j].rel })
	for _, l := range x.links {
		if err := os.MkdirAll(filepath.Dir(l.abs), 0o755); err != nil {
			x.ps.add(l.rel, RuleArchiveFormat, "cannot create the directory for this symlink: %v", err)
			continue
		}
		if err := os.Symlink(l.target, l.abs); err != nil {
			x.ps.add(l.rel, RuleArchiveFormat, "cannot create this symlink: %q", err)
		}
	}
}
