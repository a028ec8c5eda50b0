package review_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/review"
)

// A review discloses what a valid bundle may do: here a bundled program
// that receives one environment variable, named with its source and never
// its value.
func Example() {
	dir, err := os.MkdirTemp("", "review-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
	os.WriteFile(filepath.Join(dir, "bin", "notes"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "berth.json"), []byte(`{"manifestVersion": 1, "name": "acme-notes", "version": "1.4.2",
	  "description": "Search your notes",
	  "mcpServers": {"notes": {"stdio": {"command": "${bundle}/bin/notes", "env": {"NOTES_TOKEN": {"fromEnv": "ACME_TOKEN"}}}}}}`), 0o644)
	b, err := bundle.Open(context.Background(), dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	d := review.New(b)
	s := d.Servers[0]
	fmt.Println(s.Name, s.Kind, s.Stdio.Program, s.Stdio.Command)
	for _, e := range s.Stdio.Env {
		fmt.Printf("env %s from $%s\n", e.Name, e.FromEnv)
	}
	fmt.Println(len(d.Hash()))
	// Output:
	// notes stdio bundled ${bundle}/bin/notes
	// env NOTES_TOKEN from $ACME_TOKEN
	// 71
}
