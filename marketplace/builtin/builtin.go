// Package builtin is berth's built-in catalog: a few well-known reference
// MCP servers, each a berth bundle that runs its npm package at an exact
// version, compiled into the binary (go:embed) with the bundle's digest
// and the package's registry integrity (npm's dist.integrity, sha512).
//
// It is not a TUF catalog: nobody signs it at run time, it never expires,
// and no other catalog can revoke what it installed. Its integrity is the
// binary's: the digests and the bundles are the bytes berth was built
// with, and install pins each entry to its digest and its fetched
// package to its integrity. `make builtin-catalog` regenerates it
// (internal/builtingen) from the npm registry's newest versions and
// prints the authority diff of every entry (docs/marketplace.md, "The
// built-in catalog").
package builtin

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"time"

	"github.com/berth-mcp/berth/bundle"
)

// Name is the catalog name the built-in catalog has in the cache.
const Name = "builtin"

// Version is the only builtinVersion this berth reads.
const Version = 1

//go:embed catalog.json bundles
var embedded embed.FS

// files is the catalog berth reads: the embedded one, but for a test
// that calls UseForTest.
var files fs.FS = embedded

// UseForTest makes this process read the built-in catalog from fsys
// (catalog.json and bundles/NAME/) instead of the one compiled in. Only
// tests call it, to pin an entry to a loopback registry's tarball; no
// flag, file or environment variable of berth reaches it.
func UseForTest(fsys fs.FS) { files = fsys }

// Catalog is catalog.json: the generation date, the registry the
// packages were pinned against, and the entries.
type Catalog struct {
	BuiltinVersion int `json:"builtinVersion"`
	// Generated is the day make builtin-catalog wrote it (YYYY-MM-DD).
	Generated string `json:"generated"`
	// Registry is the npm registry the versions and integrities were
	// read from.
	Registry string   `json:"registry"`
	Plugins  []*Entry `json:"plugins"`
}

// Entry is one plugin of the built-in catalog, at one exact version.
type Entry struct {
	// Name is the berth plugin name (and the bundle's directory).
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Homepage    string   `json:"homepage"`
	Tags        []string `json:"tags"`
	// Version is the bundle's version: the npm package's version.
	Version string `json:"version"`
	// Package is the npm package the bundle runs, at Version.
	Package string `json:"package"`
	// Integrity is the registry's dist.integrity of that package's
	// tarball ("sha512-…"): the staged tree must hold exactly it.
	Integrity string `json:"integrity"`
	// Released is when the registry published the version.
	Released time.Time `json:"released"`
	// Digest is the bundle's digest ("sha256:<hex>").
	Digest string `json:"digest"`
}

var (
	sha512SRI = regexp.MustCompile(`^sha512-[A-Za-z0-9+/]{86}==$`)
	digestRE  = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	dateRE    = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
)

// Parse reads a catalog.json strictly: an unknown field, a bad name,
// digest, integrity or date, or a name given twice is an error.
func Parse(data []byte) (*Catalog, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	c := &Catalog{}
	if err := dec.Decode(c); err != nil {
		return nil, fmt.Errorf("the built-in catalog: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("the built-in catalog: data after the object")
	}
	if c.BuiltinVersion != Version {
		return nil, fmt.Errorf("the built-in catalog has builtinVersion %d; this berth reads %d", c.BuiltinVersion, Version)
	}
	if !dateRE.MatchString(c.Generated) {
		return nil, fmt.Errorf("the built-in catalog's generated date %q is not YYYY-MM-DD", c.Generated)
	}
	seen := map[string]bool{}
	for i, e := range c.Plugins {
		switch {
		case e == nil:
			return nil, fmt.Errorf("the built-in catalog: plugins[%d] is null", i)
		case !bundle.IsValidName(e.Name):
			return nil, fmt.Errorf("the built-in catalog: plugins[%d]: %q is not a plugin name", i, e.Name)
		case seen[e.Name]:
			return nil, fmt.Errorf("the built-in catalog lists %s twice", e.Name)
		case !digestRE.MatchString(e.Digest):
			return nil, fmt.Errorf("the built-in catalog: %s: the digest %q is not sha256:<64 hex>", e.Name, e.Digest)
		case !sha512SRI.MatchString(e.Integrity):
			return nil, fmt.Errorf("the built-in catalog: %s: the integrity %q is not one sha512 SRI hash", e.Name, e.Integrity)
		case e.Version == "" || e.Package == "" || e.Released.IsZero():
			return nil, fmt.Errorf("the built-in catalog: %s: version, package and released are required", e.Name)
		}
		seen[e.Name] = true
	}
	return c, nil
}

// Load reads the catalog compiled into this berth.
func Load() (*Catalog, error) {
	data, err := fs.ReadFile(files, "catalog.json")
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Source is how berth names the built-in catalog's source: exactly
// "builtin (berth VERSION, DATE)".
func (c *Catalog) Source() string {
	return fmt.Sprintf("builtin (berth %s, %s)", bundle.BerthVersion, c.Generated)
}

// Entry returns the entry name, or nil.
func (c *Catalog) Entry(name string) *Entry {
	for _, e := range c.Plugins {
		if e.Name == name {
			return e
		}
	}
	return nil
}

// Files returns the files of entry name's bundle, by slash path.
func Files(name string) (map[string][]byte, error) {
	return filesOf(files, name)
}

func filesOf(fsys fs.FS, name string) (map[string][]byte, error) {
	if !bundle.IsValidName(name) {
		return nil, fmt.Errorf("%q is not a plugin name", name)
	}
	root := path.Join("bundles", name)
	out := map[string][]byte{}
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		out[p[len(root)+1:]] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("the built-in bundle of %s: %w", name, err)
	}
	return out, nil
}

// WriteBundle writes entry name's bundle into dir (an empty directory),
// every file 0644, for bundle.Open and store.Store.Trust.
func WriteBundle(name, dir string) error {
	fs, err := Files(name)
	if err != nil {
		return err
	}
	return writeFiles(fs, dir)
}

func writeFiles(fs map[string][]byte, dir string) error {
	for p, data := range fs {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			return err
		}
		// The umask may have cleared bits; the digest counts only the
		// exec bit, which stays off.
		if err := os.Chmod(full, 0o644); err != nil {
			return err
		}
	}
	return nil
}
