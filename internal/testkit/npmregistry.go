package testkit

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

// NPMPackage is one version of a package that an NPMRegistry serves.
type NPMPackage struct {
	Name, Version string
	// Dependencies are name → version range.
	Dependencies map[string]string
	// Bin is package.json's "bin" (a string or a map), nil for none.
	Bin any
	// Scripts is package.json's "scripts" (an "install" or "postinstall"
	// makes it a package with an install script).
	Scripts map[string]string
	// Files are the package's files (path → content) besides
	// package.json; a path ending in ".sh" or under bin/ is executable.
	Files map[string]string
	// NoIntegrity serves the version with only a sha1 shasum.
	NoIntegrity bool
}

// NPMRegistry is a loopback npm registry serving packuments and tarballs
// that the test made.
type NPMRegistry struct {
	*httptest.Server
	mu       sync.Mutex
	versions map[string][]npmVersion
	// Requests counts the requests served.
	Requests int
	// CAPEM is the certificate of the CA of a registry over HTTPS
	// (NewNPMRegistryTLS).
	CAPEM []byte
}

type npmVersion struct {
	pkg       NPMPackage
	tgz       []byte
	integrity string
	shasum    string
}

// NewNPMRegistry starts a registry serving pkgs; it is closed when the
// test ends.
func NewNPMRegistry(t testing.TB, pkgs ...NPMPackage) *NPMRegistry {
	t.Helper()
	r, err := StartNPMRegistry(pkgs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// StartNPMRegistry starts a registry serving pkgs; the caller closes it.
func StartNPMRegistry(pkgs ...NPMPackage) (*NPMRegistry, error) {
	r := &NPMRegistry{versions: map[string][]npmVersion{}}
	for _, p := range pkgs {
		if err := r.add(p); err != nil {
			return nil, err
		}
	}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	return r, nil
}

// URL is the registry's URL, ending in "/".
func (r *NPMRegistry) URL() string { return r.Server.URL + "/" }

// Add serves another package version.
func (r *NPMRegistry) Add(t testing.TB, p NPMPackage) {
	t.Helper()
	if err := r.add(p); err != nil {
		t.Fatal(err)
	}
}

func (r *NPMRegistry) add(p NPMPackage) error {
	tgz, err := npmTarball(p)
	if err != nil {
		return err
	}
	s512 := sha512.Sum512(tgz)
	s1 := sha1.Sum(tgz)
	v := npmVersion{pkg: p, tgz: tgz, integrity: "sha512-" + base64.StdEncoding.EncodeToString(s512[:]), shasum: hex.EncodeToString(s1[:])}
	r.mu.Lock()
	r.versions[p.Name] = append(r.versions[p.Name], v)
	r.mu.Unlock()
	return nil
}

// Integrity is the sha512 SRI of a served version's tarball.
func (r *NPMRegistry) Integrity(name, version string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.versions[name] {
		if v.pkg.Version == version {
			return v.integrity
		}
	}
	return ""
}

func (r *NPMRegistry) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Requests++
	p, err := url.PathUnescape(strings.TrimPrefix(req.URL.EscapedPath(), "/"))
	if err != nil {
		http.NotFound(w, req)
		return
	}
	if name, file, ok := strings.Cut(p, "/-/"); ok {
		for _, v := range r.versions[name] {
			if file == tarballName(v.pkg) {
				w.Header().Set("Content-Type", "application/octet-stream")
				w.Write(v.tgz)
				return
			}
		}
		http.NotFound(w, req)
		return
	}
	vs, ok := r.versions[p]
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":"Not found"}`))
		return
	}
	doc := map[string]any{"name": p}
	versions := map[string]any{}
	latest := ""
	for _, v := range vs {
		dist := map[string]any{"tarball": r.Server.URL + "/" + p + "/-/" + tarballName(v.pkg), "shasum": v.shasum}
		if !v.pkg.NoIntegrity {
			dist["integrity"] = v.integrity
		}
		m := npmManifest(v.pkg)
		m["dist"] = dist
		if v.pkg.Scripts["install"] != "" || v.pkg.Scripts["postinstall"] != "" || v.pkg.Scripts["preinstall"] != "" {
			m["hasInstallScript"] = true
		}
		versions[v.pkg.Version] = m
		latest = v.pkg.Version
	}
	doc["versions"] = versions
	doc["dist-tags"] = map[string]string{"latest": latest}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(doc)
}

func tarballName(p NPMPackage) string {
	return p.Name[strings.LastIndex(p.Name, "/")+1:] + "-" + p.Version + ".tgz"
}

func npmManifest(p NPMPackage) map[string]any {
	m := map[string]any{"name": p.Name, "version": p.Version}
	if len(p.Dependencies) > 0 {
		m["dependencies"] = p.Dependencies
	}
	if p.Bin != nil {
		m["bin"] = p.Bin
	}
	if len(p.Scripts) > 0 {
		m["scripts"] = p.Scripts
	}
	return m
}

func npmTarball(p NPMPackage) ([]byte, error) {
	pj, err := json.MarshalIndent(npmManifest(p), "", "  ")
	if err != nil {
		return nil, err
	}
	files := map[string]string{"package.json": string(pj)}
	for k, v := range p.Files {
		files[k] = v
	}
	names := make([]string, 0, len(files))
	for k := range files {
		names = append(names, k)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, n := range names {
		mode := int64(0o644)
		if strings.HasSuffix(n, ".sh") || strings.HasPrefix(n, "bin/") {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: "package/" + n, Mode: mode, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		tw.Write([]byte(files[n]))
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// PeersBin is the directory of the npm test peers' programs
// (testdata/peers/node_modules/.bin: node 22 and npm), or "" and a skip
// when they are not installed (scripts/install-peers).
func PeersBin(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "peers", "node_modules", ".bin")
	for _, p := range []string{"node", "npm"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Skipf("the npm test peers are not installed (%v): run scripts/install-peers", err)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// MCPServerJS is a tiny MCP server over stdio for node: it answers
// initialize, tools/list (one tool, "hello") and tools/call; the reply
// of the call is the text that require(dep) exports (dep "" for none).
func MCPServerJS(dep string) string {
	req := `"hello from the server"`
	if dep != "" {
		req = `require(` + strconvQuote(dep) + `)`
	}
	return `#!/usr/bin/env node
const text = ` + req + `;
const rl = require("readline").createInterface({input: process.stdin});
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
rl.on("line", (line) => {
  let m; try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined) return;
  if (m.method === "initialize") send({jsonrpc: "2.0", id: m.id, result: {protocolVersion: m.params.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: "fetched", version: "1.0.0"}}});
  else if (m.method === "tools/list") send({jsonrpc: "2.0", id: m.id, result: {tools: [{name: "hello", description: "says hello", inputSchema: {type: "object"}}]}});
  else if (m.method === "tools/call") send({jsonrpc: "2.0", id: m.id, result: {content: [{type: "text", text: String(text)}]}});
  else send({jsonrpc: "2.0", id: m.id, error: {code: -32601, message: "no such method"}});
});
`
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
