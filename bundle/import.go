package bundle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/berth-mcp/berth/bundle/runtimefetch"
	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/internal/strictjson"
)

// Import says how Open read a source of another format (a registered
// Format): it converted the source's manifest into a berth.json, which it wrote beside the source's
// files in the tree it validated (Bundle.Dir), so the digest, the review,
// staging and drift cover exactly what berth import writes.
type Import struct {
	// Format is the Format's Name: FormatMCPB, FormatClaudePlugin or
	// FormatMCPRegistry for the formats of package bundle/formats.
	Format string
	// Manifest is the source's manifest, relative to the bundle root.
	Manifest string
	// Signature describes the signature block appended to a .mcpb file,
	// nil when there was none. berth's trust does not rest on it.
	Signature *MCPBSignature
	// Pinned are the runtime fetches Options.Pin pinned, in the order of
	// importedFrom.pinned, with when and where each was resolved.
	Pinned []PinRecord
}

// PinRecord is one fetch pinned on import: what importedFrom.pinned
// records, and when and where it was resolved, which the manifest does
// not hold (the trust record and the review do).
type PinRecord struct {
	PinnedFetch
	// Tool is the runner: "npx", "uvx", "docker run", ...
	Tool string `json:"tool"`
	// Registry is the registry it was resolved against.
	Registry string `json:"registry"`
	// At is when it was resolved.
	At time.Time `json:"at"`
}

// importState is what Open keeps of a conversion until the problems are
// final.
type importState struct {
	conv *Conversion
	// file is the source's manifest file.
	file string
	// tree holds the problems of a source directory's own tree, which
	// was read before it was copied.
	tree []*Problem
	// stop is set when the source could not be converted at all, so
	// berth.json was not written.
	stop bool
	// pinnable are the args paths of the generated berth.json whose
	// unpinned fetch berth import --pin can resolve (a refusal there
	// names --pin).
	pinnable map[string]bool
}

// sourceKind says how a regular file is read: KindTarGz, KindZip (also a
// zip of one of formats, such as a .mcpb, and any zip by its magic bytes)
// or KindJSON (a JSON file, such as a server.json). "" means berth does
// not read it.
func sourceKind(name string, formats []*Format) Kind {
	if k := ArchiveKind(name); k != "" {
		return k
	}
	for _, f := range formats {
		if f.ArchiveExt != "" && strings.HasSuffix(strings.ToLower(name), f.ArchiveExt) {
			return KindZip
		}
	}
	f, err := os.Open(name)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return KindZip
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return KindTarGz
	case bytes.HasPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte("{")):
		return KindJSON
	}
	return ""
}

// unpack puts a regular-file source into b.Dir: an archive is extracted
// (a block a format appends to a zip, such as a .mcpb's signature block,
// removed first), a JSON file is copied in as the manifest of the format
// that takes it (a server.json).
func (b *Bundle) unpack(ctx context.Context, source string, kind Kind, lim *Limits, formats []*Format) ([]*Problem, error) {
	if kind != KindJSON {
		ps, sig, err := extract(ctx, source, kind, b.Dir, lim, formats)
		if sig != nil {
			b.Import = &Import{Signature: sig}
		}
		return ps, err
	}
	f, err := os.Open(source)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxManifestSize+1))
	f.Close()
	if err != nil {
		return nil, err
	}
	if LooksLike(data, "manifestVersion") {
		return nil, fmt.Errorf("%s is a berth manifest, not a bundle; point berth at the directory that holds berth.json, or its archive", source)
	}
	var taker *Format
	for _, fm := range formats {
		if fm.File == nil {
			continue
		}
		take, err := fm.File(source, data)
		if err != nil {
			return nil, err
		}
		if take && taker == nil {
			taker = fm
		}
	}
	if taker == nil {
		return nil, fmt.Errorf("%s is a JSON file, and this program reads no format of one (a program reads MCP Registry server.json files when it imports github.com/berth-mcp/berth/bundle/formats); point berth at the bundle directory or its archive", source)
	}
	return nil, os.WriteFile(filepath.Join(b.Dir, filepath.FromSlash(taker.Manifest)), data, 0o644)
}

// LooksLike reports whether data is a JSON object with one of keys at its
// top. It is a sniff, not a check (duplicate keys and all else pass): the
// test of a Format's Claims and File, and of berth.json given as a file.
func LooksLike(data []byte, keys ...string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return false
	}
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

func lexists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// detect finds the format of the tree at dir among formats. A berth.json
// wins, with a note for every other manifest beside it.
func detect(dir string, formats []*Format) (format *Format, notes []string, problem *Problem) {
	has := func(rel string) bool { return fsx.ExistsIn(dir, rel) }
	var found []*Format
	for _, f := range formats {
		if has(f.Manifest) {
			found = append(found, f)
		}
	}
	if has(ManifestFile) {
		from := importedManifest(dir)
		for _, f := range found {
			if f.Manifest == from {
				notes = append(notes, fmt.Sprintf("berth.json was imported from %s (%s), which is kept beside it; berth reads berth.json", from, f.Title))
				continue
			}
			notes = append(notes, fmt.Sprintf("%s is read as the manifest; %s (%s) beside it is ignored", ManifestFile, f.Manifest, f.Title))
		}
		return nil, notes, nil
	}
	if len(found) > 1 {
		// A plain file of that name may sit in a bundle of another
		// format: only one that looks like its format counts.
		var real []*Format
		for _, f := range found {
			if f.Claims == nil {
				real = append(real, f)
				continue
			}
			data, err := fsx.ReadIn(dir, f.Manifest, MaxManifestSize)
			if err == nil && f.Claims(data) {
				real = append(real, f)
			}
		}
		found = real
	}
	switch len(found) {
	case 0:
		for _, f := range formats {
			if f.Hint != nil {
				if p := f.Hint(has); p != nil {
					return nil, nil, p
				}
			}
		}
		return nil, nil, nil
	case 1:
		return found[0], nil, nil
	}
	var files []string
	for _, f := range found {
		files = append(files, f.Manifest+" ("+f.Title+")")
	}
	return nil, nil, &Problem{Path: ".", Rule: RuleImportAmbiguous, Message: fmt.Sprintf("the bundle has no berth.json and holds %s; berth does not guess which one is meant: remove the others, or write a berth.json", strings.Join(files, " and "))}
}

// importedManifest returns importedFrom.manifest of dir/berth.json, or "".
func importedManifest(dir string) string {
	data, err := fsx.ReadIn(dir, ManifestFile, MaxManifestSize)
	if err != nil {
		return ""
	}
	var m struct {
		ImportedFrom struct {
			Manifest string `json:"manifest"`
		} `json:"importedFrom"`
	}
	if json.Unmarshal(data, &m) != nil {
		return ""
	}
	return m.ImportedFrom.Manifest
}

// prepareImport is Open's hook for other formats, called once b.Dir holds
// the source's files and before the tree is read. For a source of a
// registered format it converts the source's manifest and writes the
// generated berth.json into the tree (copying a source directory first,
// so the source is never written to). Problems of the conversion are kept
// until finishImport.
func (b *Bundle) prepareImport(ctx context.Context, opts *Options, formats []*Format) error {
	format, notes, problem := detect(b.Dir, formats)
	b.Notes = append(b.Notes, notes...)
	if problem != nil {
		b.imp = &importState{stop: true}
		b.imp.tree = append(b.imp.tree, problem)
		return nil
	}
	if format == nil {
		if b.Import != nil {
			// A berth bundle's zip with an MCPB signature block: the
			// block is no part of the bundle.
			b.Notes = append(b.Notes, "the file ends with an MCPB signature block, which berth ignores: berth verifies Sigstore signatures over its canonical listing")
			b.Import = nil
		}
		return nil
	}
	st := &importState{file: format.Manifest}
	b.imp = st
	if b.Kind == KindDirectory {
		tree, tps, err := ReadTree(ctx, b.Dir, &opts.Limits)
		if err != nil {
			return fmt.Errorf("cannot read bundle %s: %w", b.Source, err)
		}
		st.tree = tps
		if tree.Listing == nil {
			st.stop = true
			return nil
		}
		tmp, err := os.MkdirTemp(opts.TempDir, "berth-import-")
		if err != nil {
			return err
		}
		b.tmp = tmp
		dst := filepath.Join(tmp, "bundle")
		if err := copyListed(ctx, tree, dst, false); err != nil {
			return fmt.Errorf("cannot copy %s: %w", b.Source, err)
		}
		b.Dir = dst
	}
	var c *Conversion
	switch {
	case len(opts.Without) == 0:
		c = format.Convert(b.Dir)
	case format.ConvertWithout == nil:
		return fmt.Errorf("--without leaves out servers of a Claude Code plugin; %s is %s", b.Source, format.Title)
	default:
		var err error
		if c, err = format.ConvertWithout(b.Dir, opts.Without); err != nil {
			return fmt.Errorf("%s: %w", b.Source, err)
		}
	}
	if c == nil {
		c = &Conversion{}
	}
	st.conv = c
	if b.Import == nil {
		b.Import = &Import{}
	}
	b.Import.Format, b.Import.Manifest = format.Name, format.Manifest
	if c.Manifest == nil {
		st.stop = true
		return nil
	}
	if err := b.pinFetches(ctx, opts, st); err != nil {
		return err
	}
	if err := b.deriveVersion(ctx, opts, c.Manifest); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(b.Dir, ManifestFile), EncodeManifest(c.Manifest), 0o644)
}

// deriveVersion gives a generated manifest whose source has no version
// (importedFrom.derivedVersion set by the importer) the version derived
// from the final bundle (DerivedDigest, DerivedVersionOf): the source's
// files in b.Dir and m as it will be written, so that --without, --pin
// and anything else in the generated berth.json are covered, and one
// derived version never names two bundles.
func (b *Bundle) deriveVersion(ctx context.Context, opts *Options, m *Manifest) error {
	if m.ImportedFrom == nil || m.ImportedFrom.DerivedVersion == nil {
		return nil
	}
	tree, _, err := ReadTree(ctx, b.Dir, &opts.Limits)
	if err != nil {
		return fmt.Errorf("cannot read bundle %s: %w", b.Source, err)
	}
	if tree.Listing == nil {
		return nil // the tree's problems are reported when it is read again
	}
	d := DerivedDigest(tree.Listing, m)
	m.Version = DerivedVersionOf(d)
	m.ImportedFrom.DerivedVersion = &DerivedVersion{ContentDigest: d}
	return nil
}

// finishImport turns the problems of the generated berth.json into
// problems of the source: each is located at the source file and field it
// came from, and one at a place where the importer already reported a
// problem is dropped (the importer's says it in the source's terms). The
// problems of the file tree (tree, which ReadTree found; they are in ps
// too) are located by file path already and are all kept.
func (b *Bundle) finishImport(ps *problems, tree []*Problem) {
	st := b.imp
	if st == nil {
		return
	}
	ofTree := map[*Problem]bool{}
	for _, p := range tree {
		ofTree[p] = true
	}
	var out []*Problem
	seen := map[[2]string]bool{}
	keep := func(p *Problem) {
		k := [2]string{p.Path, p.Rule}
		if !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	for _, p := range st.tree {
		keep(p)
	}
	c := st.conv
	var reported, unpinned []string
	if c != nil {
		for _, p := range c.Problems {
			reported = append(reported, p.Path)
			if p.Rule == RuleRegistryUnpinned || p.Rule == RuleRegistryOCIDigest {
				unpinned = append(unpinned, p.Path)
			}
			if strings.HasSuffix(p.Rule, "-required-field") {
				// An absent field: what holds it is incomplete.
				if file, path, ok := strings.Cut(p.Path, ": "); ok && parentPath(path) != "" {
					reported = append(reported, file+": "+parentPath(path))
				}
			}
			keep(p)
		}
	}
	// covered reports whether the importer reported a problem at loc or
	// at a place that holds loc: what the importer refused there is
	// missing or partial in the generated manifest, so a problem of the
	// generated manifest at loc follows from that one. A problem at a
	// place that only holds the importer's (a server whose one argument
	// was refused, where npx is also unpinned) is a problem of its own and
	// is kept: every problem is reported at once.
	covered := func(loc string) bool {
		for _, r := range reported {
			if r == loc || strings.HasPrefix(loc, r+".") || strings.HasPrefix(loc, r+"[") || strings.HasPrefix(loc, r+": ") {
				return true
			}
		}
		return false
	}
	// saidUnpinned reports whether the importer already refused the
	// package fetched at loc as unpinned (a server.json version or image
	// tag, at loc or inside it): the generated command's own unpinned
	// problem is the same one.
	saidUnpinned := func(loc string) bool {
		for _, r := range unpinned {
			if r == loc || strings.HasPrefix(r, loc+".") || strings.HasPrefix(r, loc+"[") {
				return true
			}
		}
		return false
	}
	var hostsMissing []*Problem
	for _, p := range ps.list {
		if ofTree[p] {
			keep(p)
			continue
		}
		if st.stop {
			// Nothing was generated: the missing berth.json is not the
			// source's problem.
			continue
		}
		if c == nil {
			keep(p)
			continue
		}
		loc, ok := st.locate(p.Path)
		if !ok {
			keep(p)
			continue
		}
		if (p.Rule == RuleRuntimeFetchUnpinned || p.Rule == RuleRuntimeFetchImageDigest) && saidUnpinned(loc) {
			continue
		}
		if covered(loc) || (p.Rule == RuleNoComponents && len(reported) > 0) {
			// A server the importer could not convert is missing from
			// mcpServers: its problem says why.
			continue
		}
		msg := p.Message
		if st.pinnable[p.Path] && (p.Rule == RuleRuntimeFetchUnpinned || p.Rule == RuleRuntimeFetchImageDigest) {
			msg += "; or let berth resolve it against the registry now and record the exact version: berth import --pin SOURCE (berth install --pin for an entry of an unsigned catalog)"
		}
		q := &Problem{Path: loc, Rule: p.Rule, Message: msg + " (in berth's terms: " + generatedPath(p.Path) + ")"}
		if p.Rule == RuleNetworkHostsMissing {
			// The importer writes network.hosts from the url; when it
			// could not, the url's own problem says why.
			hostsMissing = append(hostsMissing, q)
			continue
		}
		keep(q)
	}
	for _, q := range hostsMissing {
		if !slices.ContainsFunc(out, func(p *Problem) bool { return p.Path == q.Path }) {
			keep(q)
		}
	}
	ps.list = out
}

func generatedPath(p string) string {
	if p == "." || p == "" {
		return "the generated berth.json"
	}
	return p + " of the generated berth.json"
}

// locate maps a path of the generated berth.json to the source: the
// longest recorded prefix.
func (st *importState) locate(p string) (string, bool) {
	if p == "." || p == ManifestFile {
		return st.file, true
	}
	for q := p; q != ""; q = parentPath(q) {
		if loc, ok := st.conv.Locations[q]; ok {
			return loc, true
		}
	}
	return "", false
}

// parentPath drops the last segment of a JSON path: a.b[0] → a.b → a.
func parentPath(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndexByte(p, '['); i >= 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

// copyListed copies the listed files, symlinks and directories of tree into
// dst, which must not exist, checking each file against its listed hash.
// durable syncs each file to disk (for a copy that outlives berth).
func copyListed(ctx context.Context, tree *Tree, dst string, durable bool) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	for _, d := range tree.Dirs() {
		if err := os.MkdirAll(filepath.Join(dst, filepath.FromSlash(d)), 0o755); err != nil {
			return err
		}
	}
	buf := make([]byte, 256<<10)
	for _, e := range tree.Listing.Entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		to := filepath.Join(dst, filepath.FromSlash(e.Path))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if e.Mode == ModeSymlink {
			if err := os.Symlink(e.Target, to); err != nil {
				return err
			}
			continue
		}
		perm := os.FileMode(0o644)
		if e.Mode == ModeExec {
			perm = 0o755
		}
		if err := copyChecked(filepath.Join(tree.Root, filepath.FromSlash(e.Path)), to, perm, e, buf, durable); err != nil {
			return err
		}
	}
	return nil
}

// copyChecked copies the listed file e (at from) to the new file to,
// checking it against its listed size and hash while it copies. A file
// that is no longer a regular file of that content is errChanged; a
// symbolic link in its place is refused by the open.
func copyChecked(from, to string, perm os.FileMode, e Entry, buf []byte, durable bool) error {
	err := fsx.CopyFile(from, to, fsx.Copy{Size: e.Size, SHA256: e.SHA256, Perm: perm, Sync: durable, Buf: buf})
	switch {
	case fsx.IsSymlinkRefusal(err):
		return err
	case errors.Is(err, fsx.ErrChanged):
		return fmt.Errorf("%s: %w; make sure nothing writes to the bundle and try again", from, errChanged)
	case err != nil:
		return err
	}
	return os.Chmod(to, perm)
}

// WriteTree writes the bundle's tree (for a source of another format, the
// source's files and the generated berth.json) into the new directory
// dir, and checks that the copy has the bundle's digest. The directory is
// written under a temporary name beside dir and renamed into place, so it
// appears whole or not at all. b must be valid.
func (b *Bundle) WriteTree(ctx context.Context, dir string) error {
	if b.Tree == nil || b.Listing() == nil || b.Digest == "" {
		panic("bundle: WriteTree needs a bundle that Open accepted")
	}
	if lexists(dir) {
		return fmt.Errorf("%s already exists; name a new directory", dir)
	}
	parent := filepath.Dir(dir)
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	staged := filepath.Join(tmp, "tree")
	err = copyListed(ctx, b.Tree, staged, true)
	if err == nil {
		var tree *Tree
		var ps []*Problem
		tree, ps, err = ReadTree(ctx, staged, b.Tree.limitsToRead())
		if err == nil && (len(ps) > 0 || tree.Listing == nil || tree.Listing.Digest() != b.Digest) {
			err = errors.New("the written copy does not have the bundle's digest (did something change the source while berth copied it?); try again")
		}
	}
	if err == nil {
		err = os.Rename(staged, dir)
	}
	if rerr := atomicfile.RemoveTree(tmp); err == nil {
		err = rerr
	}
	return err
}

// limitsToRead are caps under which the tree can be read again: the
// defaults, raised to what the tree holds.
func (t *Tree) limitsToRead() *Limits {
	lim := (&Limits{}).withDefaults()
	n := len(t.dirs) + len(t.Listing.Entries)
	lim.MaxEntries = max(lim.MaxEntries, n)
	lim.MaxTotalSize = max(lim.MaxTotalSize, t.Listing.TotalSize())
	for _, e := range t.Listing.Entries {
		lim.MaxPathLen = max(lim.MaxPathLen, len(e.Path))
	}
	return &lim
}

// OnlyServer returns the source's name of the one server that holds every
// problem of ps (as Load returned them), when b was converted from a
// source of another format and all of ps lie in one of its servers; ""
// otherwise. Options.Without leaves such a server out.
func (b *Bundle) OnlyServer(ps []*Problem) string {
	if b.imp == nil || b.imp.conv == nil || len(ps) == 0 {
		return ""
	}
	found := ""
	for _, p := range ps {
		in := ""
		for name, loc := range b.imp.conv.Servers {
			if p.Path == loc || strings.HasPrefix(p.Path, loc+".") || strings.HasPrefix(p.Path, loc+"[") {
				in = name
				break
			}
		}
		if in == "" || (found != "" && in != found) {
			return ""
		}
		found = in
	}
	return found
}

// pinFetches pins, with opts.Pin, the runtime fetches of the generated
// manifest that are refused only for being unpinned, and records each in
// importedFrom.pinned and b.Import.Pinned. Without opts.Pin it only notes
// where --pin would help. A resolution that fails is a problem of the
// source (runtime-fetch-pin), and the fetch stays unpinned.
func (b *Bundle) pinFetches(ctx context.Context, opts *Options, st *importState) error {
	m := st.conv.Manifest
	st.pinnable = map[string]bool{}
	var pinned []PinnedFetch
	for _, name := range slices.Sorted(maps.Keys(m.MCPServers)) {
		s := m.MCPServers[name]
		if s == nil || s.Stdio == nil {
			continue
		}
		_, err := runtimefetch.Read(s.Stdio.Command, s.Stdio.Args)
		var ce *runtimefetch.CommandError
		if !errors.As(err, &ce) || ce.Unpinned == nil {
			continue
		}
		at := strictjson.JoinPath("mcpServers", name) + ".stdio.args"
		st.pinnable[at] = true
		if opts.Pin == nil || m.ImportedFrom == nil {
			continue
		}
		pin, err := opts.Pin(ctx, ce.Unpinned)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			loc, ok := st.locate(at)
			if !ok {
				loc = st.file
			}
			st.conv.Problems = append(st.conv.Problems, &Problem{Path: loc, Rule: RuleRuntimeFetchPin, Message: fmt.Sprintf("%v; the fetch stays unpinned, and berth does not import it: pin it in the source, or try again when the registry answers", err)})
			continue
		}
		s.Stdio.Args = ce.Unpinned.Apply(s.Stdio.Args, pin.Resolved)
		if loc, ok := st.locate(at); ok {
			// An importer's own refusal of this unpinned package (a
			// server.json version or image tag) is answered by the pin.
			st.conv.Problems = slices.DeleteFunc(st.conv.Problems, func(p *Problem) bool {
				return (p.Rule == RuleRegistryUnpinned || p.Rule == RuleRegistryOCIDigest) && (p.Path == loc || strings.HasPrefix(p.Path, loc+".") || strings.HasPrefix(p.Path, loc+"["))
			})
		}
		pf := PinnedFetch{Server: name, Package: ce.Unpinned.Name + ce.Unpinned.Extras(), Requested: pin.Requested, Resolved: pin.Resolved}
		pinned = append(pinned, pf)
		b.Import.Pinned = append(b.Import.Pinned, PinRecord{PinnedFetch: pf, Tool: ce.Unpinned.Tool, Registry: pin.Registry, At: time.Now().UTC().Truncate(time.Second)})
	}
	if len(pinned) > 0 {
		m.ImportedFrom.Pinned = pinned
	}
	return nil
}
