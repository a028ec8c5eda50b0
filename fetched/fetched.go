// Package fetched resolves a runtime-fetched server's package (npx, uvx,
// ...) once, at trust: its whole dependency tree with install scripts off,
// every package recorded with its registry's integrity hash, installed into
// a directory that the trust pipeline stages content-addressed and
// read-only like a bundle. The server then starts from that tree with no
// registry access (docs/sandbox.md).
package fetched

import (
	"context"
	"errors"
	"fmt"

	"github.com/berth-mcp/berth/bundle/runtimefetch"
)

// Lock is what berth resolved at trust for one runtime-fetched server.
type Lock struct {
	// Server is the manifest's server name.
	Server string `json:"server"`
	// Ecosystem is runtimefetch.EcosystemNPM or EcosystemPyPI.
	Ecosystem string `json:"ecosystem"`
	// Package is the package exactly as the manifest names it.
	Package string `json:"package"`
	// Program is the executable the server runs, a slash path relative
	// to the tree (npm: "node_modules/.bin/<bin>"; pip: "bin/<script>").
	Program string `json:"program"`
	// Packages is every package of the tree, sorted by Path, then Name.
	Packages []Package `json:"packages"`
	// Tree is the staged tree's digest (the canonical listing's,
	// "sha256:<hex>"), Files and Size its file count and total bytes.
	Tree  string `json:"tree"`
	Files int    `json:"files"`
	Size  int64  `json:"size"`
}

// Package is one resolved package of a tree.
type Package struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Path is where in the tree it is installed (npm:
	// "node_modules/a/node_modules/b"); "" when the ecosystem has one flat
	// place (pip).
	Path string `json:"path,omitempty"`
	// Resolved is the URL of the archive it was installed from.
	Resolved string `json:"resolved,omitempty"`
	// Integrity is the registry's hash of that archive: npm's SRI string
	// ("sha512-…"), PyPI's "sha256:<hex>".
	Integrity string `json:"integrity"`
	// Scripts is set for an npm package with install scripts, which ran
	// confined because the operator allowed them by name.
	Scripts bool `json:"scripts,omitempty"`
}

// Digest is the lock's own digest, "sha256:<hex>" of its canonical JSON
// without Tree, Files and Size: what the review shows as "the lock".
func (l *Lock) Digest() string { return "" }

// Options are the optional settings of Resolve; nil means defaults.
type Options struct {
	// Fetchers is $BERTH_HOME/fetchers: the package managers'
	// configuration that only the operator edits (a registry mirror, a CA).
	Fetchers string
	// AllowScripts names the packages whose install scripts may run
	// (confined) at trust; any other package with one is refused.
	AllowScripts []string
	// Env is the base environment of the package manager (PATH, HOME,
	// LANG, TMPDIR).
	Env []string
}

// ErrNotStaged is returned by Resolve for an ecosystem berth does not
// stage (go, jsr, oci): such a server fetches when it starts, as before.
var ErrNotStaged = errors.New("fetched: this ecosystem is not staged at trust")

// Resolve resolves f's package and its whole dependency tree into dir (an
// empty directory the caller created) and returns the lock, with Tree,
// Files and Size of dir as installed.
func Resolve(ctx context.Context, server string, f *runtimefetch.Fetch, dir string, o *Options) (*Lock, error) {
	switch f.Ecosystem {
	case runtimefetch.EcosystemNPM:
		return resolveNPM(ctx, server, f, dir, o)
	case runtimefetch.EcosystemPyPI:
		return resolvePyPI(ctx, server, f, dir, o)
	}
	return nil, fmt.Errorf("%w: %s", ErrNotStaged, f.Ecosystem)
}

func resolveNPM(ctx context.Context, server string, f *runtimefetch.Fetch, dir string, o *Options) (*Lock, error) {
	return nil, errors.New("fetched: npm not implemented")
}
