package marketplace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/Masterminds/semver/v3"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/importer"
)

// Rules of the entries of an unsigned source (docs/marketplace.md). An
// entry that breaks one is reported and skipped; the rest list.
const (
	RuleRegistryEntrySyntax    = "registry-entry-syntax"
	RuleRegistryEntryName      = "registry-entry-name"
	RuleRegistryEntryVersion   = "registry-entry-version"
	RuleRegistryEntryMeta      = "registry-entry-meta"
	RuleRegistryEntryText      = "registry-entry-text"
	RuleRegistryEntrySize      = "registry-entry-size"
	RuleRegistryEntryDuplicate = "registry-entry-duplicate"
	RuleRegistryNameCollision  = "registry-name-collision"
)

// Limits of a registry listing. A registry that sends more is refused
// (SourceRefusedError), so a lying registry cannot fill the disk or keep
// berth paginating forever.
const (
	// RegistryPageLimit is the page size berth asks for (the API's maximum).
	RegistryPageLimit = 100
	// DefaultRegistryMaxPages bounds the pages of one listing (100,000
	// server versions at 100 a page).
	DefaultRegistryMaxPages = 1000
	// MaxRegistryPage is the largest page berth reads.
	MaxRegistryPage = 8 << 20
	// MaxRegistryEntry is the largest server.json of one entry.
	MaxRegistryEntry = 256 << 10
	// registryListTimeout bounds a whole listing.
	registryListTimeout = 15 * time.Minute
)

// registryItem is one accepted servers[] item: a version of a server.
type registryItem struct {
	name, version, description, homepage string
	status                               Status
	statusMessage                        string
	published, updated                   time.Time
	isLatest                             bool
	server                               json.RawMessage
	loc                                  string
}

// registryPage is one decoded /v0/servers response.
type registryPage struct {
	items      []*registryItem // deleted ones included: assembleRegistry drops them
	nextCursor string
}

const officialMeta = "io.modelcontextprotocol.registry/official"

// ParseRegistryPage decodes one response of an MCP Registry's GET
// /v0/servers leniently: a servers[] item that is malformed in any way is
// a problem and skipped (STYLE rule 11), deleted versions are dropped,
// and the rest are returned with the next cursor. It fails only when the
// response as a whole is not a registry listing. page numbers the
// problems' locations. items counts the versions that are not deleted.
func ParseRegistryPage(data []byte, page int) (items int, nextCursor string, problems []*Problem, err error) {
	p, ps, err := parseRegistryPage(data, page)
	if err != nil {
		return 0, "", nil, err
	}
	for _, it := range p.items {
		if it.status != "deleted" {
			items++
		}
	}
	return items, p.nextCursor, ps, nil
}

func parseRegistryPage(data []byte, page int) (*registryPage, []*Problem, error) {
	if len(data) > MaxRegistryPage {
		return nil, nil, fmt.Errorf("the response is %d bytes, over the limit of %d", len(data), MaxRegistryPage)
	}
	if !utf8.Valid(data) {
		return nil, nil, fmt.Errorf("the response is not UTF-8 text")
	}
	var doc struct {
		Servers  *[]json.RawMessage `json:"servers"`
		Metadata *struct {
			NextCursor *string `json:"nextCursor"`
			// Older builds of the registry wrote next_cursor.
			NextCursorOld *string `json:"next_cursor"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("the response is not a registry listing (%v); it must look like {\"servers\": [...], \"metadata\": {\"nextCursor\": ...}}", err)
	}
	if doc.Servers == nil {
		return nil, nil, fmt.Errorf("the response has no \"servers\" array; is the URL the base of an MCP Registry (the one that serves /v0/servers)?")
	}
	out := &registryPage{}
	if m := doc.Metadata; m != nil {
		switch {
		case m.NextCursor != nil:
			out.nextCursor = *m.NextCursor
		case m.NextCursorOld != nil:
			out.nextCursor = *m.NextCursorOld
		}
	}
	var ps []*Problem
	for i, raw := range *doc.Servers {
		loc := fmt.Sprintf("page %d: servers[%d]", page, i)
		it, p := parseRegistryItem(raw, loc)
		if p != nil {
			ps = append(ps, p)
			continue
		}
		out.items = append(out.items, it)
	}
	return out, ps, nil
}

func parseRegistryItem(raw json.RawMessage, loc string) (*registryItem, *Problem) {
	who := "" // the entry's name, once known
	bad := func(rule, path, format string, args ...any) (*registryItem, *Problem) {
		return nil, problemf(who, loc+path, rule, format, args...)
	}
	var it struct {
		Server json.RawMessage            `json:"server"`
		Meta   map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &it); err != nil {
		return bad(RuleRegistryEntrySyntax, "", "the item is not an object with \"server\" and \"_meta\": %v", err)
	}
	server := bytes.TrimSpace(it.Server)
	if len(server) == 0 || server[0] != '{' {
		return bad(RuleRegistryEntrySyntax, ".server", "the item has no server object (its server.json)")
	}
	if len(server) > MaxRegistryEntry {
		return bad(RuleRegistryEntrySize, ".server", "the server.json is %d bytes, over the limit of %d", len(server), MaxRegistryEntry)
	}
	var s struct {
		Name        string `json:"name"`
		Version     string `json:"version"`
		Description string `json:"description"`
		WebsiteURL  string `json:"websiteUrl"`
	}
	if err := json.Unmarshal(server, &s); err != nil {
		return bad(RuleRegistryEntrySyntax, ".server", "the server.json does not decode: %v", err)
	}
	if _, err := importer.RegistryPluginName(s.Name); err != nil {
		return bad(RuleRegistryEntryName, ".server.name", "%v", err)
	}
	who = s.Name
	if _, err := semver.StrictNewVersion(s.Version); err != nil {
		return bad(RuleRegistryEntryVersion, ".server.version", "the version %q is not strict semver (like 1.2.3); berth resolves and pins versions by semver", shortText(s.Version))
	}
	if err := entryText(s.Description, maxDescription); err != nil {
		return bad(RuleRegistryEntryText, ".server.description", "the description: %v", err)
	}
	var meta struct {
		Status          string    `json:"status"`
		PublishedAt     time.Time `json:"publishedAt"`
		UpdatedAt       time.Time `json:"updatedAt"`
		IsLatest        bool      `json:"isLatest"`
		StatusMessage   string    `json:"statusMessage"`
		StatusChangedAt time.Time `json:"statusChangedAt"`
	}
	rawMeta, ok := it.Meta[officialMeta]
	if !ok {
		return bad(RuleRegistryEntryMeta, "._meta", "the item has no %q metadata (status and publishedAt); berth does not guess an entry's status or age", officialMeta)
	}
	if err := json.Unmarshal(rawMeta, &meta); err != nil {
		return bad(RuleRegistryEntryMeta, "._meta", "the %q metadata does not decode: %v", officialMeta, err)
	}
	switch meta.Status {
	case "active", "deprecated", "deleted":
	default:
		return bad(RuleRegistryEntryMeta, "._meta.status", "the status %q is not active, deprecated or deleted", shortText(meta.Status))
	}
	if meta.PublishedAt.IsZero() {
		return bad(RuleRegistryEntryMeta, "._meta.publishedAt", "publishedAt is missing; berth needs it for min-release-age")
	}
	if err := entryText(meta.StatusMessage, maxReason); err != nil {
		return bad(RuleRegistryEntryText, "._meta.statusMessage", "the status message: %v", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, server); err != nil {
		return bad(RuleRegistryEntrySyntax, ".server", "the server.json does not decode: %v", err)
	}
	out := &registryItem{name: s.Name, version: s.Version, description: s.Description, status: Status(meta.Status), statusMessage: meta.StatusMessage,
		published: meta.PublishedAt.UTC(), updated: meta.UpdatedAt.UTC(), isLatest: meta.IsLatest, server: compact.Bytes(), loc: loc}
	if isHTTPSURL(s.WebsiteURL) {
		out.homepage = s.WebsiteURL
	}
	return out, nil
}

// assembleRegistry groups the accepted items by server into entries: a
// second item of the same name and version is skipped, and so is every
// server whose berth name collides with another server's (a lying
// registry could otherwise shadow one server with another).
func assembleRegistry(items []*registryItem) ([]*UnsignedPlugin, []*Problem) {
	var ps []*Problem
	byName := map[string]*UnsignedPlugin{}
	firstLoc := map[string]string{}
	// A version deleted anywhere in the listing is gone, whatever another
	// item of it says.
	deleted := map[string]bool{}
	for _, it := range items {
		if it.status == "deleted" {
			deleted[it.name+"@"+it.version] = true
		}
	}
	var order []string
	for _, it := range items {
		if deleted[it.name+"@"+it.version] {
			continue
		}
		p := byName[it.name]
		if p == nil {
			mapped, _ := importer.RegistryPluginName(it.name) // checked by parseRegistryItem
			p = &UnsignedPlugin{Name: mapped, SourceName: it.name}
			byName[it.name] = p
			order = append(order, it.name)
		}
		key := it.name + "@" + it.version
		if l, dup := firstLoc[key]; dup {
			ps = append(ps, problemf(it.name, it.loc, RuleRegistryEntryDuplicate, "%s %s is listed again (first at %s); the second is skipped", it.name, it.version, l))
			continue
		}
		firstLoc[key] = it.loc
		p.Versions = append(p.Versions, &UnsignedVersion{Version: it.version, Status: it.status, StatusMessage: it.statusMessage, Released: it.published, Updated: it.updated, IsLatest: it.isLatest, ServerJSON: it.server})
		if it.isLatest || p.Description == "" {
			p.Description, p.Homepage = it.description, it.homepage
		}
	}
	byMapped := map[string][]string{}
	for _, n := range order {
		m := byName[n].Name
		byMapped[m] = append(byMapped[m], n)
	}
	var out []*UnsignedPlugin
	for _, n := range order {
		p := byName[n]
		if others := byMapped[p.Name]; len(others) > 1 {
			ps = append(ps, problemf(n, n, RuleRegistryNameCollision, "the registry names %s all map to the berth name %s; berth cannot tell them apart, so it lists none of them (install one with berth trust of its server.json)", strings.Join(others, ", "), p.Name))
			continue
		}
		sort.SliceStable(p.Versions, func(i, j int) bool { return bundle.VersionLess(p.Versions[j].Version, p.Versions[i].Version) })
		out = append(out, p)
	}
	return out, ps
}

// fetchRegistry lists every server version of the registry at source
// through GET /v0/servers, following metadata.nextCursor: at most
// CacheOptions.RegistryMaxPages pages of at most MaxRegistryPage bytes,
// each request bounded by the request timeout and the whole listing by
// 15 minutes; a cursor the registry gave before is a loop and refused.
func (c *Cache) fetchRegistry(ctx context.Context, name, source string) (*unsignedList, error) {
	src, err := ParseRegistrySource(source)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", name, err)
	}
	maxPages := c.o.RegistryMaxPages
	if maxPages <= 0 {
		maxPages = DefaultRegistryMaxPages
	}
	ctx, cancel := context.WithTimeout(ctx, registryListTimeout)
	defer cancel()
	o := src.opener(&c.o.Source)
	var items []*registryItem
	var ps []*Problem
	seen := map[string]int{}
	cursor := ""
	for page := 1; ; page++ {
		if page > maxPages {
			return nil, &SourceRefusedError{Catalog: name, Location: "v0/servers", Detail: fmt.Sprintf("the registry is still paginating after %d pages; berth stops there (a registry that paginates forever)", maxPages)}
		}
		q := url.Values{"limit": {fmt.Sprint(RegistryPageLimit)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		u := src.URL.ResolveReference(&url.URL{Path: "v0/servers", RawQuery: q.Encode()})
		loc := fmt.Sprintf("v0/servers (page %d)", page)
		rctx, rcancel := c.requestContext(ctx)
		data, err := readAll(rctx, o, u.String(), MaxRegistryPage, func(n int64) error {
			return &SourceRefusedError{Catalog: name, Location: loc, Detail: fmt.Sprintf("the response is larger than %d bytes", n)}
		})
		rcancel()
		var nf *errNotFound
		switch {
		case errors.As(err, &nf):
			return nil, fmt.Errorf("catalog %s: %s answered 404 for v0/servers (%w); check that the URL is the base of an MCP Registry, like https://registry.modelcontextprotocol.io", name, redactURL(src.URL), ErrNetwork)
		case errors.Is(err, ErrNetwork):
			return nil, fmt.Errorf("catalog %s: %w; nothing changed, the cached copy (if any) stays: check your network connection or the source, and try again", name, err)
		case err != nil:
			return nil, err
		}
		pg, pps, err := parseRegistryPage(data, page)
		if err != nil {
			return nil, &SourceRefusedError{Catalog: name, Location: loc, Detail: err.Error()}
		}
		ps = append(ps, pps...)
		items = append(items, pg.items...)
		if pg.nextCursor == "" {
			break
		}
		if p, ok := seen[pg.nextCursor]; ok || pg.nextCursor == cursor {
			return nil, &SourceRefusedError{Catalog: name, Location: loc, Detail: fmt.Sprintf("the registry gave the cursor %q again (first on page %d): its pagination loops", shortText(pg.nextCursor), p)}
		}
		seen[pg.nextCursor] = page
		cursor = pg.nextCursor
	}
	plugins, aps := assembleRegistry(items)
	return &unsignedList{plugins: plugins, problems: append(ps, aps...)}, nil
}

// ParseRegistrySource reads the base URL of an MCP Registry: https, or
// http on a loopback address only (local mirrors and tests).
func ParseRegistrySource(s string) (*Source, error) {
	if !strings.Contains(s, "://") {
		return nil, fmt.Errorf("the registry %q is not a URL; give its base URL, like https://registry.modelcontextprotocol.io", s)
	}
	src, err := ParseSource(s)
	if err != nil {
		return nil, err
	}
	if src.Kind == "directory" {
		return nil, fmt.Errorf("the registry %q is a file URL; a registry is served over https (or http on a loopback address)", s)
	}
	return src, nil
}

// AddRegistry adds the MCP Registry at src (ParseRegistrySource) as the
// read-only, unsigned catalog name: it lists every server version through
// /v0/servers and keeps the list in the cache. Deleted versions are
// dropped; malformed entries are returned as problems and skipped.
func (c *Cache) AddRegistry(ctx context.Context, name string, src *Source) (*RefreshResult, error) {
	if src.Kind == "directory" {
		return nil, fmt.Errorf("the registry %s is a directory; a registry is served over https (or http on a loopback address)", src)
	}
	return c.addUnsigned(ctx, name, KindRegistry, src.String())
}

// RegistryVersionURL is where the registry serves one version of a
// server: the source the trust record of an install names.
func RegistryVersionURL(source, serverName, version string) string {
	return strings.TrimSuffix(source, "/") + "/v0/servers/" + url.PathEscape(serverName) + "/versions/" + url.PathEscape(version)
}
