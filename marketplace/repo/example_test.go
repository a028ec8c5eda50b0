package repo_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/trust"
)

// A curator makes a catalog repository and adds a publisher's signed
// bundle to it: the bundle is validated, its signature verified against
// the curator's signer policy, its archive packed into the repository and
// checked, and the catalog signed and published.
func ExampleRepository_Add() {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "repo-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)

	// The publisher's bundle, signed with the publisher's key.
	dir := filepath.Join(tmp, "acme-notes")
	os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
	os.WriteFile(filepath.Join(dir, "bin", "notes"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "berth.json"), []byte(`{"manifestVersion": 1, "name": "acme-notes", "version": "1.4.2",
	  "description": "Search your notes", "mcpServers": {"notes": {"stdio": {"command": "${bundle}/bin/notes"}}}}`), 0o644)
	b, err := bundle.Open(ctx, dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	priv, pub, err := trust.GenerateKey()
	if err != nil {
		log.Fatal(err)
	}
	sig, err := trust.Sign(ctx, b.Listing().Bytes(), priv)
	b.Close()
	if err != nil {
		log.Fatal(err)
	}

	// The curator: a repository (keys kept outside what is served), and a
	// signer policy that accepts the publisher's key.
	r, err := initRepository(ctx, filepath.Join(tmp, "repo"), filepath.Join(tmp, "keys"))
	if err != nil {
		log.Fatal(err)
	}
	acme, err := trust.NewKeySigner("acme", pub, nil)
	if err != nil {
		log.Fatal(err)
	}
	v, err := trust.NewVerifier([]trust.Signer{acme}, nil)
	if err != nil {
		log.Fatal(err)
	}
	res, err := r.Add(ctx, repo.AddRequest{Source: dir, Signature: sig, Verifier: v, Tags: []string{"notes"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("added", res.Plugin, res.Version, "new plugin:", res.NewPlugin)
	rel, _ := filepath.Rel(r.Dir(), res.Archive)
	fmt.Println("signer", res.Signer.Kind, "archive", filepath.ToSlash(rel))

	// Adding the same version again publishes nothing.
	again, err := r.Add(ctx, repo.AddRequest{Source: dir, Signature: sig, Verifier: v})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("already:", again.Already)
	// Output:
	// added acme-notes 1.4.2 new plugin: true
	// signer key archive bundles/acme-notes/1.4.2/acme-notes-1.4.2.tar.gz
	// already: true
}

func initRepository(ctx context.Context, dir, keyDir string) (*repo.Repository, error) {
	if _, err := repo.Init(ctx, dir, keyDir, &repo.Options{Name: "acme"}); err != nil {
		return nil, err
	}
	return repo.Open(dir, keyDir, nil)
}

// A curator writes the published catalog as static MCP Registry API files
// for other clients: the plugin whose one server is a pinned npm package
// becomes a registry entry; the one that runs a program of its bundle
// cannot be one, and is listed with the reason.
func ExampleExportRegistry() {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "repo-export-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	priv, pub, err := trust.GenerateKey()
	if err != nil {
		log.Fatal(err)
	}
	acme, err := trust.NewKeySigner("acme", pub, nil)
	if err != nil {
		log.Fatal(err)
	}
	v, err := trust.NewVerifier([]trust.Signer{acme}, nil)
	if err != nil {
		log.Fatal(err)
	}
	r, err := initRepository(ctx, filepath.Join(tmp, "repo"), filepath.Join(tmp, "keys"))
	if err != nil {
		log.Fatal(err)
	}
	for name, manifest := range map[string]string{
		"weather": `{"manifestVersion": 1, "name": "acme-weather", "version": "1.5.0", "description": "Weather forecasts",
		  "mcpServers": {"weather": {"stdio": {"command": "npx", "args": ["-y", "@acme/weather-mcp@1.5.0"]}}}}`,
		"notes": `{"manifestVersion": 1, "name": "acme-notes", "version": "1.4.2", "description": "Search your notes",
		  "mcpServers": {"notes": {"stdio": {"command": "${bundle}/bin/notes"}}}}`,
	} {
		dir := filepath.Join(tmp, name)
		os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
		os.WriteFile(filepath.Join(dir, "bin", "notes"), []byte("#!/bin/sh\n"), 0o755)
		os.WriteFile(filepath.Join(dir, "berth.json"), []byte(manifest), 0o644)
		b, err := bundle.Open(ctx, dir, nil)
		if err != nil {
			log.Fatal(err)
		}
		sig, err := trust.Sign(ctx, b.Listing().Bytes(), priv)
		b.Close()
		if err != nil {
			log.Fatal(err)
		}
		if _, err := r.Add(ctx, repo.AddRequest{Source: dir, Signature: sig, Verifier: v}); err != nil {
			log.Fatal(err)
		}
	}

	out := filepath.Join(tmp, "registry")
	res, err := repo.ExportRegistry(ctx, r.Dir(), out, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range res.Servers {
		fmt.Println("server", s.Name, s.Versions)
	}
	for _, s := range res.Skipped {
		fmt.Println("skipped", s.Plugin, s.Version, s.Rule)
	}
	// A static host answers GET /v0.1/servers/NAME/versions/latest with
	// this file.
	rel, _ := repo.ExportFile(repo.ExportURLPath("v0.1", "dev.berth.catalog.acme/acme-weather", "latest"))
	fmt.Println(rel)
	// Output:
	// server dev.berth.catalog.acme/acme-weather [1.5.0]
	// skipped acme-notes 1.4.2 export-local-program
	// v0.1/servers/dev.berth.catalog.acme/acme-weather/versions/latest/index.json
}
