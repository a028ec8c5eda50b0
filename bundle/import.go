package bundle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/berth-mcp/berth/internal/atomicfile"
)

// Import says how Open read a source of another format: it converted the
// source's manifest into a berth.json, which it wrote beside the source's
// files in the tree it validated (Bundle.Dir), so the digest, the review,
// staging and drift cover exactly what berth import writes.
type Import struct {
	// Format is FormatMCPB, FormatClaudePlugin or FormatMCPRegistry.
	Format string
	// Manifest is the source's manifest, relative to the bundle root.
	Manifest string
	// Signature describes the signature block appended to a .mcpb file,
	// nil when there was none. berth's trust does not rest on it.
	Signature *MCPBSignature
}

// Source manifests berth recognizes.
const (
	mcpbManifest     = "manifest.json"
	claudeManifest   = ".claude-plugin/plugin.json"
	claudeMCPFile    = ".mcp.json"
	registryManifest = "server.json"
)

// importState is what Open keeps of a conversion until the problems are
// final.
type importState struct {
	conv *conversion
	// tree holds the problems of a source directory's own tree, which
	// was read before it was copied.
	tree []*Problem
	// stop is set when the source could not be converted at all, so
	// berth.json was not written.
	stop bool
}

// conversion is the result of converting one source manifest.
type conversion struct {
	format       string
	manifestFile string
	manifest     *Manifest
	// locs maps the JSON paths of the generated berth.json to the
	// source's file and field.
	locs map[string]string
	ps   problems
}

func newConversion(format, file string) *conversion {
	return &conversion{format: format, manifestFile: file, locs: map[string]string{}}
}

// at records that the berth path p comes from the source location loc.
// The validator writes some keys as a.b.c even when they hold dots, so
// both spellings are recorded.
func (c *conversion) at(p, loc string) {
	c.locs[p] = loc
	c.locs[dotted(p)] = loc
}

// carry copies the string top[key] into *dst and records that the
// manifest field key comes from the source's key. A value that is not a
// string, or a required one that is absent, is a problem of top's doc.
func (c *conversion) carry(top obj, key string, required bool, dst *string) bool {
	s, ok := top.str(key, required)
	if ok {
		*dst = s
	}
	c.at(key, top.d.loc(top.at(key)))
	return ok
}

// dotted writes a path's quoted keys (a["x.y"]) as plain ones (a.x.y).
func dotted(p string) string {
	var b strings.Builder
	for {
		i := strings.Index(p, `["`)
		if i < 0 {
			break
		}
		j := strings.Index(p[i:], `"]`)
		if j < 0 {
			break
		}
		b.WriteString(p[:i])
		b.WriteString(".")
		key, err := strconv.Unquote(p[i+1 : i+j+1])
		if err != nil {
			key = p[i+2 : i+j]
		}
		b.WriteString(key)
		p = p[i+j+2:]
	}
	b.WriteString(p)
	return strings.TrimPrefix(b.String(), ".")
}

// sourceKind says how a regular file is read: KindTarGz, KindZip (also a
// .mcpb, and any zip by its magic bytes) or KindJSON (a server.json). ""
// means berth does not read it.
func sourceKind(name string) Kind {
	if k := ArchiveKind(name); k != "" {
		return k
	}
	if strings.HasSuffix(strings.ToLower(name), ".mcpb") {
		return KindZip
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
// (a .mcpb's signature block removed first), a server.json is copied in as
// server.json.
func (b *Bundle) unpack(ctx context.Context, source string, kind Kind, lim *Limits) ([]*Problem, error) {
	if kind != KindJSON {
		ps, sig, err := extract(ctx, source, kind, b.Dir, lim)
		if sig != nil {
			b.Import = &Import{Signature: sig}
		}
		return ps, err
	}
	f, err := os.Open(source)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxForeignSize+1))
	f.Close()
	if err != nil {
		return nil, err
	}
	switch {
	case looksLike(data, "manifest_version", "dxt_version"):
		return nil, fmt.Errorf("%s is an MCP Bundle manifest, not a bundle; point berth at the .mcpb file or the directory that holds manifest.json", source)
	case looksLike(data, "manifestVersion"):
		return nil, fmt.Errorf("%s is a berth manifest, not a bundle; point berth at the directory that holds berth.json, or its archive", source)
	case looksLike(data, "mcpServers"):
		return nil, fmt.Errorf("%s holds MCP servers of a Claude Code plugin, not a bundle; point berth at the plugin's directory (the one that holds .claude-plugin/plugin.json)", source)
	}
	return nil, os.WriteFile(filepath.Join(b.Dir, registryManifest), data, 0o644)
}

// readIn reads the regular file rel (slash-separated) of the tree at dir,
// of at most max bytes (one more is read, so the caller can tell it is too
// large). rel is resolved inside dir only (os.Root): a symlink on the way
// that leads out of the tree is an error, so an importer never reads a
// file outside the bundle. rel itself may not be a symlink.
func readIn(dir, rel string, max int64) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	name := filepath.FromSlash(rel)
	fi, err := root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !os.SameFile(fi, st) {
		return nil, fmt.Errorf("%s: %w", rel, errChanged)
	}
	return io.ReadAll(io.LimitReader(f, max+1))
}

// lstatIn is os.Lstat of rel (slash-separated) inside the tree at dir,
// resolved as readIn resolves it: a path that leads out of the tree
// through a symlink is an error.
func lstatIn(dir, rel string) (fs.FileInfo, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.Lstat(filepath.FromSlash(rel))
}

// existsIn reports whether rel names something inside the tree at dir.
func existsIn(dir, rel string) bool {
	_, err := lstatIn(dir, rel)
	return err == nil
}

// looksLike reports whether data is a JSON object with one of keys.
func looksLike(data []byte, keys ...string) bool {
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

// detect finds the format of the tree at dir. A berth.json wins, with a
// note for every other manifest beside it.
func detect(dir string) (format string, notes []string, problem *Problem) {
	has := func(rel string) bool { return existsIn(dir, rel) }
	peek := func(rel string, keys ...string) bool {
		data, err := readIn(dir, rel, maxForeignSize)
		return err == nil && looksLike(data, keys...)
	}
	var found []string
	if has(mcpbManifest) {
		found = append(found, FormatMCPB)
	}
	if has(claudeManifest) {
		found = append(found, FormatClaudePlugin)
	}
	if has(registryManifest) {
		found = append(found, FormatMCPRegistry)
	}
	if has(ManifestFile) {
		from := importedManifest(dir)
		for _, f := range found {
			if sourceFile(f) == from {
				notes = append(notes, fmt.Sprintf("berth.json was imported from %s (%s), which is kept beside it; berth reads berth.json", from, formatName(f)))
				continue
			}
			notes = append(notes, fmt.Sprintf("%s is read as the manifest; %s (%s) beside it is ignored", ManifestFile, sourceFile(f), formatName(f)))
		}
		return FormatBerth, notes, nil
	}
	if len(found) > 1 {
		// A plain file of that name may sit in a bundle of another
		// format: only one that looks like its format counts.
		var real []string
		for _, f := range found {
			switch {
			case f == FormatMCPB && peek(mcpbManifest, "manifest_version", "dxt_version"),
				f == FormatClaudePlugin,
				f == FormatMCPRegistry && peek(registryManifest, "$schema", "packages", "remotes"):
				real = append(real, f)
			}
		}
		found = real
	}
	switch len(found) {
	case 0:
		if has(claudeMCPFile) {
			return "", nil, &Problem{Path: claudeManifest, Rule: RuleClaudeManifestMissing, Message: "this looks like a Claude Code plugin (it has .mcp.json), but it has no .claude-plugin/plugin.json; add one with at least \"name\" and \"version\", or write a berth.json (docs/manifest.md)"}
		}
		return "", nil, nil
	case 1:
		return found[0], nil, nil
	}
	var files []string
	for _, f := range found {
		files = append(files, sourceFile(f)+" ("+formatName(f)+")")
	}
	return "", nil, &Problem{Path: ".", Rule: RuleImportAmbiguous, Message: fmt.Sprintf("the bundle has no berth.json and holds %s; berth does not guess which one is meant: remove the others, or write a berth.json", strings.Join(files, " and "))}
}

// importedManifest returns importedFrom.manifest of dir/berth.json, or "".
func importedManifest(dir string) string {
	data, err := readIn(dir, ManifestFile, MaxManifestSize)
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

func sourceFile(format string) string {
	switch format {
	case FormatMCPB:
		return mcpbManifest
	case FormatClaudePlugin:
		return claudeManifest
	}
	return registryManifest
}

func formatName(format string) string {
	switch format {
	case FormatMCPB:
		return "an MCP Bundle manifest"
	case FormatClaudePlugin:
		return "a Claude Code plugin manifest"
	}
	return "an MCP Registry server.json"
}

// prepareImport is Open's hook for other formats, called once b.Dir holds
// the source's files and before the tree is read. For a source of another
// format it converts the source's manifest and writes the generated
// berth.json into the tree (copying a source directory first, so the
// source is never written to). Problems of the conversion are kept until
// finishImport.
func (b *Bundle) prepareImport(ctx context.Context, opts *Options) error {
	format, notes, problem := detect(b.Dir)
	b.Notes = append(b.Notes, notes...)
	if problem != nil {
		b.imp = &importState{stop: true}
		b.imp.tree = append(b.imp.tree, problem)
		return nil
	}
	if format == "" || format == FormatBerth {
		if b.Import != nil {
			// A berth bundle's zip with an MCPB signature block: the
			// block is no part of the bundle.
			b.Notes = append(b.Notes, "the file ends with an MCPB signature block, which berth ignores: berth verifies Sigstore signatures over its canonical listing")
			b.Import = nil
		}
		return nil
	}
	st := &importState{}
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
	var c *conversion
	switch format {
	case FormatMCPB:
		c = convertMCPB(b.Dir)
	case FormatClaudePlugin:
		c = convertClaude(b.Dir)
	case FormatMCPRegistry:
		c = convertRegistry(b.Dir)
	}
	st.conv = c
	if b.Import == nil {
		b.Import = &Import{}
	}
	b.Import.Format, b.Import.Manifest = format, c.manifestFile
	if c.manifest == nil {
		st.stop = true
		return nil
	}
	return os.WriteFile(filepath.Join(b.Dir, ManifestFile), EncodeManifest(c.manifest), 0o644)
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
	var reported []string
	if c != nil {
		for _, p := range c.ps.list {
			reported = append(reported, p.Path)
			keep(p)
		}
	}
	// covered reports whether the importer reported a problem at loc or
	// inside it: a problem of the generated manifest there follows from
	// that one.
	covered := func(loc string) bool {
		for _, r := range reported {
			if r == loc || strings.HasPrefix(r, loc+".") || strings.HasPrefix(r, loc+"[") || strings.HasPrefix(r, loc+": ") {
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
		loc, ok := c.locate(p.Path)
		if !ok {
			keep(p)
			continue
		}
		if covered(loc) || (p.Rule == RuleNoComponents && len(reported) > 0) {
			// A server the importer could not convert is missing from
			// mcpServers: its problem says why.
			continue
		}
		q := &Problem{Path: loc, Rule: p.Rule, Message: p.Message + " (in berth's terms: " + generatedPath(p.Path) + ")"}
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
func (c *conversion) locate(p string) (string, bool) {
	if p == "." || p == ManifestFile {
		return c.manifestFile, true
	}
	for q := p; q != ""; q = parentPath(q) {
		if loc, ok := c.locs[q]; ok {
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

func copyChecked(from, to string, perm os.FileMode, e Entry, buf []byte, durable bool) error {
	in, err := openNoFollow(from)
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
	if err == nil && durable {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if n != e.Size || [32]byte(h.Sum(nil)) != e.SHA256 {
		return fmt.Errorf("%s: %w; make sure nothing writes to the bundle and try again", from, errChanged)
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
