//go:build unix

package marketplace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/trust"
)

// plantFIFO replaces path (or puts in its place) a FIFO that no one
// ever writes.
func plantFIFO(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A FIFO planted as a directory catalog's timestamp.json is refused at
// once with the rule special-file (before, add and update blocked on it
// forever, holding the cache lock); a FIFO in place of catalog.json too.
func TestDirectoryCatalogFIFO(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e.ctx = ctx
	e.addCatalog()
	plantFIFO(t, filepath.Join(e.repoDir, "timestamp.json"))
	start := time.Now()
	_, err := e.refresh()
	var nr *fsx.NotRegularError
	if !errors.As(err, &nr) || !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "catalog acme refused at timestamp.json") ||
		!strings.Contains(err.Error(), "timestamp.json is a FIFO, not a regular file (rule special-file)") {
		t.Fatalf("update with a FIFO as timestamp.json: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the refusal took %v", d)
	}
	// The lock is free: another update does not wait.
	lctx, lcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer lcancel()
	if _, err := e.cache.Refresh(lctx, "acme"); !errors.As(err, &nr) {
		t.Errorf("a second update: %v", err)
	}

	// A fresh add of a catalog whose root probe meets a FIFO.
	e2 := newEnv(t, repo.Expiries{})
	e2.publish("acme-notes", "1.0.0")
	e2.ctx = ctx
	plantFIFO(t, filepath.Join(e2.repoDir, "2.root.json"))
	src, _ := ParseSource(e2.repoDir)
	if _, err := e2.cache.Add(ctx, "acme", src, RootPin{SHA256: e2.init.RootSHA256}); !errors.As(err, &nr) || !strings.Contains(err.Error(), "2.root.json is a FIFO") {
		t.Fatalf("add with a FIFO as 2.root.json: %v", err)
	}
	if names, _ := e2.cache.Names(); len(names) != 0 {
		t.Errorf("the refused add left %v", names)
	}
}

// A FIFO as a Claude marketplace's marketplace.json, or as a plugin's
// .claude-plugin/plugin.json, never blocks the listing.
func TestClaudeMarketplaceFIFO(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dir := copyMarket(t)
	file := filepath.Join(dir, ".claude-plugin", "marketplace.json")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	c := OpenCache(filepath.Join(t.TempDir(), "catalogs"), nil)
	if _, err := c.AddClaudeMarketplace(ctx, "team", file); err != nil {
		t.Fatal(err)
	}
	plantFIFO(t, file)
	_, err = c.Refresh(ctx, "team")
	if !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "marketplace.json is a FIFO, not a regular file (rule special-file)") {
		t.Fatalf("update with a FIFO as marketplace.json: %v", err)
	}
	// A plugin.json that is a FIFO is that entry's problem.
	os.Remove(file)
	os.WriteFile(file, data, 0o644)
	matches, _ := filepath.Glob(filepath.Join(dir, "plugins", "*", ".claude-plugin", "plugin.json"))
	if len(matches) == 0 {
		t.Fatal("no plugin.json in the fixture")
	}
	plantFIFO(t, matches[0])
	if _, err := c.Refresh(ctx, "team"); err != nil {
		t.Fatalf("update with a FIFO as a plugin.json: %v", err)
	}
}
