package marketplace_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/repo"
)

// A curator makes a catalog; an operator adds it, pinned by the sha256 of
// its first root, and searches it offline.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "berth-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// Curator: the repository and its keys (kept outside what is served).
	repoDir := filepath.Join(dir, "repo")
	res, err := repo.Init(ctx, repoDir, filepath.Join(dir, "keys"), &repo.Options{Name: "acme"})
	if err != nil {
		log.Fatal(err)
	}

	// Operator: no trust on first use; the root is pinned.
	cache := marketplace.OpenCache(filepath.Join(dir, "home", "catalogs"), nil)
	src, err := marketplace.ParseSource(repoDir)
	if err != nil {
		log.Fatal(err)
	}
	info, err := cache.Add(ctx, "acme", src, marketplace.RootPin{SHA256: res.RootSHA256})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("targets version", info.TargetsVersion, "plugins", info.Plugins)

	// A wrong pin is refused, as an untrusted catalog.
	_, err = cache.Add(ctx, "evil", src, marketplace.RootPin{SHA256: "00000000000000000000000000000000000000000000000000000000000000ff"})
	fmt.Println(err != nil)

	found, err := cache.Search(marketplace.Query{Text: "notes"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("results", len(found.Results))
	// Output:
	// targets version 1 plugins 0
	// true
	// results 0
}
