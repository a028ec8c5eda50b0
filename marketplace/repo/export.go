package repo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/internal/loopback"
	"github.com/berth-mcp/berth/marketplace/catalog"
)

// ExportSkippedFile is the file of an export that lists what it left
// out; its presence also marks a directory as an export, which only
// --force (ExportOptions.Force) replaces.
const ExportSkippedFile = "berth-export-skipped.json"

// exportAPIs are the API versions an export serves, with the same
// documents: /v0.1 is the registry's stable API and /v0 its development
// one, identical since 2025-10-17 (berth's own --registry source reads
// /v0).
var exportAPIs = []string{"v0.1", "v0"}

// ExportOptions are the optional settings of ExportRegistry; nil means
// the defaults.
type ExportOptions struct {
	// Namespace is the reverse-DNS namespace of the registry names the
	// export derives (Namespace/PLUGIN); "" is DefaultNamespace of the
	// catalog's name.
	Namespace string
	// Force replaces an OUT that holds an earlier export (it has
	// ExportSkippedFile); any other existing OUT is refused regardless.
	Force bool
	// BaseURL is the URL DIR is served at (https, or http on a loopback
	// address). With it, a version whose archive is an MCP Bundle (a
	// .mcpb added as it is) is exported as an mcpb package at BaseURL +
	// its relative URL; without it, such a version is skipped.
	BaseURL string
	// Bundle are the options the bundle archives are opened with
	// (formats, limits, temp directory).
	Bundle *bundle.Options
}

// ExportResult is what ExportRegistry wrote.
type ExportResult struct {
	// Dir is the catalog directory, as given.
	Dir string `json:"dir"`
	// Out is the export's directory, as given.
	Out string `json:"out"`
	// Catalog is the catalog's name.
	Catalog string `json:"catalog"`
	// Namespace is the namespace of the registry names the export
	// derived (NAMESPACE/PLUGIN).
	Namespace string `json:"namespace"`
	// Servers are the registry servers written, sorted by name.
	Servers []*ExportedServer `json:"servers"`
	// Skipped are the plugin versions left out, each with its rule and
	// reason; OUT/berth-export-skipped.json lists the same.
	Skipped []*ExportSkip `json:"skipped"`
}

// ExportedServer is one registry server of an export.
type ExportedServer struct {
	// Name is its registry name (server.json name).
	Name string `json:"name"`
	// Plugin is the catalog's plugin it was made from.
	Plugin string `json:"plugin"`
	// Versions are the versions written, highest first.
	Versions []string `json:"versions"`
	// Latest is the version versions/latest serves (isLatest): the
	// highest that is not yanked.
	Latest string `json:"latest"`
}

// ExportSkip is one plugin version (or, without Version, a whole
// catalog entry) an export left out.
type ExportSkip struct {
	// Plugin is the catalog's plugin name.
	Plugin string `json:"plugin"`
	// Version is the version left out; empty for a whole entry.
	Version string `json:"version,omitempty"`
	// Rule is why, one of the export-* rules (docs/marketplace.md).
	Rule string `json:"rule"`
	// Reason says why in words.
	Reason string `json:"reason"`
}

func (s *ExportSkip) String() string {
	who := s.Plugin
	if s.Version != "" {
		who += "@" + s.Version
	}
	return fmt.Sprintf("%s: %s [%s]", who, s.Reason, s.Rule)
}

// entry is one version ready to write: the server.json and the
// registry's metadata of it.
type entry struct {
	plugin   string
	version  string
	status   catalog.Status
	doc      *serverDoc
	official *officialMeta
}

// BundleMeta is what an exported server.json says of the berth bundle it
// was made from, under _meta[BundleMetaKey]: the catalog's entry of the
// version, its URLs as the catalog lists them (relative ones to the
// catalog's own source).
type BundleMeta struct {
	Catalog string `json:"catalog"`
	Plugin  string `json:"plugin"`
	Version string `json:"version"`
	// Digest is the berth bundle digest; Archive.SHA256 that of the file.
	Digest       string          `json:"digest"`
	Archive      catalog.Archive `json:"archive"`
	URLs         []string        `json:"urls"`
	SignatureURL string          `json:"signatureURL"`
}

// officialMeta is the registry's metadata of an entry,
// _meta["io.modelcontextprotocol.registry/official"].
type officialMeta struct {
	Status        string    `json:"status"`
	StatusMessage string    `json:"statusMessage,omitempty"`
	PublishedAt   time.Time `json:"publishedAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
	IsLatest      bool      `json:"isLatest"`
}

// responseItem is one ServerResponse: a server.json and the registry's
// metadata of it.
type responseItem struct {
	Server *serverDoc `json:"server"`
	Meta   struct {
		Official *officialMeta `json:"io.modelcontextprotocol.registry/official"`
	} `json:"_meta"`
}

// ExportRegistry writes the catalog published in dir as the static files
// of an MCP Registry API (GET /v0.1/servers and /v0/servers, and per
// server .../versions, .../versions/{version} and .../versions/latest)
// into the new directory out. It reads what the catalog publishes, not
// the working copy, after checking the published version as every
// command does before signing (signatures against root.json, and the
// links timestamp → snapshot → targets → catalog); a catalog that does
// not check is refused and nothing is written. Each version becomes one
// registry entry whose server.json (schema 2025-12-11) carries the
// package or remote of the bundle's one server, read from the bundle's
// archive in dir (checked against the catalog's size, sha256 and
// digest), and names the berth bundle under _meta[BundleMetaKey]. A
// version that cannot be one (docs/marketplace.md, "Readable by other
// clients") is left out and listed in the result and in
// out/ExportSkippedFile. The files are written into a new directory
// beside out and renamed to out when whole; an existing out is refused
// unless it holds an earlier export and opts.Force is set.
func ExportRegistry(ctx context.Context, dir, out string, opts *ExportOptions) (*ExportResult, error) {
	if opts == nil {
		opts = &ExportOptions{}
	}
	r, err := Open(dir, "", nil)
	if err != nil {
		return nil, err
	}
	if err := checkExportOut(dir, out, opts.Force); err != nil {
		return nil, err
	}
	pub, unlock, err := r.lockLoad(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cat, ps, err := catalog.Parse(pub.catalog)
	if err != nil {
		return nil, fmt.Errorf("the published catalog of %s: %w", dir, err)
	}
	ns := opts.Namespace
	if ns == "" {
		if cat.Name == "" {
			return nil, fmt.Errorf("the catalog in %s has no name to derive registry names from; give one with --namespace (a reverse-DNS name you own, like com.acme)", dir)
		}
		ns = DefaultNamespace(cat.Name)
	}
	if err := CheckNamespace(ns); err != nil {
		return nil, err
	}
	base, err := exportBase(opts.BaseURL)
	if err != nil {
		return nil, err
	}
	res := &ExportResult{Dir: dir, Out: out, Catalog: cat.Name, Namespace: ns, Servers: []*ExportedServer{}, Skipped: []*ExportSkip{}}
	skip := func(plugin, version, rule, format string, args ...any) {
		res.Skipped = append(res.Skipped, &ExportSkip{Plugin: plugin, Version: version, Rule: rule, Reason: fmt.Sprintf(format, args...)})
	}
	for _, p := range ps {
		if !p.Warning {
			skip(p.Plugin, "", RuleExportEntry, "the catalog's entry breaks the rule %s at %s (%s); berth's clients skip it too", p.Rule, p.Path, p.Message)
		}
	}
	byName := map[string][]*entry{}
	owners := map[string]map[string]bool{} // lower-cased registry name → plugins
	for _, p := range cat.Plugins {
		for _, v := range p.Versions {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if v.Status == catalog.StatusRevoked {
				skip(p.Name, v.Version, RuleExportRevoked, "the version is revoked (%s); the registry API lists no deleted version", v.Reason)
				continue
			}
			e, bad := exportVersion(ctx, dir, cat.Name, ns, base, p, v, opts.Bundle)
			if bad != nil {
				skip(p.Name, v.Version, bad.rule, "%s", bad.reason)
				continue
			}
			byName[e.doc.Name] = append(byName[e.doc.Name], e)
			k := strings.ToLower(e.doc.Name)
			if owners[k] == nil {
				owners[k] = map[string]bool{}
			}
			owners[k][p.Name] = true
		}
	}
	var names []string
	for n, es := range byName {
		if o := owners[strings.ToLower(n)]; len(o) > 1 {
			for _, e := range es {
				skip(e.plugin, e.version, RuleExportName, "the plugins %s all have the registry name %s (letter case aside); an export cannot tell them apart, so it lists none of them", strings.Join(sortedKeys(o), ", "), n)
			}
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	sort.SliceStable(res.Skipped, func(i, j int) bool {
		a, b := res.Skipped[i], res.Skipped[j]
		if a.Plugin != b.Plugin {
			return a.Plugin < b.Plugin
		}
		return bundle.VersionLess(b.Version, a.Version)
	})
	files, err := exportDocs(names, byName, res)
	if err != nil {
		return nil, err
	}
	skipped, err := marshalDoc(map[string]any{"catalog": cat.Name, "namespace": ns, "skipped": res.Skipped})
	if err != nil {
		return nil, err
	}
	files[ExportSkippedFile] = skipped
	if err := writeExport(out, files, opts.Force); err != nil {
		return nil, err
	}
	return res, nil
}

// exportDocs makes the API's documents of the servers names (byName
// their versions), under every API version, keyed by their file in the
// export, and records each server in res.
func exportDocs(names []string, byName map[string][]*entry, res *ExportResult) (map[string][]byte, error) {
	files := map[string][]byte{}
	var listing []*responseItem
	for _, n := range names {
		es := byName[n]
		sort.Slice(es, func(i, j int) bool { return bundle.VersionLess(es[j].version, es[i].version) })
		latest := es[0]
		for _, e := range es {
			if e.status != catalog.StatusYanked {
				latest = e
				break
			}
		}
		srv := &ExportedServer{Name: n, Plugin: es[0].plugin, Latest: latest.version}
		var items []*responseItem
		for _, e := range es {
			e.official.IsLatest = e == latest
			item := &responseItem{Server: e.doc}
			item.Meta.Official = e.official
			items = append(items, item)
			srv.Versions = append(srv.Versions, e.version)
			for _, api := range exportAPIs {
				if err := addDoc(files, ExportURLPath(api, n, e.version), item); err != nil {
					return nil, err
				}
				if e == latest {
					if err := addDoc(files, ExportURLPath(api, n, "latest"), item); err != nil {
						return nil, err
					}
				}
			}
		}
		for _, api := range exportAPIs {
			if err := addDoc(files, ExportURLPath(api, n, ""), serverList(items)); err != nil {
				return nil, err
			}
		}
		listing = append(listing, items...)
		res.Servers = append(res.Servers, srv)
	}
	for _, api := range exportAPIs {
		if err := addDoc(files, ExportURLPath(api, "", ""), serverList(listing)); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// serverList is a ServerList document of one page: every item, their
// count, and no nextCursor (a static host ignores ?cursor=).
func serverList(items []*responseItem) any {
	if items == nil {
		items = []*responseItem{}
	}
	type metadata struct {
		Count int `json:"count"`
	}
	return struct {
		Servers  []*responseItem `json:"servers"`
		Metadata metadata        `json:"metadata"`
	}{items, metadata{len(items)}}
}

func addDoc(files map[string][]byte, urlPath string, v any) error {
	rel, err := ExportFile(urlPath)
	if err != nil {
		return fmt.Errorf("internal error: %v", err)
	}
	data, err := marshalDoc(v)
	if err != nil {
		return err
	}
	files[rel] = data
	return nil
}

func marshalDoc(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// exportVersion makes the registry entry of version v of plugin p from
// its archive in dir.
func exportVersion(ctx context.Context, dir, catName, ns string, base *url.URL, p *catalog.Plugin, v *catalog.Version, bopts *bundle.Options) (*entry, *exportRefusal) {
	m, rel, bad := readArchive(ctx, dir, v, bopts)
	if bad != nil {
		return nil, bad
	}
	var pkgs []*registryPkg
	var remotes []*remoteDoc
	if m.ImportedFrom != nil && m.ImportedFrom.Format == bundle.FormatMCPB && v.Archive.Format == "zip" {
		// The archive is the MCP Bundle as it was added: the registry's
		// mcpb package, downloaded and checked by its SHA-256.
		if base == nil {
			return nil, refuse(RuleExportMCPB, "its archive %s is an MCP Bundle, which a registry entry names by its absolute URL; give --base-url, the URL the catalog directory is served at", rel)
		}
		pkgs = []*registryPkg{{RegistryType: "mcpb", Identifier: base.ResolveReference(&url.URL{Path: rel}).String(), Version: v.Version,
			FileSHA256: strings.TrimPrefix(v.Archive.SHA256, "sha256:"), Transport: transportDoc{Type: "stdio"}}}
	} else if pkgs, remotes, bad = serverOf(m); bad != nil {
		return nil, bad
	}
	name := registrySourceName(m)
	if name != "" {
		if err := CheckExportName(name); err != nil {
			return nil, refuse(RuleExportName, "the bundle was imported from the registry entry %s, and %v", name, err)
		}
	} else {
		n, err := ExportName(ns, p.Name)
		if err != nil {
			return nil, refuse(RuleExportName, "%v", err)
		}
		name = n
	}
	doc := &serverDoc{Schema: exportSchema, Name: name, Description: shorten(p.Description, maxRegistryDescription), Title: p.Name,
		Version: v.Version, Packages: pkgs, Remotes: remotes}
	if strings.HasPrefix(p.Homepage, "https://") {
		doc.WebsiteURL = p.Homepage
	}
	doc.Meta = map[string]any{BundleMetaKey: &BundleMeta{Catalog: catName, Plugin: p.Name, Version: v.Version, Digest: v.Digest,
		Archive: v.Archive, URLs: v.URLs, SignatureURL: v.SignatureURL}}
	status, msg := "active", ""
	switch v.Status {
	case catalog.StatusDeprecated:
		status, msg = "deprecated", v.Reason
		if v.Replacement != "" {
			msg += "; use " + v.Replacement + " instead"
		}
	case catalog.StatusYanked:
		status, msg = "deprecated", "yanked: "+v.Reason
	}
	released := v.Released.UTC().Truncate(time.Second)
	official := &officialMeta{Status: status, PublishedAt: released, UpdatedAt: released, StatusMessage: shorten(msg, maxStatusMessage)}
	return &entry{plugin: p.Name, version: v.Version, status: v.Status, doc: doc, official: official}, nil
}

// readArchive reads the manifest of version v from its archive in dir,
// and returns it with the archive's path relative to dir:
// the first URL relative to the catalog, a regular file inside dir whose
// size and sha256 are the catalog's, and whose bundle digest is the
// catalog's. The bytes checked are the bytes opened (a copy in a temp
// directory).
func readArchive(ctx context.Context, dir string, v *catalog.Version, bopts *bundle.Options) (*bundle.Manifest, string, *exportRefusal) {
	rel := ""
	for _, u := range v.URLs {
		if isRelative(u) {
			rel = u
			break
		}
	}
	if rel == "" {
		return nil, rel, refuse(RuleExportArchive, "its archive is served elsewhere (%s), not from the catalog directory, so the export cannot read the bundle's server", strings.Join(v.URLs, ", "))
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, rel, refuse(RuleExportArchive, "%v", err)
	}
	defer root.Close()
	fi, err := root.Lstat(filepath.FromSlash(rel))
	if err != nil {
		return nil, rel, refuse(RuleExportArchive, "its archive %s is not in the catalog directory (%v)", rel, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, rel, refuse(RuleExportArchive, "its archive %s is not a regular file", rel)
	}
	f, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		return nil, rel, refuse(RuleExportArchive, "%v", err)
	}
	defer f.Close()
	tmpBase := ""
	if bopts != nil {
		tmpBase = bopts.TempDir
	}
	tmp, err := os.MkdirTemp(tmpBase, "berth-export-")
	if err != nil {
		return nil, rel, refuse(RuleExportArchive, "%v", err)
	}
	defer os.RemoveAll(tmp)
	copyPath := filepath.Join(tmp, path.Base(rel))
	cf, err := os.OpenFile(copyPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, rel, refuse(RuleExportArchive, "%v", err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(cf, h), io.LimitReader(f, v.Archive.Size+1))
	if cerr := cf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, rel, refuse(RuleExportArchive, "reading %s: %v", rel, err)
	}
	if sum := "sha256:" + hex.EncodeToString(h.Sum(nil)); n != v.Archive.Size || sum != v.Archive.SHA256 {
		return nil, rel, refuse(RuleExportArchive, "its archive %s (%d bytes, %s) is not the one the catalog lists (%d bytes, %s); berth catalog lint %s names the difference", rel, n, sum, v.Archive.Size, v.Archive.SHA256, dir)
	}
	b, err := bundle.Open(ctx, copyPath, bopts)
	if err != nil {
		return nil, rel, refuse(RuleExportArchive, "its archive %s does not open as a valid bundle: %v", rel, err)
	}
	defer b.Close()
	if b.Digest != v.Digest {
		return nil, rel, refuse(RuleExportArchive, "its archive %s has the bundle digest %s, not the catalog's %s", rel, b.Digest, v.Digest)
	}
	return b.Manifest, rel, nil
}

// exportBase parses ExportOptions.BaseURL: https, or http on a loopback
// address; nil for "".
func exportBase(s string) (*url.URL, error) {
	if s == "" {
		return nil, nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
		(u.Scheme != "https" && (u.Scheme != "http" || !loopback.IsHost(u.Hostname()))) {
		return nil, fmt.Errorf("--base-url %q: give the https URL the catalog directory is served at (no credentials, query or fragment; plain http only on a loopback address)", s)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return u, nil
}

// checkExportOut refuses an out that checkOutDir refuses, or that is the
// catalog directory or holds it.
func checkExportOut(dir, out string, force bool) error {
	if err := checkOutDir(out, force); err != nil {
		return err
	}
	absDir, err1 := resolvePath(dir)
	absOut, err2 := resolvePath(out)
	if err1 == nil && err2 == nil && within(absDir, absOut) {
		return fmt.Errorf("refused to write the export to %s: the catalog directory %s is inside it (or is it); choose an OUT outside the catalog's own files", out, dir)
	}
	return nil
}

// checkOutDir refuses an out with a symbolic link in any component of
// its path as given (out itself included), or an existing directory that
// is not an earlier export (or is one, without force).
func checkOutDir(out string, force bool) error {
	if link, target := linkInPath(out); link != "" {
		fix := "remove the link"
		if r, err := resolvePath(out); err == nil {
			fix = "give OUT without links (" + r + ")"
		}
		if link == filepath.Clean(out) {
			fix = "remove it (rm " + fsx.ShellQuote(link) + ") or choose another OUT"
		}
		return fmt.Errorf("refused to write the export to %s: %s is a symbolic link (to %s), and berth writes an export only through directories of its own path, never through a link; %s", out, link, target, fix)
	}
	fi, err := os.Lstat(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("refused to write the export to %s: it exists and is not a directory; remove it or choose another OUT", out)
	default:
		if _, err := os.Lstat(filepath.Join(out, ExportSkippedFile)); err != nil {
			return fmt.Errorf("refused to write the export to %s: the directory exists and is not an export (it has no %s); berth replaces only an earlier export: choose a new OUT", out, ExportSkippedFile)
		}
		if !force {
			return fmt.Errorf("refused to write the export to %s: it holds an earlier export; replace it with --force", out)
		}
	}
	return nil
}

// linkInPath returns the first component of p, as written, that is a
// symbolic link, and its target; "" when none is (components that do not
// exist yet are not links).
func linkInPath(p string) (link, target string) {
	p = filepath.Clean(p)
	cur := filepath.VolumeName(p)
	rest := p[len(cur):]
	if strings.HasPrefix(rest, string(filepath.Separator)) {
		cur += string(filepath.Separator)
	}
	for _, part := range strings.Split(rest, string(filepath.Separator)) {
		if part == "" || part == "." {
			continue
		}
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			return "", ""
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			t, _ := os.Readlink(cur)
			return cur, t
		}
	}
	return "", ""
}

// writeExport writes files into a new directory beside out, then renames
// it to out (an earlier export, when force, is swapped with it in one
// step on Linux, else moved aside first, and removed after): a reader of
// out sees a whole export, the old or the new one (where the system
// cannot swap, none between the two renames).
func writeExport(out string, files map[string][]byte, force bool) (err error) {
	parent := filepath.Dir(out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(out)+".export-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	rels := sortedKeys(files)
	for _, rel := range rels {
		if err := writeServed(tmp, rel, files[rel]); err != nil {
			return err
		}
	}
	if err := atomicfile.SyncDir(tmp); err != nil {
		return err
	}
	old := ""
	if _, err := os.Lstat(out); err == nil {
		if !force {
			return fmt.Errorf("refused to write the export to %s: it appeared while the export was written", out)
		}
		if err := checkOutDir(out, force); err != nil {
			return err
		}
		// Swapped in one step where the system can: a crash leaves the
		// old export or the new one at out, never neither.
		if pd, err := os.Open(parent); err == nil {
			xerr := atomicfile.Exchange(pd, filepath.Base(tmp), filepath.Base(out))
			pd.Close()
			if xerr == nil {
				if err := atomicfile.SyncDir(parent); err != nil {
					return err
				}
				return atomicfile.RemoveTree(tmp)
			}
			if !errors.Is(xerr, errors.ErrUnsupported) {
				return xerr
			}
		}
		old = tmp + ".old"
		if err := os.Rename(out, old); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, out); err != nil {
		if old != "" {
			os.Rename(old, out)
		}
		return err
	}
	if err := atomicfile.SyncDir(parent); err != nil {
		return err
	}
	if old != "" {
		return atomicfile.RemoveTree(old)
	}
	return nil
}
