// Command builtingen regenerates berth's built-in catalog
// (marketplace/builtin): for each reference server it lists, it asks the
// npm registry for the newest version (the "latest" dist-tag) and that
// version's tarball integrity, writes the berth bundle that runs the
// package at exactly that version, computes the bundle's digest, and
// writes catalog.json. Before writing, it prints what changes for each
// entry: the version, the package's integrity, and the authority diff of
// the old bundle against the new one (what each asks for), as berth
// upgrade shows it. make builtin-catalog runs it.
//
//	go run ./internal/builtingen [-dir marketplace/builtin] [-registry URL] [-check]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/builtin"
	"github.com/berth-mcp/berth/marketplace/catalog"
)

// spec is one reference server of the built-in catalog: how its bundle
// runs the package. The version is the registry's, never written here.
type spec struct {
	name, pkg, description string
	tags                   []string
	// args follow the package in npx's arguments.
	args []string
	// env are the variables the server reads, each from the host
	// variable of the same name.
	env []string
}

// The official reference servers on npm. The PyPI ones (mcp-server-fetch,
// mcp-server-git, mcp-server-time) are left out until the generator can
// reach PyPI and pin their files' hashes the same way.
var specs = []spec{
	{name: "everything", pkg: "@modelcontextprotocol/server-everything",
		description: "MCP reference server that exercises every protocol feature: tools, resources, prompts, sampling",
		tags:        []string{"reference", "testing"}, args: []string{"stdio"}},
	{name: "filesystem", pkg: "@modelcontextprotocol/server-filesystem",
		description: "MCP reference server for reading, writing and searching the files of your workspace",
		tags:        []string{"reference", "files"}, args: []string{"${workspace}"}},
	{name: "memory", pkg: "@modelcontextprotocol/server-memory",
		description: "MCP reference server: a knowledge-graph memory kept in the file MEMORY_FILE_PATH names",
		tags:        []string{"reference", "memory"}, env: []string{"MEMORY_FILE_PATH"}},
	{name: "sequential-thinking", pkg: "@modelcontextprotocol/server-sequential-thinking",
		description: "MCP reference server for dynamic, reflective problem solving through a sequence of thoughts",
		tags:        []string{"reference", "reasoning"}},
}

const homepage = "https://github.com/modelcontextprotocol/servers"

func main() {
	dir := flag.String("dir", "marketplace/builtin", "the directory of package builtin")
	registry := flag.String("registry", "https://registry.npmjs.org/", "the npm registry to pin against")
	check := flag.Bool("check", false, "print the changes, write nothing; exit 5 when there are any")
	flag.Parse()
	changed, err := run(context.Background(), *dir, *registry, *check, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "builtingen: %v\n", err)
		os.Exit(1)
	}
	if *check && changed {
		os.Exit(5)
	}
}

func run(ctx context.Context, dir, registry string, check bool, out io.Writer) (bool, error) {
	if !strings.HasSuffix(registry, "/") {
		registry += "/"
	}
	old, err := readOld(dir)
	if err != nil {
		return false, err
	}
	cat := &builtin.Catalog{BuiltinVersion: builtin.Version, Generated: time.Now().UTC().Format("2006-01-02"), Registry: registry}
	newFiles := map[string][]byte{}
	changed := false
	for _, s := range specs {
		v, err := latest(ctx, registry, s.pkg)
		if err != nil {
			return false, err
		}
		m := manifest(s, v.version)
		data := bundle.EncodeManifest(m)
		e := &builtin.Entry{Name: s.name, Description: s.description, Homepage: homepage, Tags: s.tags,
			Version: v.version, Package: s.pkg, Integrity: v.integrity, Released: v.released}
		sum, digest, err := summarize(ctx, map[string][]byte{"berth.json": data})
		if err != nil {
			return false, fmt.Errorf("%s: the generated bundle: %w", s.name, err)
		}
		e.Digest = digest
		cat.Plugins = append(cat.Plugins, e)
		newFiles[filepath.Join("bundles", s.name, "berth.json")] = data
		if diffEntry(ctx, out, dir, old, e, sum) {
			changed = true
		}
	}
	if old != nil {
		for _, oe := range old.Plugins {
			if cat.Entry(oe.Name) == nil {
				fmt.Fprintf(out, "%s: removed (was %s %s)\n", oe.Name, oe.Package, oe.Version)
				changed = true
			}
		}
	}
	if !changed {
		fmt.Fprintln(out, "The built-in catalog is up to date: every entry is the registry's newest version.")
		return false, nil
	}
	if check {
		return true, nil
	}
	if err := os.RemoveAll(filepath.Join(dir, "bundles")); err != nil {
		return false, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(cat); err != nil {
		return false, err
	}
	newFiles["catalog.json"] = b.Bytes()
	for p, data := range newFiles {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return false, err
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			return false, err
		}
	}
	fmt.Fprintf(out, "Wrote %s (generated %s). Review the changes above, run go test ./marketplace/builtin, and commit.\n", filepath.Join(dir, "catalog.json"), cat.Generated)
	return true, nil
}

// manifest is the bundle of s at version.
func manifest(s spec, version string) *bundle.Manifest {
	st := &bundle.Stdio{Command: "npx", Args: append([]string{"-y", s.pkg + "@" + version}, s.args...)}
	if len(s.env) > 0 {
		st.Env = map[string]bundle.EnvSource{}
		for _, v := range s.env {
			st.Env[v] = bundle.EnvSource{FromEnv: v}
		}
	}
	return &bundle.Manifest{
		ManifestVersion: 1, Name: s.name, Version: version, Description: s.description,
		Publisher: &bundle.Publisher{Name: "Model Context Protocol", URL: "https://modelcontextprotocol.io"},
		Homepage:  homepage,
		MCPServers: map[string]*bundle.Server{
			s.name: {Description: s.pkg + " " + version + " from the npm registry", Stdio: st},
		},
	}
}

// summarize opens the bundle of files strictly and returns its review
// summary and digest.
func summarize(ctx context.Context, files map[string][]byte) (*catalog.Summary, string, error) {
	tmp, err := os.MkdirTemp("", "berth-builtingen-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(tmp)
	for p, data := range files {
		full := filepath.Join(tmp, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return nil, "", err
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			return nil, "", err
		}
	}
	b, err := bundle.Open(ctx, tmp, nil)
	if err != nil {
		return nil, "", err
	}
	defer b.Close()
	sum := catalog.SummaryOf(b)
	return &sum, b.Digest, nil
}

// readOld reads the catalog in dir now, nil when there is none.
func readOld(dir string) (*builtin.Catalog, error) {
	data, err := os.ReadFile(filepath.Join(dir, "catalog.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return builtin.Parse(data)
}

// diffEntry prints what changes for e against the old catalog, and
// reports whether anything does.
func diffEntry(ctx context.Context, out io.Writer, dir string, old *builtin.Catalog, e *builtin.Entry, sum *catalog.Summary) bool {
	var oe *builtin.Entry
	if old != nil {
		oe = old.Entry(e.Name)
	}
	if oe == nil {
		fmt.Fprintf(out, "%s: new: %s %s (%s), digest %s\n", e.Name, e.Package, e.Version, e.Integrity, e.Digest)
		empty := &catalog.Summary{}
		writeDiff(out, marketplace.DiffAuthority("nothing", empty, e.Version, sum))
		return true
	}
	if oe.Digest == e.Digest && oe.Integrity == e.Integrity && oe.Description == e.Description && strings.Join(oe.Tags, ",") == strings.Join(e.Tags, ",") {
		fmt.Fprintf(out, "%s: unchanged: %s %s\n", e.Name, e.Package, e.Version)
		return false
	}
	fmt.Fprintf(out, "%s: %s %s -> %s\n  integrity %s -> %s\n  digest %s -> %s\n", e.Name, e.Package, oe.Version, e.Version, oe.Integrity, e.Integrity, oe.Digest, e.Digest)
	files, err := os.ReadFile(filepath.Join(dir, "bundles", oe.Name, "berth.json"))
	if err != nil {
		fmt.Fprintf(out, "  (the old bundle cannot be read: %v; its authority is not compared)\n", err)
		return true
	}
	osum, _, err := summarize(ctx, map[string][]byte{"berth.json": files})
	if err != nil {
		fmt.Fprintf(out, "  (the old bundle does not open: %v; its authority is not compared)\n", err)
		return true
	}
	writeDiff(out, marketplace.DiffAuthority(oe.Version, osum, e.Version, sum))
	return true
}

func writeDiff(out io.Writer, d *marketplace.AuthorityDiff) {
	var b strings.Builder
	d.WriteText(&b)
	for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		fmt.Fprintf(out, "  %s\n", l)
	}
}

type pinned struct {
	version, integrity string
	released           time.Time
}

// latest asks registry for pkg's packument and returns its latest
// version, that version's tarball integrity and publication time.
func latest(ctx context.Context, registry, pkg string) (*pinned, error) {
	u := registry + strings.Replace(url.PathEscape(pkg), "%40", "@", 1)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pkg, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: the registry answered %s", u, resp.Status)
	}
	var doc struct {
		Name     string            `json:"name"`
		DistTags map[string]string `json:"dist-tags"`
		Versions map[string]struct {
			Deprecated json.RawMessage `json:"deprecated"`
			Dist       struct {
				Integrity string `json:"integrity"`
			} `json:"dist"`
		} `json:"versions"`
		Time map[string]time.Time `json:"time"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: the packument: %w", pkg, err)
	}
	if doc.Name != pkg {
		return nil, fmt.Errorf("%s: the registry answered with the packument of %q", pkg, doc.Name)
	}
	v := doc.DistTags["latest"]
	ver, ok := doc.Versions[v]
	if v == "" || !ok {
		return nil, fmt.Errorf("%s: the latest dist-tag %q names no listed version", pkg, v)
	}
	if len(ver.Deprecated) > 0 && string(ver.Deprecated) != "false" && string(ver.Deprecated) != `""` {
		return nil, fmt.Errorf("%s %s is deprecated on the registry (%s); drop it from the built-in catalog's specs", pkg, v, ver.Deprecated)
	}
	if doc.Time[v].IsZero() {
		return nil, fmt.Errorf("%s %s: the packument gives no publication time", pkg, v)
	}
	return &pinned{version: v, integrity: ver.Dist.Integrity, released: doc.Time[v].UTC()}, nil
}
