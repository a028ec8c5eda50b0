package foreign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/Masterminds/semver/v3"

	"github.com/berth-mcp/berth/bundle/importer"
	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/internal/textio"
)

// Rules of marketplace.json entries (docs/marketplace.md).
const (
	RuleMarketEntrySyntax    = "marketplace-entry-syntax"
	RuleMarketEntryName      = "marketplace-entry-name"
	RuleMarketEntrySource    = "marketplace-entry-source"
	RuleMarketEntryVersion   = "marketplace-entry-version"
	RuleMarketEntryText      = "marketplace-entry-text"
	RuleMarketEntryDuplicate = "marketplace-entry-duplicate"
)

// MaxMarketplaceFile is the largest marketplace.json berth reads.
const MaxMarketplaceFile = 8 << 20

// maxPluginJSON caps the plugin.json berth reads to learn a version.
const maxPluginJSON = 1 << 20

// ClaudeMarketplaceEntry is one plugin a marketplace.json lists that
// berth can install: a plugin directory inside the marketplace's own.
type ClaudeMarketplaceEntry struct {
	// Name is the berth plugin name: the marketplace's name for it,
	// mapped by importer.PluginName; SourceName is the marketplace's.
	Name, SourceName, Description, Homepage, Version string
	// Dir is the plugin's directory, absolute, symlinks resolved, inside
	// the marketplace's root.
	Dir string
}

// ParseClaudeMarketplace decodes a Claude Code marketplace.json
// leniently: every plugin entry berth cannot carry (a malformed entry, a
// name that is not a berth name, a source other than a relative path
// inside root, a source berth cannot fetch: github, git URLs, npm) is a
// problem naming the reason and skipped; the rest are returned. root is
// the marketplace's root directory (the one holding .claude-plugin/), ""
// when it was read from a URL, where no relative source can be fetched.
// It fails only when the document as a whole is not a marketplace.json.
func ParseClaudeMarketplace(data []byte, root string) ([]*ClaudeMarketplaceEntry, []*catalog.Problem, error) {
	if len(data) > MaxMarketplaceFile {
		return nil, nil, fmt.Errorf("marketplace.json is %d bytes, over the limit of %d", len(data), MaxMarketplaceFile)
	}
	if !utf8.Valid(data) {
		return nil, nil, fmt.Errorf("marketplace.json is not UTF-8 text")
	}
	var doc struct {
		Name     string             `json:"name"`
		Plugins  *[]json.RawMessage `json:"plugins"`
		Metadata *struct {
			PluginRoot string `json:"pluginRoot"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("marketplace.json is not a Claude Code marketplace (%v); it must look like {\"name\": ..., \"owner\": {...}, \"plugins\": [...]}", err)
	}
	if doc.Plugins == nil {
		return nil, nil, fmt.Errorf("marketplace.json has no \"plugins\" array")
	}
	pluginRoot := ""
	if doc.Metadata != nil {
		pluginRoot = doc.Metadata.PluginRoot
	}
	var out []*ClaudeMarketplaceEntry
	var ps []*catalog.Problem
	seen := map[string]*ClaudeMarketplaceEntry{}
	firstLoc := map[string]string{}
	// collided are the berth names two entries with different names map
	// to: berth lists neither, as the registry source does, since it
	// cannot tell which one a person means.
	collided := map[string]bool{}
	for i, raw := range *doc.Plugins {
		loc := fmt.Sprintf("plugins[%d]", i)
		e, p := parseMarketEntry(raw, loc, root, pluginRoot)
		if p != nil {
			ps = append(ps, p)
			continue
		}
		if first := seen[e.Name]; first != nil {
			if first.SourceName == e.SourceName {
				ps = append(ps, problemf(e.Name, loc+".name", RuleMarketEntryDuplicate, "a second entry named %s; the first is kept", e.Name))
				continue
			}
			if !collided[e.Name] {
				ps = append(ps, problemf(e.Name, firstLoc[e.Name]+".name", RuleMarketEntryDuplicate, "the entries %q (%s) and %q (%s) both become the berth plugin name %s (docs/manifest.md, \"Names of other formats\"); berth lists neither: ask the marketplace's publisher to rename one", textio.ShortText(first.SourceName), firstLoc[e.Name], textio.ShortText(e.SourceName), loc, e.Name))
			}
			ps = append(ps, problemf(e.Name, loc+".name", RuleMarketEntryDuplicate, "the entries %q (%s) and %q (%s) both become the berth plugin name %s (docs/manifest.md, \"Names of other formats\"); berth lists neither: ask the marketplace's publisher to rename one", textio.ShortText(first.SourceName), firstLoc[e.Name], textio.ShortText(e.SourceName), loc, e.Name))
			collided[e.Name] = true
			continue
		}
		seen[e.Name], firstLoc[e.Name] = e, loc
		out = append(out, e)
	}
	out = slices.DeleteFunc(out, func(e *ClaudeMarketplaceEntry) bool { return collided[e.Name] })
	return out, ps, nil
}

func parseMarketEntry(raw json.RawMessage, loc, root, pluginRoot string) (*ClaudeMarketplaceEntry, *catalog.Problem) {
	who := ""
	bad := func(rule, p, format string, args ...any) (*ClaudeMarketplaceEntry, *catalog.Problem) {
		return nil, problemf(who, loc+p, rule, format, args...)
	}
	var e struct {
		Name        string          `json:"name"`
		Source      json.RawMessage `json:"source"`
		Description string          `json:"description"`
		Version     string          `json:"version"`
		Homepage    string          `json:"homepage"`
		Strict      *bool           `json:"strict"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return bad(RuleMarketEntrySyntax, "", "the entry does not decode: %v", err)
	}
	if e.Name == "" {
		return bad(RuleMarketEntrySyntax, ".name", "the entry has no name")
	}
	who = textio.ShortText(e.Name)
	name, ok := importer.PluginName(e.Name)
	if !ok {
		return bad(RuleMarketEntryName, ".name", "%q has no letter or digit to make a berth plugin name of (lower-case letters, digits and '-', up to 64 characters)", textio.ShortText(e.Name))
	}
	if err := entryText(e.Description, catalog.MaxDescription); err != nil {
		return bad(RuleMarketEntryText, ".description", "the description: %v", err)
	}
	if e.Strict != nil && !*e.Strict {
		return bad(RuleMarketEntrySource, ".strict", "strict is false: the marketplace entry is the plugin's whole definition, and berth reads a plugin only from its own .claude-plugin/plugin.json")
	}
	var rel string
	if err := json.Unmarshal(e.Source, &rel); err != nil {
		var obj struct {
			Source string `json:"source"`
		}
		kind := "unknown"
		if json.Unmarshal(e.Source, &obj) == nil && obj.Source != "" {
			kind = textio.ShortText(obj.Source)
		}
		return bad(RuleMarketEntrySource, ".source", "a %q source: berth fetches no git repositories or npm packages for a marketplace; clone or download the plugin yourself and use berth trust DIR --allow-unsigned --digest (berth digest DIR prints it)", kind)
	}
	if root == "" {
		return bad(RuleMarketEntrySource, ".source", "the relative source %q cannot be fetched: the marketplace was read from a URL, not a directory; add the marketplace's directory instead", textio.ShortText(rel))
	}
	dir, err := marketPluginDir(root, pluginRoot, rel)
	if err != nil {
		return bad(RuleMarketEntrySource, ".source", "%v", err)
	}
	version := e.Version
	pj, err := readPluginJSON(dir)
	if err != nil {
		return bad(RuleMarketEntrySource, ".source", "%v", err)
	}
	if pj.Name != e.Name {
		return bad(RuleMarketEntryName, ".name", "the entry is named %s but its plugin.json names %q; berth would install it under the plugin.json's name, so it lists neither", e.Name, textio.ShortText(pj.Name))
	}
	switch {
	case pj.Version != "":
		if version != "" && version != pj.Version {
			return bad(RuleMarketEntryVersion, ".version", "the entry says version %q but the plugin.json says %q", textio.ShortText(version), textio.ShortText(pj.Version))
		}
		version = pj.Version
	case !pj.hasVersion:
		// A versionless plugin: berth installs it with the version its
		// import derives from the bundle it generates, whatever the entry
		// says (docs/manifest.md, "Versionless plugins").
		v, err := importer.PluginVersion(context.Background(), dir)
		if err != nil {
			return bad(RuleMarketEntryVersion, ".source", "the plugin has no version, and berth cannot derive one from its content: %v", err)
		}
		version = v
	}
	if _, err := semver.StrictNewVersion(version); err != nil {
		return bad(RuleMarketEntryVersion, ".version", "the version %q is not strict semver (like 1.2.3); berth invents none", textio.ShortText(version))
	}
	out := &ClaudeMarketplaceEntry{Name: name, SourceName: e.Name, Description: e.Description, Version: version, Dir: dir}
	if isHTTPSURL(e.Homepage) {
		out.Homepage = e.Homepage
	}
	return out, nil
}

// marketPluginDir resolves a relative plugin source inside root: it must
// start "./", be clean, stay inside root (no "..", no absolute path), and
// with symlinks resolved still be a directory inside root.
func marketPluginDir(root, pluginRoot, rel string) (string, error) {
	check := func(what, p string) (string, error) {
		if strings.ContainsAny(p, "\\\x00") || path.IsAbs(p) || filepath.IsAbs(p) {
			return "", fmt.Errorf("the %s %q is not a relative path inside the marketplace", what, textio.ShortText(p))
		}
		c := path.Clean(p)
		if c == ".." || strings.HasPrefix(c, "../") {
			return "", fmt.Errorf("the %s %q leaves the marketplace's directory", what, textio.ShortText(p))
		}
		return c, nil
	}
	if !strings.HasPrefix(rel, "./") {
		return "", fmt.Errorf("the source %q is not a relative path starting \"./\"", textio.ShortText(rel))
	}
	r, err := check("source", rel)
	if err != nil {
		return "", err
	}
	if pluginRoot != "" {
		pr, err := check("metadata.pluginRoot", pluginRoot)
		if err != nil {
			return "", err
		}
		r = path.Join(pr, r)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(realRoot, filepath.FromSlash(r)))
	if err != nil {
		return "", fmt.Errorf("the source %q: %v", textio.ShortText(rel), errors.Unwrap(err))
	}
	if relTo, err := filepath.Rel(realRoot, dir); err != nil || relTo == ".." || strings.HasPrefix(relTo, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("the source %q leads outside the marketplace's directory (to %s, through a symlink)", textio.ShortText(rel), dir)
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return "", fmt.Errorf("the source %q is not a directory", textio.ShortText(rel))
	}
	return dir, nil
}

type pluginJSON struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// hasVersion is set when plugin.json has a version field at all.
	hasVersion bool
}

func readPluginJSON(dir string) (*pluginJSON, error) {
	p := filepath.Join(dir, ".claude-plugin", "plugin.json")
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("the plugin directory has no .claude-plugin/plugin.json file")
	}
	data, err := fsx.ReadRegularFile(context.Background(), p, maxPluginJSON) // never blocks on a FIFO swapped in
	if err != nil {
		return nil, err
	}
	out := &pluginJSON{}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("its .claude-plugin/plugin.json does not decode: %v", err)
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(data, &keys) == nil {
		_, out.hasVersion = keys["version"]
	}
	return out, nil
}

// MarketRoot is the marketplace's root for a marketplace.json file: the
// directory holding .claude-plugin/, or the file's own directory.
func MarketRoot(file string) string {
	d := filepath.Dir(file)
	if filepath.Base(d) == ".claude-plugin" {
		return filepath.Dir(d)
	}
	return d
}
