package marketplace

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/foreign"
	"github.com/berth-mcp/berth/marketplace/internal/textio"
)

// registryListTimeout bounds a whole listing.
const registryListTimeout = 15 * time.Minute

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
		maxPages = foreign.DefaultRegistryMaxPages
	}
	ctx, cancel := context.WithTimeout(ctx, registryListTimeout)
	defer cancel()
	o := src.opener(&c.o.Source)
	var items []*foreign.RegistryItem
	var ps []*catalog.Problem
	seen := map[string]int{}
	cursor := ""
	for page := 1; ; page++ {
		if page > maxPages {
			return nil, &SourceRefusedError{Catalog: name, Location: "v0/servers", Detail: fmt.Sprintf("the registry is still paginating after %d pages; berth stops there (a registry that paginates forever)", maxPages)}
		}
		q := url.Values{"limit": {fmt.Sprint(foreign.RegistryPageLimit)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		u := src.URL.ResolveReference(&url.URL{Path: "v0/servers", RawQuery: q.Encode()})
		loc := fmt.Sprintf("v0/servers (page %d)", page)
		rctx, rcancel := c.requestContext(ctx)
		data, err := readAll(rctx, o, u.String(), foreign.MaxRegistryPage, func(n int64) error {
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
		pg, pps, err := foreign.DecodeRegistryPage(data, page)
		if err != nil {
			return nil, &SourceRefusedError{Catalog: name, Location: loc, Detail: err.Error()}
		}
		ps = append(ps, pps...)
		items = append(items, pg.Items...)
		if pg.NextCursor == "" {
			break
		}
		if p, ok := seen[pg.NextCursor]; ok || pg.NextCursor == cursor {
			return nil, &SourceRefusedError{Catalog: name, Location: loc, Detail: fmt.Sprintf("the registry gave the cursor %q again (first on page %d): its pagination loops", textio.ShortText(pg.NextCursor), p)}
		}
		seen[pg.NextCursor] = page
		cursor = pg.NextCursor
	}
	plugins, aps := foreign.AssembleRegistry(items)
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
