// Package fetched resolves a runtime-fetched server's package (npx, uvx,
// ...) once, at trust: its whole dependency tree with install scripts off,
// every package recorded with its registry's integrity hash, installed into
// a directory that the trust pipeline stages content-addressed and
// read-only like a bundle. The server then starts from that tree with no
// registry access (docs/sandbox.md).
package fetched

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/berth-mcp/berth/bundle"
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
	// Registry is the registry the tree was resolved from (the
	// operator's configuration for berth, or the ecosystem's default):
	// every package's Resolved is under it.
	Registry string `json:"registry"`
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
func (l *Lock) Digest() string {
	pkgs := l.Packages
	if pkgs == nil {
		pkgs = []Package{}
	}
	data, err := json.Marshal(struct {
		Server    string    `json:"server"`
		Ecosystem string    `json:"ecosystem"`
		Package   string    `json:"package"`
		Registry  string    `json:"registry"`
		Program   string    `json:"program"`
		Packages  []Package `json:"packages"`
	}{l.Server, l.Ecosystem, l.Package, l.Registry, l.Program, pkgs})
	if err != nil {
		panic(err) // strings and bools only
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Options are the optional settings of Resolve; nil means defaults.
type Options struct {
	// Fetchers is $BERTH_HOME/fetchers: the package managers'
	// configuration that only the operator edits (a registry mirror, a CA).
	Fetchers string
	// AllowScripts names the packages whose install scripts may run
	// (confined) at trust; any other package with one is refused.
	AllowScripts []string
	// Env is the base environment of the package manager (PATH, HOME,
	// LANG, TMPDIR); nil means this process's PATH, HOME, LANG and
	// TMPDIR. The package manager is looked up on its PATH.
	Env []string
	// Getenv is the operator's environment, where ReadOperator finds the
	// operator's user-level settings that reach the resolution (HOME,
	// NPM_CONFIG_USERCONFIG, PIP_INDEX_URL, the variables ~/.npmrc
	// expands, ...); nil means Env's, or this process's when Env is nil.
	Getenv func(string) string
	// Started, when not nil, is called as the resolution of pkg (as the
	// manifest names it, "npm:" or "pypi:" before it) starts; the
	// function it returns is called when the resolution ends (a person
	// watching a slow fetch).
	Started func(pkg string) (done func())
	// Launcher is sandbox.Options.Launcher for the confined install
	// scripts: "" means this process's own executable.
	Launcher string
	// Output, when not nil, is given the package manager's output as it
	// runs (a person watching a slow resolution); its gist is in the error
	// of a failed resolution either way.
	Output func(line string)
}

// ErrNotStaged is returned by Resolve for an ecosystem berth does not
// stage (go, jsr, oci): such a server fetches when it starts, as before.
var ErrNotStaged = errors.New("fetched: this ecosystem is not staged at trust")

// Resolve resolves f's package and its whole dependency tree into dir (an
// empty directory the caller created) and returns the lock, with Tree,
// Files and Size of dir as installed.
//
// A resolver of an ecosystem fills the whole Lock: Server, Ecosystem and
// Package from its arguments, Program (slash path in dir of what the
// server runs), Packages (sorted with SortPackages, each with its
// integrity), and Tree, Files and Size with Measure(dir) once nothing
// more is written to dir. It writes only inside dir (its caches go to a
// temp dir it removes), and what it leaves in dir is what starts the
// server, offline: the caller stages dir as it is, read-only.
func Resolve(ctx context.Context, server string, f *runtimefetch.Fetch, dir string, o *Options) (*Lock, error) {
	if o != nil && o.Started != nil && (f.Ecosystem == runtimefetch.EcosystemNPM || f.Ecosystem == runtimefetch.EcosystemPyPI) {
		done := o.Started(f.Ecosystem + ":" + f.Package)
		if done != nil {
			defer done()
		}
	}
	var l *Lock
	var err error
	switch f.Ecosystem {
	case runtimefetch.EcosystemNPM:
		l, err = resolveNPM(ctx, server, f, dir, o)
	case runtimefetch.EcosystemPyPI:
		l, err = resolvePyPI(ctx, server, f, dir, o)
	default:
		return nil, fmt.Errorf("%w: %s", ErrNotStaged, f.Ecosystem)
	}
	if err != nil && ctx.Err() != nil {
		// The package manager was killed: its output and the hints that
		// read it (a registry, a proxy at fault) say nothing true.
		return nil, fmt.Errorf("server %s: resolving %s: interrupted (%w); nothing was installed", server, f.Package, ctx.Err())
	}
	return l, err
}

// Stages reports whether Resolve stages f's form at all (npm runners that
// run the package with node; PyPI runners): a record without a lock for
// such a server was trusted by an older berth.
func Stages(f *runtimefetch.Fetch) bool {
	switch f.Ecosystem {
	case runtimefetch.EcosystemNPM:
		return npmStaged(f) == nil
	case runtimefetch.EcosystemPyPI:
		return true
	}
	return false
}

// Check re-reads the lock file that the staged tree at dir holds (npm's
// package-lock.json) and refuses a tree whose packages, or program, are
// not l's: with the tree's digest checked, it ties the record's lock to
// the staged files, offline (berth verify).
func Check(dir string, l *Lock) error {
	switch l.Ecosystem {
	case runtimefetch.EcosystemNPM:
		return checkNPM(dir, l)
	case runtimefetch.EcosystemPyPI:
		return checkPyPI(dir, l)
	}
	return fmt.Errorf("%w: %s", ErrNotStaged, l.Ecosystem)
}

// Measure returns the digest (bundle's canonical listing digest), file
// count and total size of the tree at dir, refusing a tree that breaks the
// bundle tree rules (a special file, a symlink out of the tree).
func Measure(ctx context.Context, dir string) (tree string, files int, size int64, err error) {
	t, ps, err := bundle.ReadTree(ctx, dir, nil)
	if err != nil {
		return "", 0, 0, err
	}
	if len(ps) > 0 {
		return "", 0, 0, fmt.Errorf("the installed tree breaks a rule of staged trees: %s", ps[0])
	}
	if t.Listing == nil {
		return "", 0, 0, errors.New("the installed tree is too large to stage")
	}
	return t.Listing.Digest(), len(t.Listing.Entries), t.Listing.TotalSize(), nil
}

// SortPackages sorts packages by Path, then Name.
func SortPackages(p []Package) {
	slices.SortFunc(p, func(a, b Package) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}
