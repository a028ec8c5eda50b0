package marketplace_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
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

// An operator installs a plugin from a catalog: the cache resolves the
// version in its verified copy, downloads the archive with its digest
// pinned, and runs the store's install pipeline with the catalog's signers
// as the only acceptable ones and the bundle checked against the catalog's
// review summary. Confirm sees everything before anything is written.
func ExampleCache_Install() {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "berth-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		// Staged snapshots are read-only.
		filepath.WalkDir(tmp, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o700)
			}
			return nil
		})
		os.RemoveAll(tmp)
	}()

	// The curator publishes acme-notes 1.4.2, signed by its publisher.
	repoDir := filepath.Join(tmp, "repo")
	rootSHA256, err := publish(ctx, tmp, repoDir)
	if err != nil {
		log.Fatal(err)
	}

	// The operator adds the catalog, pinned by its first root, and
	// installs from it.
	cache := marketplace.OpenCache(filepath.Join(tmp, "home", "catalogs"), nil)
	src, err := marketplace.ParseSource(repoDir)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := cache.Add(ctx, "acme", src, marketplace.RootPin{SHA256: rootSHA256}); err != nil {
		log.Fatal(err)
	}
	paths, err := store.NewPaths(filepath.Join(tmp, "home"))
	if err != nil {
		log.Fatal(err)
	}
	st := store.Open(paths, nil)
	res, err := cache.Install(ctx, st, marketplace.InstallRequest{Name: "acme-notes", Constraint: "^1", Confirm: func(c *marketplace.InstallCandidate) error {
		fmt.Printf("install %s %s from catalog %s, new signer %v? yes\n", c.Plugin.Name, c.Version.Version, c.Catalog.Name, c.NewSigner != nil)
		return nil
	}})
	if err != nil {
		log.Fatal(err)
	}
	rec := res.Trust.Record
	fmt.Println("trusted", rec.ID(), "from catalog", rec.Catalog.Name, "for", rec.Catalog.Constraint)
	// Output:
	// install acme-notes 1.4.2 from catalog acme, new signer true? yes
	// trusted acme-notes@1.4.2 from catalog acme for ^1
}

// publish makes a catalog repository in repoDir holding acme-notes 1.4.2,
// signed by a new publisher key, and returns the sha256 of its first root.
func publish(ctx context.Context, tmp, repoDir string) (string, error) {
	dir := filepath.Join(tmp, "acme-notes")
	os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
	os.WriteFile(filepath.Join(dir, "bin", "notes"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "berth.json"), []byte(`{"manifestVersion": 1, "name": "acme-notes", "version": "1.4.2",
	  "description": "Search your notes", "mcpServers": {"notes": {"stdio": {"command": "${bundle}/bin/notes"}}}}`), 0o644)
	b, err := bundle.Open(ctx, dir, nil)
	if err != nil {
		return "", err
	}
	priv, pub, err := trust.GenerateKey()
	if err != nil {
		return "", err
	}
	sig, err := trust.Sign(ctx, b.Listing().Bytes(), priv)
	b.Close()
	if err != nil {
		return "", err
	}
	keyDir := filepath.Join(tmp, "keys")
	ir, err := repo.Init(ctx, repoDir, keyDir, &repo.Options{Name: "acme"})
	if err != nil {
		return "", err
	}
	r, err := repo.Open(repoDir, keyDir, nil)
	if err != nil {
		return "", err
	}
	acme, err := trust.NewKeySigner("acme", pub, nil)
	if err != nil {
		return "", err
	}
	v, err := trust.NewVerifier([]trust.Signer{acme}, nil)
	if err != nil {
		return "", err
	}
	if _, err := r.Add(ctx, repo.AddRequest{Source: dir, Signature: sig, Verifier: v}); err != nil {
		return "", err
	}
	return ir.RootSHA256, nil
}

// An operator copies a catalog into a directory for a network without
// access to its source; a berth there adds the copy with the same pin.
func ExampleCache_Mirror() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "berth-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	repoDir := filepath.Join(dir, "repo")
	res, err := repo.Init(ctx, repoDir, filepath.Join(dir, "keys"), &repo.Options{Name: "acme"})
	if err != nil {
		log.Fatal(err)
	}
	src, err := marketplace.ParseSource(repoDir)
	if err != nil {
		log.Fatal(err)
	}
	cache := marketplace.OpenCache(filepath.Join(dir, "home", "catalogs"), nil)
	if _, err := cache.Add(ctx, "acme", src, marketplace.RootPin{SHA256: res.RootSHA256}); err != nil {
		log.Fatal(err)
	}

	m, err := cache.Mirror(ctx, "acme", filepath.Join(dir, "mirror"), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("files", m.Files(), "same pin", m.RootSHA256 == res.RootSHA256)

	// Inside the network: the mirror is the source, pinned the same way.
	mirror, err := marketplace.ParseSource(m.Dir)
	if err != nil {
		log.Fatal(err)
	}
	inside := marketplace.OpenCache(filepath.Join(dir, "inside", "catalogs"), nil)
	info, err := inside.Add(ctx, "acme", mirror, marketplace.RootPin{SHA256: m.RootSHA256})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("targets version", info.TargetsVersion)
	// Output:
	// files 6 same pin true
	// targets version 1
}
