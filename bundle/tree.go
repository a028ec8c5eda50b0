package bundle

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/berth-mcp/berth/internal/fsx"
)

// Limits caps what berth reads from a bundle. Zero fields take the defaults.
type Limits struct {
	MaxTotalSize int64 // bytes of all files together; default 1 GiB
	MaxEntries   int   // files, directories and symlinks; default 100,000
	MaxPathLen   int   // bytes of one path; default 4,096
}

// Limit names a field of Limits. A Problem that a cap caused carries it,
// so that a front end can say how its user raises that cap.
type Limit string

// The fields of Limits.
const (
	LimitMaxTotalSize Limit = "MaxTotalSize"
	LimitMaxEntries   Limit = "MaxEntries"
	LimitMaxPathLen   Limit = "MaxPathLen"
)

// Default caps.
const (
	DefaultMaxTotalSize = 1 << 30
	DefaultMaxEntries   = 100_000
	DefaultMaxPathLen   = 4096
)

func (l *Limits) withDefaults() Limits {
	var out Limits
	if l != nil {
		out = *l
	}
	if out.MaxTotalSize <= 0 {
		out.MaxTotalSize = DefaultMaxTotalSize
	}
	if out.MaxEntries <= 0 {
		out.MaxEntries = DefaultMaxEntries
	}
	if out.MaxPathLen <= 0 {
		out.MaxPathLen = DefaultMaxPathLen
	}
	return out
}

// Tree is a bundle's file tree as read from disk.
type Tree struct {
	Root    string
	Listing *Listing
	dirs    map[string]bool
}

// IsDir reports whether rel (slash-separated, "" for the root) is a
// directory of the tree, following symlinks inside the tree.
func (t *Tree) IsDir(rel string) bool {
	r, ok := t.resolve(rel)
	return ok && t.dirs[r]
}

// Exists reports whether rel names a file, symlink or directory of the tree,
// following symlinks inside the tree.
func (t *Tree) Exists(rel string) bool {
	_, ok := t.resolve(rel)
	return ok
}

// resolve follows symlinks inside the tree and returns the path of the
// final file or directory. ok is false when the path is dangling or leaves
// the tree.
func (t *Tree) resolve(rel string) (string, bool) {
	p, st := resolveIn(rel, t.stat)
	return p, st == resolved
}

func (t *Tree) stat(p string) (exists bool, target string, isLink bool) {
	if p == "" || t.dirs[p] {
		return true, "", false
	}
	e, ok := t.Listing.Lookup(p)
	if !ok {
		return false, "", false
	}
	return true, e.Target, e.Mode == ModeSymlink
}

type resolveStatus int

const (
	resolved resolveStatus = iota
	missing
	escaped
)

// resolveIn resolves rel component by component, substituting symlinks as
// they are met. stat(p) says whether p exists and, for a symlink, its
// target. A ".." above the root, an absolute target or more than 40 hops
// is an escape.
func resolveIn(rel string, stat func(p string) (exists bool, target string, isLink bool)) (string, resolveStatus) {
	pending := splitPath(rel)
	var cur []string
	for hops := 0; len(pending) > 0; {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case ".":
			continue
		case "..":
			if len(cur) == 0 {
				return "", escaped
			}
			cur = cur[:len(cur)-1]
			continue
		}
		next := strings.Join(append(cur[:len(cur):len(cur)], c), "/")
		exists, target, isLink := stat(next)
		if !exists {
			return "", missing
		}
		if isLink {
			hops++
			if hops > 40 || path.IsAbs(target) {
				return "", escaped
			}
			pending = append(splitPath(target), pending...)
			continue
		}
		cur = append(cur, c)
	}
	return strings.Join(cur, "/"), resolved
}

func splitPath(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

type walkEntry struct {
	rel    string
	abs    string
	mode   Mode
	size   int64
	target string
}

// ReadTree walks root without following symlinks, checks the tree rules and
// hashes every file. Rule violations are returned as problems; err is set
// only when the tree cannot be read. The listing is nil when a cap was hit.
func ReadTree(ctx context.Context, root string, limits *Limits) (*Tree, []*Problem, error) {
	lim := limits.withDefaults()
	var ps problems
	t := &Tree{Root: root, dirs: map[string]bool{"": true}}
	var files []walkEntry
	var total int64
	entries := 0
	folded := map[string]string{}
	capHit := false
	err := filepath.WalkDir(root, func(abs string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if abs == root {
			if !d.IsDir() {
				return fmt.Errorf("%s is not a directory", root)
			}
			return nil
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		entries++
		if entries > lim.MaxEntries {
			ps.addLimit(".", RuleTreeTooManyEntries, LimitMaxEntries, "the bundle has more than %d files, directories and symlinks; remove what the plugin does not need, or raise the cap", lim.MaxEntries)
			capHit = true
			return filepath.SkipAll
		}
		if !checkPath(&ps, rel, lim.MaxPathLen) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		key := foldPath(rel)
		if other, ok := folded[key]; ok {
			ps.add(rel, RulePathCaseCollision, "%q and %q differ only in case or Unicode normalization and would collide on macOS and Windows; rename one", other, rel)
		} else {
			folded[key] = rel
		}
		typ := d.Type()
		switch {
		case typ.IsDir():
			t.dirs[rel] = true
		case typ&fs.ModeSymlink != 0:
			target, err := os.Readlink(abs)
			if err != nil {
				return err
			}
			files = append(files, walkEntry{rel: rel, abs: abs, mode: ModeSymlink, size: int64(len(target)), target: target})
		case typ.IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			if linkCount(fi) > 1 {
				ps.add(rel, RuleHardLink, "this file is a hard link (it has %d names); replace it with a copy or a relative symlink", linkCount(fi))
				return nil
			}
			m := ModeFile
			if fi.Mode().Perm()&0o111 != 0 {
				m = ModeExec
			}
			total += fi.Size()
			if total > lim.MaxTotalSize {
				ps.addLimit(".", RuleTreeTooLarge, LimitMaxTotalSize, "the bundle's files add up to more than %d bytes; remove what the plugin does not need, or raise the cap", lim.MaxTotalSize)
				capHit = true
				return filepath.SkipAll
			}
			files = append(files, walkEntry{rel: rel, abs: abs, mode: m, size: fi.Size()})
		default:
			ps.add(rel, RuleSpecialFile, "this is a %s; a bundle may hold only regular files, directories and symlinks; remove it", specialKind(typ))
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if capHit {
		return t, ps.sorted(), nil
	}
	listing, err := hashEntries(ctx, files)
	if err != nil {
		return nil, nil, err
	}
	t.Listing = listing
	checkSymlinks(&ps, t)
	return t, ps.sorted(), nil
}

func specialKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// checkPath applies the path rules shared by directories and archives.
func checkPath(ps *problems, rel string, maxLen int) bool {
	if len(rel) > maxLen {
		ps.addLimit(shorten(rel), RulePathTooLong, LimitMaxPathLen, "this path is %d bytes, over the cap of %d; shorten it, or raise the cap", len(rel), maxLen)
		return false
	}
	if !utf8.ValidString(rel) {
		ps.add(fmt.Sprintf("%q", rel), RulePathCharacters, "this path is not valid UTF-8; rename it")
		return false
	}
	for _, r := range rel {
		if r == '\\' || r == 0 || unicode.IsControl(r) {
			ps.add(fmt.Sprintf("%q", rel), RulePathCharacters, "this path contains %s, which other systems read differently; rename it", describeRune(r))
			return false
		}
	}
	if why := windowsName(rel); why != "" {
		ps.add(fmt.Sprintf("%q", rel), RulePathWindowsName, "this path %s, which Windows cannot create or reads as something else; rename it", why)
		return false
	}
	return true
}

// windowsReserved are the device names Windows reserves in every
// directory, with any extension.
var windowsReserved = func() map[string]bool {
	m := map[string]bool{"CON": true, "PRN": true, "AUX": true, "NUL": true, "CONIN$": true, "CONOUT$": true}
	for _, d := range []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "¹", "²", "³"} {
		m["COM"+d], m["LPT"+d] = true, true
	}
	return m
}()

// windowsName says why a slash-separated path cannot be a Windows path: a
// component that is a reserved device name (with any extension: "nul.txt"),
// ends in '.' or ' ', or holds a character Windows does not allow in names
// (':' names an alternate data stream or a drive). "" when it can.
func windowsName(rel string) string {
	for _, c := range strings.Split(rel, "/") {
		if i := strings.IndexAny(c, `:<>"|?*`); i >= 0 {
			return fmt.Sprintf("has %q in the name %q", c[i], c)
		}
		if strings.HasSuffix(c, ".") || strings.HasSuffix(c, " ") {
			return fmt.Sprintf("has the name %q, which ends in a dot or a space", c)
		}
		base, _, _ := strings.Cut(c, ".")
		if windowsReserved[strings.ToUpper(strings.TrimRight(base, " "))] {
			return fmt.Sprintf("has the name %q, a device name that Windows reserves", c)
		}
	}
	return ""
}

func describeRune(r rune) string {
	switch r {
	case '\\':
		return "a backslash"
	case 0:
		return "a NUL byte"
	}
	return fmt.Sprintf("the control character U+%04X", r)
}

func shorten(s string) string {
	if len(s) <= 80 {
		return s
	}
	return s[:60] + "…" + s[len(s)-16:]
}

var folder = cases.Fold()

// foldPath maps paths that collide on case-insensitive, normalization-
// insensitive file systems to the same key.
func foldPath(p string) string {
	ascii := true
	for i := 0; i < len(p); i++ {
		if p[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(p)
	}
	return folder.String(norm.NFD.String(p))
}

// checkSymlinks requires every symlink to resolve, inside the tree, to an
// existing file or directory of the tree.
func checkSymlinks(ps *problems, t *Tree) {
	for _, e := range t.Listing.Entries {
		if e.Mode != ModeSymlink {
			continue
		}
		if path.IsAbs(e.Target) || filepath.IsAbs(e.Target) {
			ps.add(e.Path, RuleSymlinkEscapes, "this symlink points to the absolute path %q; point it at a relative path inside the bundle", e.Target)
			continue
		}
		if escapes(path.Dir(e.Path), e.Target, t) {
			ps.add(e.Path, RuleSymlinkEscapes, "this symlink points to %q, outside the bundle; point it at a path inside the bundle or replace it with a copy", e.Target)
			continue
		}
		if _, ok := t.resolve(e.Path); !ok {
			ps.add(e.Path, RuleSymlinkDangling, "this symlink points to %q, which does not exist in the bundle; fix or remove it", e.Target)
		}
	}
}

// escapes reports whether following target from dir leaves the tree at any
// step. Paths that do not exist are walked lexically, so only leaving the
// tree counts here.
func escapes(dir, target string, t *Tree) bool {
	if dir == "." {
		dir = ""
	}
	_, st := resolveIn(dir+"/"+target, func(p string) (bool, string, bool) {
		exists, tgt, isLink := t.stat(p)
		return true, tgt, exists && isLink
	})
	return st == escaped
}

// hashEntries hashes regular files in parallel and builds the sorted
// listing.
func hashEntries(ctx context.Context, files []walkEntry) (*Listing, error) {
	l := &Listing{Entries: make([]Entry, len(files))}
	for i, f := range files {
		l.Entries[i] = Entry{Path: f.rel, Mode: f.mode, Size: f.size, Target: f.target}
		if f.mode == ModeSymlink {
			l.Entries[i].SHA256 = sha256.Sum256([]byte(f.target))
		}
	}
	var report io.Writer // nil: no one asked
	if f := hashProgress(ctx); f != nil {
		var total int64
		for _, fl := range files {
			if fl.mode != ModeSymlink {
				total += fl.size
			}
		}
		report = progressWriter{done: new(atomic.Int64), total: total, f: f}
	}
	workers := min(runtime.GOMAXPROCS(0), 8, len(files))
	var (
		wg      sync.WaitGroup
		next    = make(chan int)
		errOnce sync.Once
		first   error
	)
	for range workers {
		wg.Go(func() {
			buf := make([]byte, 256<<10)
			for i := range next {
				f := files[i]
				sum, err := hashFile(f.abs, f.size, buf, report)
				if err != nil {
					errOnce.Do(func() { first = err })
					continue
				}
				l.Entries[i].SHA256 = sum
			}
		})
	}
	for i, f := range files {
		if f.mode == ModeSymlink {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(l.Entries, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return l, nil
}

// openNoFollow opens a file of a bundle for reading, never through a
// symbolic link and never blocking on a FIFO.
func openNoFollow(name string) (*os.File, error) { return fsx.OpenNoFollow(name, os.O_RDONLY, 0) }

// errChanged reports a file that changed while berth read it.
var errChanged = fsx.ErrReadChanged

// hashFile hashes a regular file of the expected size, refusing to follow a
// symlink swapped in after the walk.
func hashFile(name string, size int64, buf []byte, report io.Writer) ([32]byte, error) {
	var sum [32]byte
	f, err := openNoFollow(name)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return sum, err
	}
	if !fi.Mode().IsRegular() || fi.Size() != size {
		return sum, fmt.Errorf("%s: %w; make sure nothing writes to the bundle and try again", name, errChanged)
	}
	h := sha256.New()
	var w io.Writer = h
	if report != nil {
		w = io.MultiWriter(h, report)
	}
	n, err := io.CopyBuffer(w, io.LimitReader(f, size+1), buf)
	if err != nil {
		return sum, err
	}
	if n != size {
		return sum, fmt.Errorf("%s: %w; make sure nothing writes to the bundle and try again", name, errChanged)
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// Dirs returns the tree's directories, sorted, without the root.
func (t *Tree) Dirs() []string {
	out := make([]string, 0, len(t.dirs))
	for d := range t.dirs {
		if d != "" {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}
