package foreign

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/Masterminds/semver/v3"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/importer"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/internal/textio"
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
	// MaxRegistryListing bounds a whole listing: the bytes berth keeps
	// of it (RegistryItem.Size, summed over the pages, problems
	// included), as catalog.MaxSize bounds a signed catalog. Pages and
	// entries within their own bounds could otherwise add up to
	// gigabytes of memory and disk.
	MaxRegistryListing = catalog.MaxSize
	// registryItemOverhead is what berth counts for one kept item
	// beyond its text: the keys of its cached entry, its times and
	// status, the records that hold it in memory.
	registryItemOverhead = 256
)

// RegistryItem is one accepted servers[] item: a version of a server.
// Its fields are AssembleRegistry's to read.
type RegistryItem struct {
	name, version, description, homepage string
	// sourceVersion is the version as the registry wrote it, when berth
	// lists it as another ("v1.0.0" is 1.0.0).
	sourceVersion        string
	status               catalog.Status
	statusMessage        string
	published, updated   time.Time
	isLatest             bool
	server               json.RawMessage
	serverRef, serverLen int64
	loc                  string
}

// Size is what berth counts of the item against MaxRegistryListing: its
// texts, its server.json (even once taken by TakeServer) and a fixed
// overhead.
func (it *RegistryItem) Size() int64 {
	return int64(len(it.name)+len(it.version)+len(it.sourceVersion)+len(it.description)+len(it.homepage)+len(it.statusMessage)+len(it.loc)+registryItemOverhead) + it.serverLen
}

// TakeServer returns the item's server.json (compacted) and forgets it,
// so that a listing need not hold every server.json in memory: the caller
// keeps it (on disk) under ref, and AssembleRegistry gives the version it
// makes of the item that ref as UnsignedVersion.ServerRef, with a nil
// ServerJSON. A deleted item has none to take.
func (it *RegistryItem) TakeServer(ref int64) json.RawMessage {
	s := it.server
	it.server, it.serverRef = nil, ref
	return s
}

// ProblemSize is what berth counts of a problem against
// MaxRegistryListing.
func ProblemSize(p *catalog.Problem) int64 {
	return int64(len(p.Plugin)+len(p.Path)+len(p.Rule)+len(p.Message)) + registryItemOverhead
}

// RegistryPage is one decoded /v0/servers response.
type RegistryPage struct {
	Items      []*RegistryItem // deleted ones included: AssembleRegistry drops them
	NextCursor string
}

const officialMeta = "io.modelcontextprotocol.registry/official"

// ParseRegistryPage decodes one response of an MCP Registry's GET
// /v0/servers leniently: a servers[] item that is malformed in any way is
// a problem and skipped (STYLE rule 11), deleted versions are dropped,
// and the rest are returned with the next cursor. It fails only when the
// response as a whole is not a registry listing. page numbers the
// problems' locations. items counts the versions that are not deleted.
func ParseRegistryPage(data []byte, page int) (items int, nextCursor string, problems []*catalog.Problem, err error) {
	p, ps, err := DecodeRegistryPage(data, page)
	if err != nil {
		return 0, "", nil, err
	}
	for _, it := range p.Items {
		if it.status != "deleted" {
			items++
		}
	}
	return items, p.NextCursor, ps, nil
}

// DecodeRegistryPage is ParseRegistryPage that returns the accepted
// items themselves, for AssembleRegistry, and the next cursor.
func DecodeRegistryPage(data []byte, page int) (*RegistryPage, []*catalog.Problem, error) {
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
	out := &RegistryPage{}
	if m := doc.Metadata; m != nil {
		switch {
		case m.NextCursor != nil:
			out.NextCursor = *m.NextCursor
		case m.NextCursorOld != nil:
			out.NextCursor = *m.NextCursorOld
		}
	}
	var ps []*catalog.Problem
	for i, raw := range *doc.Servers {
		loc := fmt.Sprintf("page %d: servers[%d]", page, i)
		it, p := parseRegistryItem(raw, loc)
		if p != nil {
			ps = append(ps, p)
			continue
		}
		out.Items = append(out.Items, it)
	}
	return out, ps, nil
}

func parseRegistryItem(raw json.RawMessage, loc string) (*RegistryItem, *catalog.Problem) {
	who := "" // the entry's name, once known
	bad := func(rule, path, format string, args ...any) (*RegistryItem, *catalog.Problem) {
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
	version, sourceVersion := s.Version, ""
	// The registry accepts a "v" before a semantic version; the version
	// is the semantic version (the importer reads it so too).
	if rest, ok := strings.CutPrefix(version, "v"); ok && bundle.IsStrictSemver(rest) {
		version, sourceVersion = rest, s.Version
	}
	if _, err := semver.StrictNewVersion(version); err != nil {
		return bad(RuleRegistryEntryVersion, ".server.version", "the version %q is not strict semver (like 1.2.3, or v1.2.3), so berth cannot order it among the server's versions; it is skipped (berth resolves and pins versions by semver)", textio.ShortText(s.Version))
	}
	if err := entryText(s.Description, catalog.MaxDescription); err != nil {
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
		return bad(RuleRegistryEntryMeta, "._meta.status", "the status %q is not active, deprecated or deleted", textio.ShortText(meta.Status))
	}
	if meta.PublishedAt.IsZero() {
		return bad(RuleRegistryEntryMeta, "._meta.publishedAt", "publishedAt is missing; berth needs it for min-release-age")
	}
	if err := entryText(meta.StatusMessage, catalog.MaxReason); err != nil {
		return bad(RuleRegistryEntryText, "._meta.statusMessage", "the status message: %v", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, server); err != nil {
		return bad(RuleRegistryEntrySyntax, ".server", "the server.json does not decode: %v", err)
	}
	kept := KeepUsedFields(compact.Bytes())
	out := &RegistryItem{name: s.Name, version: version, sourceVersion: sourceVersion, description: s.Description, status: catalog.Status(meta.Status), statusMessage: meta.StatusMessage,
		published: meta.PublishedAt.UTC(), updated: meta.UpdatedAt.UTC(), isLatest: meta.IsLatest, server: kept, serverLen: int64(len(kept)), loc: loc}
	if isHTTPSURL(s.WebsiteURL) {
		out.homepage = s.WebsiteURL
	}
	return out, nil
}

// usedFields are the top-level server.json fields whose values berth
// keeps: the ones the importer builds the bundle from or shows
// (importer.OpenServerJSON). Of the others (_meta, icons, and fields the
// schema does not define) berth keeps only the name.
var usedFields = map[string]bool{"$schema": true, "name": true, "description": true, "version": true, "title": true, "websiteUrl": true, "repository": true, "packages": true, "remotes": true}

// KeepUsedFields returns the compacted server.json doc with the value of
// every top-level field berth does not use emptied: an object becomes {}
// and an array [] (other values are small and stay). The names stay, in
// their order, so the review still lists each under "not carried over"
// (or refuses a field of another schema version, as for the whole
// document); every other byte is kept as it was. A document it cannot
// walk is returned as it is.
func KeepUsedFields(doc []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(doc))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return doc
	}
	out := make([]byte, 0, len(doc))
	out = append(out, '{')
	changed := false
	for dec.More() {
		start := dec.InputOffset() // at the ',' before the key, or the key
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return doc
		}
		valueAt := dec.InputOffset() + 1 // past the ':' (doc is compact)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return doc
		}
		end := dec.InputOffset()
		if usedFields[key] || len(v) == 0 || (v[0] != '{' && v[0] != '[') || valueAt > end || valueAt <= start {
			out = append(out, doc[start:end]...)
			continue
		}
		out = append(out, doc[start:valueAt]...)
		if v[0] == '{' {
			out = append(out, "{}"...)
		} else {
			out = append(out, "[]"...)
		}
		changed = changed || end-valueAt > 2
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') || dec.InputOffset() != int64(len(doc)) {
		return doc
	}
	if !changed {
		return doc
	}
	return append(out, '}')
}

// AssembleRegistry groups the accepted items by server into entries: a
// second item of the same name and version is skipped, and so is every
// server whose berth name collides with another server's (a lying
// registry could otherwise shadow one server with another).
func AssembleRegistry(items []*RegistryItem) ([]*UnsignedPlugin, []*catalog.Problem) {
	var ps []*catalog.Problem
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
		p.Versions = append(p.Versions, &UnsignedVersion{Version: it.version, SourceVersion: it.sourceVersion, Status: it.status, StatusMessage: it.statusMessage, Released: it.published, Updated: it.updated, IsLatest: it.isLatest, ServerJSON: it.server, ServerRef: it.serverRef})
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

// RegistryVersionURL is where the registry serves one version of a
// server: the source the trust record of an install names.
func RegistryVersionURL(source, serverName, version string) string {
	return strings.TrimSuffix(source, "/") + "/v0/servers/" + url.PathEscape(serverName) + "/versions/" + url.PathEscape(version)
}
