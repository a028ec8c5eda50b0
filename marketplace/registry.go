package marketplace

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
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
// What it keeps of the listing is bounded in total by
// CacheOptions.RegistryMaxBytes (foreign.MaxRegistryListing): each page's
// server.json documents go to a spool file as the page is read, so memory
// holds one page and the entries' small fields, never the whole listing.
// The caller closes the list (which removes the spool).
func (c *Cache) fetchRegistry(ctx context.Context, name, source string) (_ *unsignedList, err error) {
	src, err := ParseRegistrySource(source)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", name, err)
	}
	maxPages := c.o.RegistryMaxPages
	if maxPages <= 0 {
		maxPages = foreign.DefaultRegistryMaxPages
	}
	budget := c.o.RegistryMaxBytes
	if budget <= 0 {
		budget = foreign.MaxRegistryListing
	}
	ctx, cancel := context.WithTimeout(ctx, registryListTimeout)
	defer cancel()
	sp, err := c.newSpool()
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			sp.close()
		}
	}()
	o := src.opener(&c.o.Source)
	var items []*foreign.RegistryItem
	var ps []*catalog.Problem
	var kept int64
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
		data = nil
		if err != nil {
			return nil, &SourceRefusedError{Catalog: name, Location: loc, Detail: err.Error()}
		}
		for _, p := range pps {
			kept += foreign.ProblemSize(p)
		}
		for _, it := range pg.Items {
			kept += it.Size()
			if err := sp.add(it); err != nil {
				return nil, err
			}
		}
		if kept > budget {
			return nil, &SourceRefusedError{Catalog: name, Location: loc, Detail: fmt.Sprintf("the listing is over berth's limit of %s for one registry (after %d server versions from %s); berth keeps no more of a listing than of a signed catalog, so a registry this large cannot be added whole", sizeText(budget), len(items)+len(pg.Items), redactURL(src.URL))}
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
	return &unsignedList{plugins: plugins, problems: append(ps, aps...), spool: sp}, nil
}

// sizeText is n bytes in words: "64 MiB (67108864 bytes)".
func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB (%d bytes)", n>>20, n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// spool holds the server.json documents of a registry listing on disk
// while it is fetched and written: a temp file in the cache directory,
// unlinked at once where the system allows (an interrupted add leaves
// nothing; elsewhere the next lock of the cache removes it, as it removes
// an interrupted add's directory).
type spool struct {
	f     *os.File
	w     *bufio.Writer
	spans []catalog.Span
	size  int64
}

func (c *Cache) newSpool() (*spool, error) {
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(c.dir, ".add-listing-")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name()) // fails where an open file cannot be removed; close removes it then
	return &spool{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

// add writes the server.json of it to the spool (TakeServer).
func (s *spool) add(it *foreign.RegistryItem) error {
	data := it.TakeServer(int64(len(s.spans)))
	s.spans = append(s.spans, catalog.Span{Off: s.size, N: int64(len(data))})
	n, err := s.w.Write(data)
	s.size += int64(n)
	if err != nil {
		return fmt.Errorf("writing the listing to %s: %w", filepath.Dir(s.f.Name()), err)
	}
	return nil
}

// server reads back the server.json of v, if the spool holds it.
func (s *spool) server(v *foreign.UnsignedVersion) (json.RawMessage, error) {
	if v.ServerJSON != nil || s == nil || v.ServerRef < 0 || v.ServerRef >= int64(len(s.spans)) {
		return v.ServerJSON, nil
	}
	if err := s.w.Flush(); err != nil {
		return nil, err
	}
	sp := s.spans[v.ServerRef]
	out := make([]byte, sp.N)
	if _, err := s.f.ReadAt(out, sp.Off); err != nil {
		return nil, fmt.Errorf("reading the listing back from %s: %w", filepath.Dir(s.f.Name()), err)
	}
	return out, nil
}

func (s *spool) close() {
	if s == nil {
		return
	}
	s.f.Close()
	os.Remove(s.f.Name())
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
