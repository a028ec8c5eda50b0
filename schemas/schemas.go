// Package schemas holds the JSON Schemas of berth's file formats, for
// editors and other tools that check a file before berth reads it.
//
// catalog.schema.json describes a catalog document (catalogVersion 1) and
// lock.schema.json a berth.lock (lockVersion 1), in step with the types of
// package marketplace, kept so by a test.
//
// berth.schema.json describes berth.json, manifest version 1: the same
// fields, nesting and types as bundle.Manifest, and every rule that is pure
// syntax. A test fails when the schema and the Go types drift apart. berth
// itself does not validate with the schema: bundle.Open applies the full
// rule set, including the rules that need the bundle's file tree or compare
// fields with each other (docs/rules.md).
package schemas

import _ "embed"

//go:embed berth.schema.json
var berth []byte

// BerthURL is the $id of the manifest schema.
const BerthURL = "https://berth.dev/schemas/berth.schema.json"

// Berth returns the JSON Schema (draft 2020-12) of berth.json, manifest
// version 1. Each call returns a fresh copy that the caller may modify.
func Berth() []byte {
	return append([]byte(nil), berth...)
}

//go:embed catalog.schema.json
var catalog []byte

//go:embed lock.schema.json
var lock []byte

// CatalogURL and LockURL are the $id of the catalog and lock schemas.
const (
	CatalogURL = "https://berth.dev/schemas/catalog.schema.json"
	LockURL    = "https://berth.dev/schemas/lock.schema.json"
)

// Catalog returns the JSON Schema (draft 2020-12) of a catalog document,
// catalogVersion 1. Each call returns a fresh copy.
func Catalog() []byte { return append([]byte(nil), catalog...) }

// Lock returns the JSON Schema (draft 2020-12) of berth.lock, lockVersion
// 1. Each call returns a fresh copy.
func Lock() []byte { return append([]byte(nil), lock...) }
