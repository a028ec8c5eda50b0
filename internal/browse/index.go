package browse

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/catalog"
)

// Query is an index page's search and filters, as the GET parameters of
// the page give them.
type Query struct {
	Text    string // q: the search text, ranked as berth search ranks it
	Catalog string // catalog
	Tier    string // tier: official, verified, community
	Tag     string // tag
	Kind    string // kind: stdio, remote, native
	Status  string // status: active, deprecated, none (no installable version)
	Sort    string // sort: "" or relevance, updated
}

// Kinds of components, as the kind filter names them.
var kinds = []struct{ Value, Label string }{
	{"stdio", "local server (stdio)"},
	{"remote", "remote server"},
	{"native", "native tool"},
}

// Statuses of a plugin, as the status filter names them: that of the
// version berth install would pick, or none.
var statuses = []struct{ Value, Label string }{
	{"active", "active"},
	{"deprecated", "deprecated"},
	{"none", "no installable version"},
}

var sorts = []struct{ Value, Label string }{
	{"relevance", "relevance"},
	{"updated", "recently updated"},
}

// maxQuery caps the search text.
const maxQuery = 256

// ParseQuery reads a query from the page's parameters. A value that is
// not one the filter knows is an error that says which are.
func ParseQuery(v url.Values) (Query, error) {
	q := Query{Text: v.Get("q"), Catalog: v.Get("catalog"), Tier: v.Get("tier"), Tag: strings.ToLower(v.Get("tag")), Kind: v.Get("kind"), Status: v.Get("status"), Sort: v.Get("sort")}
	if len(q.Text) > maxQuery || !utf8.ValidString(q.Text) {
		return q, fmt.Errorf("the search text must be UTF-8 of at most %d bytes", maxQuery)
	}
	if q.Catalog != "" && marketplace.CheckName(q.Catalog) != nil {
		return q, fmt.Errorf("catalog %q is not a catalog name", q.Catalog)
	}
	if q.Tier != "" && !oneOf(q.Tier, "official", "verified", "community") {
		return q, fmt.Errorf("tier %q: choose official, verified or community", q.Tier)
	}
	if q.Tag != "" && !catalog.ValidTag(q.Tag) {
		return q, fmt.Errorf("tag %q is not a tag (lower-case letters, digits and '-')", q.Tag)
	}
	if q.Kind != "" && !oneOf(q.Kind, "stdio", "remote", "native") {
		return q, fmt.Errorf("kind %q: choose stdio, remote or native", q.Kind)
	}
	if q.Status != "" && !oneOf(q.Status, "active", "deprecated", "none") {
		return q, fmt.Errorf("status %q: choose active, deprecated or none", q.Status)
	}
	if q.Sort != "" && !oneOf(q.Sort, "relevance", "updated") {
		return q, fmt.Errorf("sort %q: choose relevance or updated", q.Sort)
	}
	return q, nil
}

func oneOf(s string, list ...string) bool {
	for _, x := range list {
		if s == x {
			return true
		}
	}
	return false
}

// card is one plugin on the index.
type card struct {
	Key         string // catalog/name
	Catalog     string
	Name        string
	Publisher   string
	Description string // one line
	Tier        string
	Tags        []string
	// Latest is the version berth install NAME would pick; "" when none.
	Latest  string
	Status  string
	Updated time.Time
	Kinds   []string // stdio, remote, native
	Servers int
	Native  int
	Tools   int
	// Versions counts the versions; Withdrawn those yanked or revoked.
	Versions  int
	Withdrawn int
	Stale     bool
	Signed    bool
	Icon      bool
	// Installed is the highest installed version, and whether it matches.
	Installed *installed
}

// Contents says what the card's plugin holds, for a person.
func (c *card) Contents() string {
	var parts []string
	add := func(n int, one, many string) {
		if n == 1 {
			parts = append(parts, "1 "+one)
		} else if n > 1 {
			parts = append(parts, fmt.Sprintf("%d %s", n, many))
		}
	}
	add(c.Servers, "server", "servers")
	add(c.Native, "native tool", "native tools")
	add(c.Tools, "tool listed", "tools listed")
	v := fmt.Sprintf("%d version", c.Versions)
	if c.Versions != 1 {
		v += "s"
	}
	if c.Withdrawn > 0 {
		v += fmt.Sprintf(" (%d withdrawn)", c.Withdrawn)
	}
	return strings.Join(append(parts, v), " · ")
}

// statusValue is the card's value for the status filter.
func (c *card) statusValue() string {
	if c.Latest == "" {
		return "none"
	}
	return c.Status
}

func (c *card) values(filter string) []string {
	switch filter {
	case "catalog":
		return []string{c.Catalog}
	case "tier":
		return []string{c.Tier}
	case "tag":
		return c.Tags
	case "kind":
		return c.Kinds
	case "status":
		return []string{c.statusValue()}
	}
	return nil
}

func newCard(snap *snapshot, cv *catalogView, p *catalog.Plugin, r *marketplace.Result) *card {
	c := &card{Key: cv.Info.Name + "/" + p.Name, Catalog: cv.Info.Name, Name: p.Name, Description: oneLine(p.Description, 160), Tier: string(p.Tier),
		Tags: p.Tags, Latest: r.Latest, Status: string(r.Status), Versions: len(p.Versions), Stale: cv.Info.Stale, Signed: cv.Verification.Signed, Icon: p.IconPNG() != nil}
	if p.Publisher != nil {
		c.Publisher = p.Publisher.Name
	}
	for _, v := range p.Versions {
		if v.Released.After(c.Updated) {
			c.Updated = v.Released
		}
		if v.Status == catalog.StatusYanked || v.Status == catalog.StatusRevoked {
			c.Withdrawn++
		}
	}
	// The components are those of the version install would pick, or of
	// the highest.
	v := p.Version(r.Latest)
	if v == nil && len(p.Versions) > 0 {
		v = p.Versions[len(p.Versions)-1]
	}
	if v != nil {
		has := map[string]bool{}
		for _, sv := range v.Summary.Servers {
			has[sv.Kind] = true
		}
		if len(v.Summary.NativeTools) > 0 {
			has["native"] = true
		}
		for _, k := range kinds {
			if has[k.Value] {
				c.Kinds = append(c.Kinds, k.Value)
			}
		}
		c.Servers, c.Native, c.Tools = len(v.Summary.Servers), len(v.Summary.NativeTools), len(v.Summary.Tools)
	}
	if in := snap.installedOf(p); len(in) > 0 {
		c.Installed = &in[0]
	}
	return c
}

// oneLine is the first line of s, cut to n characters.
func oneLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// facet is one filter with the count of each of its values.
type facet struct {
	Name, Label string
	Options     []option
}

type option struct {
	Value, Label string
	Count        int
	Selected     bool
}

// results is an index page's content.
type results struct {
	Query Query
	// All are the cards that match the query and filters, ranked.
	All []*card
	// Shown are the first MaxResults of them.
	Shown  []*card
	Facets []facet
	Sorts  []option
	// Total is the number of plugins in every catalog.
	Total    int
	Catalogs int
	// Builtin are the built-in catalog's entries (all of them, whatever
	// the query: there are few).
	Builtin []builtinEntry
	// Stale are the stale catalogs whose plugins are among the results.
	Stale []*marketplace.CatalogInfo
}

// search ranks the plugins for q with berth search's ranking, then
// filters and sorts them.
func (s *Site) search(snap *snapshot, q Query, limit int) (*results, error) {
	found, err := s.cache.Search(marketplace.Query{Text: q.Text}, s.o.Resolve)
	if err != nil {
		return nil, err
	}
	out := &results{Query: q, Catalogs: len(snap.catalogs), Builtin: snap.builtin}
	for _, cv := range snap.catalogs {
		out.Total += len(cv.Catalog.Plugins)
	}
	var cards []*card
	for i := range found.Results {
		r := &found.Results[i]
		cv := snap.byName[r.Catalog]
		if cv == nil {
			continue // added after the snapshot was read
		}
		p := cv.byName[r.Name]
		if p == nil {
			continue // a copy newer than the snapshot
		}
		cards = append(cards, newCard(snap, cv, p, r))
	}
	filters := map[string]string{"catalog": q.Catalog, "tier": q.Tier, "tag": q.Tag, "kind": q.Kind, "status": q.Status}
	pass := func(c *card, except string) bool {
		for f, want := range filters {
			if want == "" || f == except {
				continue
			}
			if !oneOf(want, c.values(f)...) {
				return false
			}
		}
		return true
	}
	for _, c := range cards {
		if pass(c, "") {
			out.All = append(out.All, c)
		}
	}
	if q.Sort == "updated" {
		sort.SliceStable(out.All, func(i, j int) bool { return out.All[i].Updated.After(out.All[j].Updated) })
	}
	out.Shown = out.All
	if limit > 0 && len(out.Shown) > limit {
		out.Shown = out.Shown[:limit]
	}
	// Each facet counts the cards that pass every other filter.
	facetOf := func(name, label string, opts []option) facet {
		counts := map[string]int{}
		for _, c := range cards {
			if pass(c, name) {
				for _, v := range c.values(name) {
					counts[v]++
				}
			}
		}
		for i := range opts {
			opts[i].Count = counts[opts[i].Value]
			opts[i].Selected = filters[name] == opts[i].Value
		}
		return facet{Name: name, Label: label, Options: opts}
	}
	var catOpts, tagOpts []option
	for _, cv := range snap.catalogs {
		catOpts = append(catOpts, option{Value: cv.Info.Name, Label: cv.Info.Name})
	}
	tags := map[string]bool{}
	for _, c := range cards {
		for _, t := range c.Tags {
			tags[t] = true
		}
	}
	if q.Tag != "" {
		tags[q.Tag] = true
	}
	for _, t := range slices.Sorted(maps.Keys(tags)) {
		tagOpts = append(tagOpts, option{Value: t, Label: t})
	}
	var tierOpts, kindOpts, statusOpts []option
	for _, t := range catalog.Tiers {
		tierOpts = append(tierOpts, option{Value: string(t), Label: string(t)})
	}
	for _, k := range kinds {
		kindOpts = append(kindOpts, option{Value: k.Value, Label: k.Label})
	}
	for _, st := range statuses {
		statusOpts = append(statusOpts, option{Value: st.Value, Label: st.Label})
	}
	out.Facets = []facet{
		facetOf("catalog", "Catalog", catOpts),
		facetOf("tier", "Tier", tierOpts),
		facetOf("tag", "Tag", tagOpts),
		facetOf("kind", "Component", kindOpts),
		facetOf("status", "Status", statusOpts),
	}
	for _, o := range sorts {
		out.Sorts = append(out.Sorts, option{Value: o.Value, Label: o.Label, Selected: q.Sort == o.Value || (q.Sort == "" && o.Value == "relevance")})
	}
	stale := map[string]bool{}
	for _, c := range out.All {
		stale[c.Catalog] = stale[c.Catalog] || c.Stale
	}
	for _, cv := range snap.catalogs {
		if stale[cv.Info.Name] {
			out.Stale = append(out.Stale, cv.Info)
		}
	}
	return out, nil
}
