package store_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// A publisher signs a bundle; the operator adds the publisher's key to the
// signer policy and trusts the bundle through the install pipeline, which
// verifies, reviews, asks and stages.
func Example() {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "store-example-")
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

	// The publisher's bundle and its signature beside it.
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
	os.WriteFile(store.DefaultSignatureFile(dir), sig, 0o644)

	// The operator.
	paths, err := store.NewPaths(filepath.Join(tmp, "berth-home"))
	if err != nil {
		log.Fatal(err)
	}
	st := store.Open(paths, nil)
	acme, err := trust.NewKeySigner("acme", pub, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := st.AddSigner(ctx, acme); err != nil {
		log.Fatal(err)
	}
	res, err := st.Trust(ctx, dir, &store.TrustOptions{Confirm: func(c *store.Candidate) error {
		fmt.Printf("trust %s %s, signed by %s %q? yes\n", c.Review.Name, c.Review.Version, c.Signer.Kind, c.Signer.Name)
		return nil
	}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("trusted", res.Record.ID(), "unsigned:", res.Record.Unsigned)
	state, _ := st.State()
	fmt.Println("generation", state.Generation)
	// Output:
	// trust acme-notes 1.4.2, signed by key "acme"? yes
	// trusted acme-notes@1.4.2 unsigned: false
	// generation 2
}

func ExampleMatchPolicy() {
	const acme = "key sha256:acme"
	rules := []store.PolicyRule{
		{Plugin: "acme-notes", Pattern: "acme-notes__*", Action: "allow", Signer: acme},
		{Plugin: "acme-notes", Pattern: "acme-notes__notes__delete_*", Action: "deny"},
		{Plugin: "acme-notes", Pattern: "acme-notes__notes__delete_draft", Action: "ask"},
	}
	for _, sub := range []store.PolicySubject{
		{Plugin: "acme-notes", Signer: acme, Name: "acme-notes__notes__search"},
		{Plugin: "acme-notes", Signer: acme, Name: "acme-notes__notes__delete_all"},
		{Plugin: "acme-notes", Signer: acme, Name: "acme-notes__notes__delete_draft"},
		{Plugin: "acme-notes", Signer: "key sha256:other", Name: "acme-notes__notes__search"},
		{Plugin: "acme-notes-x", Signer: acme, Name: "acme-notes-x__notes__search"},
	} {
		fmt.Printf("%s: %s\n", sub.Name, store.MatchPolicy(rules, sub))
	}
	// Output:
	// acme-notes__notes__search: allow (acme-notes__*)
	// acme-notes__notes__delete_all: deny (acme-notes__notes__delete_*)
	// acme-notes__notes__delete_draft: ask (exact)
	// acme-notes__notes__search: ask (acme-notes__*, an allow for another signer)
	// acme-notes-x__notes__search: ask (default)
}
