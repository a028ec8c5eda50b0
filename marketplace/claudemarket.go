package marketplace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/foreign"
)

// ClaudeMarketplaceSource reads where a marketplace.json is: a directory
// holding .claude-plugin/marketplace.json, the path of a marketplace.json,
// or an https URL of one (http only on a loopback address). It returns
// the source as berth records it.
func ClaudeMarketplaceSource(s string) (string, error) {
	if strings.Contains(s, "://") {
		src, err := ParseSource(s)
		if err != nil {
			return "", err
		}
		if src.Kind != "directory" {
			u := *src.URL
			if !strings.HasSuffix(s, "/") {
				u.Path = strings.TrimSuffix(u.Path, "/")
			}
			return u.String(), nil
		}
		s = src.Dir
	}
	abs, err := filepath.Abs(s)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("the marketplace %s: %w", s, err)
	}
	if fi.IsDir() {
		abs = filepath.Join(abs, ".claude-plugin", "marketplace.json")
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("the directory %s has no .claude-plugin/marketplace.json; give a Claude Code marketplace directory or its marketplace.json", s)
		}
	}
	return abs, nil
}

// AddClaudeMarketplace adds a Claude Code marketplace.json (source as
// ClaudeMarketplaceSource returns it) as the read-only, unsigned catalog
// name.
func (c *Cache) AddClaudeMarketplace(ctx context.Context, name, source string) (*RefreshResult, error) {
	return c.addUnsigned(ctx, name, KindClaudeMarketplace, source)
}

func (c *Cache) readClaudeMarketplace(ctx context.Context, name, source string) (*unsignedList, error) {
	var data []byte
	var err error
	root := ""
	if strings.Contains(source, "://") {
		src, perr := ParseSource(source)
		if perr != nil {
			return nil, fmt.Errorf("catalog %s: %w", name, perr)
		}
		rctx, cancel := c.requestContext(ctx)
		data, err = readAll(rctx, src.opener(&c.o.Source), source, foreign.MaxMarketplaceFile, func(n int64) error {
			return &SourceRefusedError{Catalog: name, Location: source, Detail: fmt.Sprintf("marketplace.json is larger than %d bytes", n)}
		})
		cancel()
		var nf *errNotFound
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("catalog %s: %s is not there (%w); check the URL", name, source, ErrNetwork)
		}
	} else {
		root = foreign.MarketRoot(source)
		// Never blocks on a FIFO: refused as special-file.
		data, err = fsx.ReadRegularFile(ctx, source, foreign.MaxMarketplaceFile)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, &SourceRefusedError{Catalog: name, Location: source, Detail: err.Error()}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", name, err)
	}
	entries, ps, err := foreign.ParseClaudeMarketplace(data, root)
	if err != nil {
		return nil, &SourceRefusedError{Catalog: name, Location: source, Detail: err.Error()}
	}
	out := &unsignedList{problems: ps}
	for _, e := range entries {
		out.plugins = append(out.plugins, &foreign.UnsignedPlugin{Name: e.Name, SourceName: e.SourceName, Description: e.Description, Homepage: e.Homepage, Dir: e.Dir,
			Versions: []*foreign.UnsignedVersion{{Version: e.Version, Status: catalog.StatusActive}}})
	}
	return out, nil
}
