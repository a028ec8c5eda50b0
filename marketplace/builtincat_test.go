package marketplace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/fetched"
	"github.com/berth-mcp/berth/marketplace/builtin"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// TestEnsureBuiltin: the built-in catalog is put into an empty cache,
// listed with its exact source, kept when current, replaced when another
// berth wrote it, never put back once removed, and never put over a
// catalog of the operator's under its name.
func TestEnsureBuiltin(t *testing.T) {
	ctx := context.Background()
	bc, err := builtin.Load()
	if err != nil {
		t.Fatal(err)
	}
	c := OpenCache(filepath.Join(t.TempDir(), "catalogs"), nil)
	if err := c.EnsureBuiltin(ctx); err != nil {
		t.Fatal(err)
	}
	list, err := c.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("List = %v, %v", list, err)
	}
	ci := list[0]
	if ci.Name != builtin.Name || ci.Kind != KindBuiltin || ci.Source != bc.Source() || ci.Stale || ci.Plugins != len(bc.Plugins) {
		t.Errorf("the built-in catalog is listed as %+v", ci)
	}
	res, err := c.Search(Query{Text: "filesystem"}, nil)
	if err != nil || len(res.Results) == 0 || !res.Results[0].Builtin || res.Results[0].Name != "filesystem" {
		t.Fatalf("search filesystem = %+v, %v", res, err)
	}

	// Another berth's copy is replaced.
	stPath := filepath.Join(c.dir, builtin.Name, "state.json")
	data, _ := os.ReadFile(stPath)
	os.WriteFile(stPath, []byte(strings.Replace(string(data), bc.Source(), "builtin (berth 0.0.1, 2000-01-01)", 1)), 0o600)
	if err := c.EnsureBuiltin(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := c.readState(builtin.Name); st.Source != bc.Source() {
		t.Errorf("an old copy was kept: %q", st.Source)
	}

	// Removed, it stays removed.
	if err := c.Remove(ctx, builtin.Name); err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureBuiltin(ctx); err != nil {
		t.Fatal(err)
	}
	if names, _ := c.Names(); len(names) != 0 {
		t.Fatalf("the removed built-in catalog came back: %v", names)
	}
	if _, err := c.RestoreBuiltin(ctx); err != nil {
		t.Fatal(err)
	}
	if names, _ := c.Names(); len(names) != 1 {
		t.Fatalf("add --builtin did not put it back: %v", names)
	}
}

// TestCheckBuiltinFetch: the staged tree must hold the pinned package at
// the top, at its version and integrity.
func TestCheckBuiltinFetch(t *testing.T) {
	e := &builtin.Entry{Name: "filesystem", Package: "@modelcontextprotocol/server-filesystem", Version: "1.0.0", Integrity: "sha512-" + strings.Repeat("A", 86) + "=="}
	cand := func(path, version, integrity string) *store.Candidate {
		return &store.Candidate{Fetched: []*fetched.Lock{{Server: "filesystem", Packages: []fetched.Package{
			{Name: "zod", Version: "3.0.0", Path: "node_modules/zod", Integrity: "sha512-x"},
			{Name: e.Package, Version: version, Path: path, Integrity: integrity},
		}}}}
	}
	if err := checkBuiltinFetch(e, cand("node_modules/"+e.Package, e.Version, e.Integrity)); err != nil {
		t.Fatalf("the pinned package: %v", err)
	}
	for name, c := range map[string]*store.Candidate{
		"other bytes":   cand("node_modules/"+e.Package, e.Version, "sha512-"+strings.Repeat("B", 86)+"=="),
		"other version": cand("node_modules/"+e.Package, "1.0.1", e.Integrity),
		"nested only":   cand("node_modules/x/node_modules/"+e.Package, e.Version, e.Integrity),
		"nothing":       {},
	} {
		err := checkBuiltinFetch(e, c)
		var be *BuiltinIntegrityError
		if !errors.As(err, &be) || !errors.Is(err, trust.ErrUntrusted) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// BenchmarkEnsureBuiltinCurrent is what every command that opens the
// catalogs pays once the built-in catalog is in the cache.
func BenchmarkEnsureBuiltinCurrent(b *testing.B) {
	ctx := context.Background()
	c := OpenCache(filepath.Join(b.TempDir(), "catalogs"), nil)
	if err := c.EnsureBuiltin(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.EnsureBuiltin(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnsureBuiltinFirst is the first command on a fresh BERTH_HOME.
func BenchmarkEnsureBuiltinFirst(b *testing.B) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		c := OpenCache(filepath.Join(b.TempDir(), "catalogs"), nil)
		if err := c.EnsureBuiltin(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
