package marketplace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// indexFile is the name of the search index in a verified copy.
const indexFile = "index.json"

// index is what search reads: the fields it ranks and filters on, and
// each plugin's versions, derived from the verified catalog when the copy
// was written (so a search does not decode the whole catalog).
type index struct {
	Plugins  []indexEntry `json:"plugins"`
	Problems []*Problem   `json:"problems,omitempty"`
}

type indexEntry struct {
	Name        string         `json:"n"`
	Description string         `json:"d"`
	Tier        Tier           `json:"t"`
	Tags        []string       `json:"g,omitempty"`
	Publisher   string         `json:"p,omitempty"`
	Versions    []indexVersion `json:"v"`
}

type indexVersion struct {
	Version  string    `json:"v"`
	Status   Status    `json:"s"`
	Released time.Time `json:"r"`
	Requires string    `json:"q,omitempty"`
}

func buildIndex(cat *Catalog, problems []*Problem) *index {
	idx := &index{Plugins: make([]indexEntry, 0, len(cat.Plugins)), Problems: problems}
	for _, p := range cat.Plugins {
		e := indexEntry{Name: p.Name, Description: p.Description, Tier: p.Tier, Tags: p.Tags}
		if p.Publisher != nil {
			e.Publisher = p.Publisher.Name
		}
		for _, v := range p.Versions {
			e.Versions = append(e.Versions, indexVersion{Version: v.Version, Status: v.Status, Released: v.Released, Requires: v.RequiresBerth})
		}
		sort.SliceStable(e.Versions, func(i, j int) bool { return semverLess(e.Versions[j].Version, e.Versions[i].Version) })
		idx.Plugins = append(idx.Plugins, e)
	}
	return idx
}

// Query is a search.
type Query struct {
	// Text is the search text; "" lists everything.
	Text string
	// Catalog, Tier and Tag filter the results when set.
	Catalog string
	Tier    Tier
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
	Catalog     string   `json:"catalog"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tier        Tier     `json:"tier"`
	Tags        []string `json:"tags"`
	// Latest is the version berth install NAME would pick, "" when none
	// qualifies; Status is its status.
	Latest string `json:"latest,omitempty"`
	Status Status `json:"status,omitempty"`
	Match  Match  `json:"match"`
	// Stale is true when the catalog's verified copy is past its expiry.
	Stale bool `json:"stale,omitempty"`
}

// SearchResult is the outcome of Search: the ranked results and the state
// of every catalog searched.
type SearchResult struct {
	Results  []Result       `json:"results"`
	Catalogs []*CatalogInfo `json:"catalogs"`
	// Problems are the entries each catalog skipped, by catalog name.
	Problems map[string][]*Problem `json:"problems,omitempty"`
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
		ci := c.info(st)
		out.Catalogs = append(out.Catalogs, ci)
		if len(idx.Problems) > 0 {
			if out.Problems == nil {
				out.Problems = map[string][]*Problem{}
			}
			out.Problems[name] = idx.Problems
		}
		for i := range idx.Plugins {
			e := &idx.Plugins[i]
			if q.Tier != "" && e.Tier != q.Tier {
				continue
			}
			if tag != "" && !hasTag(e.Tags, tag) {
				continue
			}
			m, ok := match(e, text, words)
			if !ok {
				continue
			}
			res := Result{Catalog: name, Name: e.Name, Description: e.Description, Tier: e.Tier, Tags: e.Tags, Match: m, Stale: ci.Stale}
			if res.Tags == nil {
				res.Tags = []string{}
			}
			if v := r.latest(e); v != nil {
				res.Latest, res.Status = v.Version, v.Status
			}
			out.Results = append(out.Results, res)
		}
	}
	sort.SliceStable(out.Results, func(i, j int) bool {
		a, b := &out.Results[i], &out.Results[j]
		if ra, rb := a.Match.rank(), b.Match.rank(); ra != rb {
			return ra < rb
		}
		if ta, tb := a.Tier.rank(), b.Tier.rank(); ta != tb {
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
		data, err := os.ReadFile(filepath.Join(c.dir, name, st.Current, indexFile))
		if errors.Is(err, fs.ErrNotExist) && attempt < 3 {
			continue // replaced while we read; read the new state
		}
		if err != nil {
			return nil, nil, c.damaged(name, err)
		}
		idx := &index{}
		if err := json.Unmarshal(data, idx); err != nil {
			return nil, nil, c.damaged(name, err)
		}
		return st, idx, nil
	}
}
