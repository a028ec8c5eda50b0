package bundle_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/berth-mcp/berth/bundle"
)

// writeBundle writes a small bundle: a manifest and the program it runs.
func writeBundle(dir, manifest string) {
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "berth.json"), []byte(manifest), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "notes"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		log.Fatal(err)
	}
}

// Open returns a valid bundle or an error that lists every problem.
func Example() {
	dir, err := os.MkdirTemp("", "bundle-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	writeBundle(dir, `{
  "manifestVersion": 1,
  "name": "acme-notes",
  "version": "1.4.2",
  "description": "Search your notes",
  "mcpServers": {"notes": {"stdio": {"command": "${bundle}/bin/notes"}}}
}`)

	b, err := bundle.Open(context.Background(), dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	fmt.Println(b.Manifest.Name, b.Manifest.Version, b.Kind)
	fmt.Println(b.Digest)
	fmt.Print(string(b.Listing().Bytes()))
	// Output:
	// acme-notes 1.4.2 directory
	// sha256:78745e16190ae9b6dbb06c86366aea11526fd7190b02131f973a983bc2528035
	// 100644 f00927f01579c6d16f946695e8cd4f77ca6ac7b8c4493d669a94613cf56dc8e0 184 berth.json
	// 100755 a8076d3d28d21e02012b20eaf7dbf75409a6277134439025f282e368e3305abf 10 bin/notes
}

// Load keeps an invalid bundle, so that its digest can be shown next to
// its problems.
func ExampleLoad() {
	dir, err := os.MkdirTemp("", "bundle-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	writeBundle(dir, `{
  "manifestVersion": 1,
  "name": "Acme Notes",
  "version": "1.4",
  "description": "Search your notes",
  "mcpServers": {"notes": {"stdio": {"command": "${bundle}/bin/notes", "env": {"TOKEN": "s3cret"}}}}
}`)

	b, problems, err := bundle.Load(context.Background(), dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	fmt.Println("digest known:", b.Digest != "")
	for _, p := range problems {
		fmt.Println(p.Rule, "at", p.Path)
	}
	// Output:
	// digest known: true
	// env-literal-value at mcpServers.notes.stdio.env.TOKEN
	// name-format at name
	// version-semver at version
}
