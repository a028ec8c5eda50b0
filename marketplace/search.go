package marketplace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/importer"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/internal/textio"
)

// Files of the search index in a verified copy.
const (
	indexFile    = "index.txt"
	problemsFile = "problems.json"
)

// index is what search reads: the fields it ranks and filters on, and
// each plugin's versions, derived from the verified catalog when the copy
// was written, so a search neither decodes the whole catalog nor JSON.
type index struct {
	Plugins []indexEntry
}

type indexEntry struct {
	// Off and N locate the plugin's entry in the copy's catalog.json.
	Off, N      int64
	Name        string
	Description string
	Tier        catalog.Tier
	Tags        []string
	Publisher   string
	Versions    []indexVersion // highest first
}

type indexVersion struct {
	Version  string
	Status   catalog.Status
	Released time.Time
	Requires string
}

func buildIndex(cat *catalog.Catalog, spans []catalog.Span) *index {
	idx := &index{Plugins: make([]indexEntry, 0, len(cat.Plugins))}
	for i, p := range cat.Plugins {
		e := indexEntry{Off: spans[i].Off, N: spans[i].N, Name: p.Name, Description: p.Description, Tier: p.Tier, Tags: p.Tags}
		if p.Publisher != nil {
			e.Publisher = p.Publisher.Name
		}
		for _, v := range p.Versions {
			e.Versions = append(e.Versions, indexVersion{Version: v.Version, Status: v.Status, Released: v.Released, Requires: v.RequiresBerth})
		}
		sort.SliceStable(e.Versions, func(i, j int) bool { return bundle.VersionLess(e.Versions[j].Version, e.Versions[i].Version) })
		idx.Plugins = append(idx.Plugins, e)
	}
	return idx
}

// The index is text, one record a line, fields separated by tabs, text
// fields escaped (\\, \t, \n, \r):
//
//	berth-index 1
//	p <name> <tier> <offset> <length> <tags, comma-separated> <publisher> <description>
//	v <version> <status> <released, Unix seconds> <requires.berth>
const indexHeader = "berth-index 1"

var indexEscaper = strings.NewReplacer("\\", "\\\\", "\t", "\\t", "\n", "\\n", "\r", "\\r")
var indexUnescaper = strings.NewReplacer("\\\\", "\\", "\\t", "\t", "\\n", "\n", "\\r", "\r")

func (idx *index) marshal() []byte {
	var b strings.Builder
	b.WriteString(indexHeader + "\n")
	for _, e := range idx.Plugins {
		fmt.Fprintf(&b, "p\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", e.Name, e.Tier, e.Off, e.N, strings.Join(e.Tags, ","), indexEscaper.Replace(e.Publisher), indexEscaper.Replace(e.Description))
		for _, v := range e.Versions {
			fmt.Fprintf(&b, "v\t%s\t%s\t%d\t%s\n", v.Version, v.Status, v.Released.Unix(), indexEscaper.Replace(v.Requires))
		}
	}
	return []byte(b.String())
}

func parseIndex(data []byte) (*index, error) {
	text := string(data)
	header, rest, _ := strings.Cut(text, "\n")
	if header != indexHeader {
		return nil, fmt.Errorf("the search index is not %q", indexHeader)
	}
	idx := &index{Plugins: make([]indexEntry, 0, strings.Count(rest, "\np\t")+1)}
	var f [8]string
	for line := range strings.SplitSeq(rest, "\n") {
		if line == "" {
			continue
		}
		n := splitFields(line, f[:])
		bad := func() (*index, error) {
			return nil, fmt.Errorf("the search index has a bad line %q", textio.ShortText(line))
		}
		switch {
		case f[0] == "p" && n == 8:
			off, err1 := strconv.ParseInt(f[3], 10, 64)
			size, err2 := strconv.ParseInt(f[4], 10, 64)
			if err1 != nil || err2 != nil {
				return bad()
			}
			e := indexEntry{Off: off, N: size, Name: f[1], Tier: catalog.Tier(f[2]), Publisher: unescape(f[6]), Description: unescape(f[7])}
			if f[5] != "" {
				e.Tags = strings.Split(f[5], ",")
			}
			idx.Plugins = append(idx.Plugins, e)
		case f[0] == "v" && n == 5 && len(idx.Plugins) > 0:
			sec, err := strconv.ParseInt(f[3], 10, 64)
			if err != nil {
				return bad()
			}
			e := &idx.Plugins[len(idx.Plugins)-1]
			e.Versions = append(e.Versions, indexVersion{Version: f[1], Status: catalog.Status(f[2]), Released: time.Unix(sec, 0).UTC(), Requires: unescape(f[4])})
		default:
			return bad()
		}
	}
	return idx, nil
}

// splitFields splits a line at tabs into f without allocating; it returns
// the number of fields, len(f)+1 when there are more than f holds.
func splitFields(line string, f []string) int {
	n := 0
	for {
		i := strings.IndexByte(line, '\t')
		if n == len(f) {
			return n + 1
		}
		if i < 0 {
			f[n] = line
			return n + 1
		}
		f[n], line = line[:i], line[i+1:]
		n++
	}
}

func unescape(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	return indexUnescaper.Replace(s)
}

// Query is a search.
type Query struct {
	// Text is the search text; "" lists everything.
	Text string
	// Catalog, Tier and Tag filter the results when set.
	Catalog string
	Tier    catalog.Tier
	Tag     string
}

// Match says how a result matched the query, best first.
type Match string

// Matches, from the best.
const (
	MatchExact       Match = "exact"       // the name is the query
	MatchPrefix      Match = "prefix"      // the name starts with the query
	MatchName        Match = "name"        // every word is in the name
	MatchTag         Match = "tag"         // every word is in the name or a tag
	MatchDescription Match = "description" // every word is in the name, tags, publisher or description
	MatchAll         Match = "all"         // no query: everything
)

func (m Match) rank() int {
	switch m {
	case MatchExact:
		return 0
	case MatchPrefix:
		return 1
	case MatchName:
		return 2
	case MatchTag:
		return 3
	}
	return 4
}

// Result is one plugin found by Search.
type Result struct {
	Catalog     string       `json:"catalog"`
	Name        string       `json:"name"`
	Description string       `json:"description"`
	Tier        catalog.Tier `json:"tier"`
	Tags        []string     `json:"tags"`
	// Latest is the version berth install NAME would pick, "" when none
	// qualifies; Status is its status.
	Latest string         `json:"latest,omitempty"`
	Status catalog.Status `json:"status,omitempty"`
	Match  Match          `json:"match"`
	// Stale is true when the catalog's verified copy is past its expiry.
	Stale bool `json:"stale,omitempty"`
	// Unsigned is true for an entry of an unsigned source (an MCP
	// Registry or a marketplace.json): nobody signed it.
	Unsigned bool `json:"unsigned"`
	// Builtin is true for an entry of the built-in catalog: unsigned,
	// but pinned by the berth binary (its digest and its package's
	// integrity).
	Builtin bool `json:"builtin,omitempty"`
	// SourceName is the name the unsigned source gives the entry (the
	// registry name, io.github.acme/weather), when it has one.
	SourceName string `json:"sourceName,omitempty"`
	// Unbuildable, for an entry of an MCP Registry, says why berth
	// cannot build a bundle for any version install would otherwise
	// pick (the reason of the highest; berth show lists each); Latest is
	// then "". When the highest cannot be built but an older one can,
	// Latest is that older one.
	Unbuildable string `json:"unbuildable,omitempty"`
}

// SearchResult is the outcome of Search: the ranked results and the state
// of every catalog searched.
type SearchResult struct {
	Results  []Result       `json:"results"`
	Catalogs []*CatalogInfo `json:"catalogs"`
	// Problems are the entries each catalog skipped, by catalog name.
	Problems map[string][]*catalog.Problem `json:"problems,omitempty"`
}

// Search ranks the plugins of every catalog in the cache (or of
// q.Catalog) for q: an exact name first, then a name prefix, then every
// word in the name, then in the name or tags, then anywhere in the name,
// tags, publisher or description; ties by tier (official, verified,
// community), then by name and catalog. It reads only the verified cache:
// no network, no writes. resolve tunes the latest version it reports.
func (c *Cache) Search(q Query, resolve *ResolveOptions) (*SearchResult, error) {
	names, err := c.Names()
	if err != nil {
		return nil, err
	}
	if q.Catalog != "" {
		if err := CheckName(q.Catalog); err != nil {
			return nil, err
		}
		found := false
		for _, n := range names {
			found = found || n == q.Catalog
		}
		if !found {
			return nil, fmt.Errorf("%w: there is no catalog %s (berth marketplace list shows them)", ErrNoCatalog, q.Catalog)
		}
		names = []string{q.Catalog}
	}
	text := strings.ToLower(strings.TrimSpace(q.Text))
	words := strings.Fields(text)
	tag := strings.ToLower(q.Tag)
	out := &SearchResult{Results: []Result{}, Catalogs: []*CatalogInfo{}}
	r := newResolver(resolve)
	for _, name := range names {
		st, idx, err := c.readIndex(name)
		if err != nil {
			return nil, err
		}
		problems, err := c.readProblems(name, st)
		if err != nil {
			return nil, err
		}
		ci := c.info(st)
		out.Catalogs = append(out.Catalogs, ci)
		if len(problems) > 0 {
			if out.Problems == nil {
				out.Problems = map[string][]*catalog.Problem{}
			}
			out.Problems[name] = problems
		}
		ctext, cwords := text, words
		if ci.Kind == KindRegistry && strings.Contains(text, "/") {
			// A registry name finds the entry it maps to.
			if mapped, err := importer.RegistryPluginName(strings.TrimSpace(q.Text)); err == nil {
				ctext, cwords = mapped, []string{mapped}
			}
		}
		for i := range idx.Plugins {
			e := &idx.Plugins[i]
			if q.Tier != "" && e.Tier != q.Tier {
				continue
			}
			if tag != "" && !hasTag(e.Tags, tag) {
				continue
			}
			m, ok := match(e, ctext, cwords)
			if !ok {
				continue
			}
			res := Result{Catalog: name, Name: e.Name, Description: e.Description, Tier: e.Tier, Tags: e.Tags, Match: m, Stale: ci.Stale, Unsigned: ci.Unsigned, Builtin: ci.Kind == KindBuiltin}
			if ci.Kind == KindRegistry {
				res.SourceName = e.Publisher // the index keeps the registry name there
			}
			if res.Tags == nil {
				res.Tags = []string{}
			}
			if v := r.latest(e); v != nil {
				res.Latest, res.Status = v.Version, v.Status
			}
			if ci.Kind == KindRegistry && res.Latest != "" {
				c.markBuildable(&res, st, e, ci, resolve)
			}
			out.Results = append(out.Results, res)
		}
	}
	sort.SliceStable(out.Results, func(i, j int) bool {
		a, b := &out.Results[i], &out.Results[j]
		if ra, rb := a.Match.rank(), b.Match.rank(); ra != rb {
			return ra < rb
		}
		if ta, tb := tierRank(a.Tier), tierRank(b.Tier); ta != tb {
			return ta < tb
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Catalog < b.Catalog
	})
	return out, nil
}

func hasTag(tags []string, t string) bool {
	for _, x := range tags {
		if x == t {
			return true
		}
	}
	return false
}

// match decides whether an entry matches and how well.
func match(e *indexEntry, text string, words []string) (Match, bool) {
	if text == "" {
		return MatchAll, true
	}
	name := e.Name // names are lower-case already
	if name == text {
		return MatchExact, true
	}
	if strings.HasPrefix(name, text) {
		return MatchPrefix, true
	}
	best := MatchName
	var desc, pub string
	for _, w := range words {
		if strings.Contains(name, w) {
			continue
		}
		inTag := false
		for _, t := range e.Tags {
			if strings.Contains(t, w) {
				inTag = true
				break
			}
		}
		if inTag {
			if best == MatchName {
				best = MatchTag
			}
			continue
		}
		if desc == "" {
			desc, pub = strings.ToLower(e.Description), strings.ToLower(e.Publisher)
		}
		if strings.Contains(desc, w) || strings.Contains(pub, w) {
			best = MatchDescription
			continue
		}
		return "", false
	}
	return best, true
}

// readIndex reads a catalog's state and search index.
func (c *Cache) readIndex(name string) (*state, *index, error) {
	for attempt := 0; ; attempt++ {
		st, err := c.readState(name)
		if err != nil {
			return nil, nil, err
		}
		dir := filepath.Join(c.dir, name, st.Current)
		data, err := os.ReadFile(filepath.Join(dir, indexFile))
		if errors.Is(err, fs.ErrNotExist) && attempt < 3 {
			continue // replaced while we read; read the new state
		}
		if err != nil {
			return nil, nil, c.damaged(name, err)
		}
		idx, err := parseIndex(data)
		if err != nil {
			return nil, nil, c.damaged(name, err)
		}
		return st, idx, nil
	}
}

// readProblems reads the entries the copy st of catalog name skipped.
func (c *Cache) readProblems(name string, st *state) ([]*catalog.Problem, error) {
	if st.Info.Problems <= 0 {
		return nil, nil
	}
	var problems []*catalog.Problem
	data, err := os.ReadFile(filepath.Join(c.dir, name, st.Current, problemsFile))
	if err == nil {
		err = json.Unmarshal(data, &problems)
	}
	if err != nil {
		return nil, c.damaged(name, err)
	}
	return problems, nil
}

// ErrNoPlugin is returned when a catalog does not list a plugin.
var ErrNoPlugin = errors.New("no such plugin")

// Plugin returns the entry of plugin name in the verified copy of catalog
// catalog, reading only that entry. It never touches the network or
// writes.
func (c *Cache) Plugin(catName, name string) (*catalog.Plugin, *CatalogInfo, error) {
	ps, ci, err := c.Plugins(catName, []string{name})
	if err != nil {
		return nil, nil, err
	}
	if ci.Unsigned {
		return nil, nil, fmt.Errorf("%w: catalog %s is an unsigned %s source; its entries are shown with berth show and installed with --allow-unsigned --digest", ErrUnsignedSource, catName, ci.Kind)
	}
	if ps[name] == nil {
		return nil, nil, fmt.Errorf("%w: catalog %s does not list %s (berth search %s looks for it everywhere)", ErrNoPlugin, catName, name, name)
	}
	return ps[name], ci, nil
}

// Plugins returns the entries of the plugins named in the verified copy
// of catalog, by name, reading the index once and only those entries; a
// name the catalog does not list is absent from the map. It never
// touches the network or writes.
func (c *Cache) Plugins(catName string, names []string) (map[string]*catalog.Plugin, *CatalogInfo, error) {
	for attempt := 0; ; attempt++ {
		st, idx, err := c.readIndex(catName)
		if err != nil {
			return nil, nil, err
		}
		if st.Kind != "" {
			// An unsigned source lists no signed entries: nothing of it is
			// revoked, deprecated or yanked in the catalog's terms.
			return map[string]*catalog.Plugin{}, c.info(st), nil
		}
		want := map[string]bool{}
		for _, n := range names {
			want[n] = true
		}
		var found []*indexEntry
		for i := range idx.Plugins {
			if want[idx.Plugins[i].Name] {
				found = append(found, &idx.Plugins[i])
			}
		}
		out := map[string]*catalog.Plugin{}
		if len(found) == 0 {
			return out, c.info(st), nil
		}
		f, err := os.Open(filepath.Join(c.dir, catName, st.Current, catalog.TargetName))
		if errors.Is(err, fs.ErrNotExist) && attempt < 3 {
			continue
		}
		if err != nil {
			return nil, nil, c.damaged(catName, err)
		}
		for _, e := range found {
			raw := make([]byte, e.N)
			if _, err := f.ReadAt(raw, e.Off); err != nil {
				f.Close()
				return nil, nil, c.damaged(catName, err)
			}
			p, _ := catalog.ParseEntry(raw)
			if p == nil || p.Name != e.Name {
				f.Close()
				return nil, nil, c.damaged(catName, fmt.Errorf("the index does not point at the entry of %s", e.Name))
			}
			out[e.Name] = p
		}
		f.Close()
		return out, c.info(st), nil
	}
}

// Lookup returns the catalogs that list plugin name, sorted.
func (c *Cache) Lookup(name string) ([]string, error) {
	names, err := c.Names()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		_, idx, err := c.readIndex(n)
		if err != nil {
			return nil, err
		}
		for i := range idx.Plugins {
			if idx.Plugins[i].Name == name {
				out = append(out, n)
				break
			}
		}
	}
	return out, nil
}

// tierRank orders tiers for search ties: official first.
func tierRank(t catalog.Tier) int {
	switch t {
	case catalog.TierOfficial:
		return 0
	case catalog.TierVerified:
		return 1
	}
	return 2
}
