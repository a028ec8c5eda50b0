package repo_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/berth-mcp/berth/internal/registrytest"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/importer"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/trust"
)

// exportBundles are the bundles of the export tests: each the berth.json
// of one version, and whether the export writes it.
var exportBundles = []struct {
	manifest string
	exported bool
}{
	{`{"manifestVersion": 1, "name": "acme-weather", "version": "1.4.0",
	   "description": "Weather forecasts from Acme for every place on earth, hourly and daily, with alerts, radar and history back to 1950",
	   "homepage": "https://acme.example/weather",
	   "mcpServers": {"weather": {"stdio": {"command": "npx", "args": ["-y", "@acme/weather-mcp@1.4.0"]}}}}`, true},
	{`{"manifestVersion": 1, "name": "acme-weather", "version": "1.5.0", "description": "Weather",
	   "mcpServers": {"weather": {"stdio": {"command": "npx", "args": ["-y", "@acme/weather-mcp@1.5.0", "--units", "metric"],
	     "env": {"WEATHER_API_KEY": {"fromEnv": "ACME_WEATHER_KEY"}, "WEATHER_REGION": {"fromEnv": "ACME_REGION"}}}}}}`, true},
	{`{"manifestVersion": 1, "name": "acme-weather", "version": "1.6.0", "description": "Weather",
	   "mcpServers": {"weather": {"stdio": {"command": "npx", "args": ["-y", "@acme/weather-mcp@1.6.0"]}}}}`, true},
	{`{"manifestVersion": 1, "name": "acme-weather", "version": "1.7.0", "description": "Weather",
	   "mcpServers": {"weather": {"stdio": {"command": "npx", "args": ["-y", "@acme/weather-mcp@1.7.0"]}}}}`, false},
	{`{"manifestVersion": 1, "name": "acme-fetch", "version": "2025.4.7", "description": "Fetch web pages",
	   "mcpServers": {"fetch": {"stdio": {"command": "uvx", "args": ["mcp-server-fetch==2025.4.7"]}}}}`, true},
	{`{"manifestVersion": 1, "name": "acme-pipx", "version": "1.0.0", "description": "Fetch with pipx",
	   "mcpServers": {"fetch": {"stdio": {"command": "pipx", "args": ["run", "mcp-server-fetch==2025.4.7", "--ignore-robots-txt"]}}}}`, true},
	{`{"manifestVersion": 1, "name": "acme-image", "version": "1.0.0", "description": "Image tools",
	   "mcpServers": {"image": {"stdio": {"command": "docker", "args": ["run", "--rm", "-i", "-e", "ACME_IMAGE_TOKEN", "ghcr.io/acme/image-mcp@sha256:1111111111111111111111111111111111111111111111111111111111111111", "serve"],
	     "env": {"ACME_IMAGE_TOKEN": {"fromEnv": "ACME_IMAGE_TOKEN"}}}}}}`, true},
	{`{"manifestVersion": 1, "name": "acme-cloud", "version": "2.0.0-rc.1", "description": "Acme's hosted notes",
	   "mcpServers": {"cloud": {"remote": {"transport": "streamable-http", "url": "https://mcp.acme.example/v1?region=eu",
	     "headers": {"X-Team": {"fromEnv": "ACME_TEAM"}}, "auth": {"bearerFromEnv": "ACME_TOKEN"}, "network": {"hosts": ["mcp.acme.example"]}}}}}`, true},
	{`{"manifestVersion": 1, "name": "acme-events", "version": "0.1.0", "description": "Acme's event stream",
	   "mcpServers": {"events": {"remote": {"transport": "sse", "url": "https://events.acme.example/sse", "network": {"hosts": ["events.acme.example"]}}}}}`, true},
	{`{"manifestVersion": 1, "name": "io-github-acme-tracker", "version": "1.2.0", "description": "Issue tracker",
	   "mcpServers": {"npm": {"stdio": {"command": "npx", "args": ["-y", "@acme/tracker@1.2.0"]}}},
	   "importedFrom": {"format": "mcp-registry", "formatVersion": "2025-12-11", "manifest": "server.json", "sourceName": "io.github.acme/tracker"}}`, true},
	// Not registry entries.
	{`{"manifestVersion": 1, "name": "acme-notes", "version": "1.0.0", "description": "Notes",
	   "mcpServers": {"notes": {"stdio": {"command": "${bundle}/bin/notes"}}}}`, false},
	{`{"manifestVersion": 1, "name": "acme-two", "version": "1.0.0", "description": "Two servers",
	   "mcpServers": {"a": {"stdio": {"command": "npx", "args": ["-y", "@acme/a@1.0.0"]}}, "b": {"stdio": {"command": "npx", "args": ["-y", "@acme/b@1.0.0"]}}}}`, false},
	{`{"manifestVersion": 1, "name": "acme-fmt", "version": "0.3.0", "description": "Formatter",
	   "nativeTools": {"fmt": {"executable": "${bundle}/bin/notes"}}}`, false},
	{`{"manifestVersion": 1, "name": "acme-ws", "version": "1.0.0", "description": "Workspace search",
	   "mcpServers": {"ws": {"stdio": {"command": "npx", "args": ["-y", "@acme/ws@1.0.0", "--root", "${workspace}"]}}}}`, false},
}

// exportCatalog makes a catalog of exportBundles in a temp directory,
// with acme-weather 1.5.0 deprecated, 1.6.0 yanked and 1.7.0 revoked.
// exportRepo makes an empty catalog and a publisher key its policy
// accepts.
func exportRepo(t *testing.T) (dir string, r *repo.Repository, priv []byte, v *trust.Verifier) {
	t.Helper()
	ctx := context.Background()
	tmp := t.TempDir()
	priv, pub, err := trust.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	acme, err := trust.NewKeySigner("acme", pub, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err = trust.NewVerifier([]trust.Signer{acme}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir, keys := filepath.Join(tmp, "repo"), filepath.Join(tmp, "keys")
	if _, err := repo.Init(ctx, dir, keys, &repo.Options{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	r, err = repo.Open(dir, keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	return dir, r, priv, v
}

func exportCatalog(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	tmp := t.TempDir()
	dir, r, priv, v := exportRepo(t)
	for i, eb := range exportBundles {
		src := filepath.Join(tmp, "b", string(rune('a'+i)))
		os.MkdirAll(filepath.Join(src, "bin"), 0o755)
		os.WriteFile(filepath.Join(src, "bin", "notes"), []byte("#!/bin/sh\n"), 0o755)
		if err := os.WriteFile(filepath.Join(src, "berth.json"), []byte(eb.manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(eb.manifest, `"importedFrom"`) {
			os.WriteFile(filepath.Join(src, "server.json"), []byte(`{"name": "io.github.acme/tracker"}`), 0o644)
		}
		b, err := bundle.Open(ctx, src, nil)
		if err != nil {
			t.Fatalf("bundle %d: %v", i, err)
		}
		sig, err := trust.Sign(ctx, b.Listing().Bytes(), priv)
		b.Close()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Add(ctx, repo.AddRequest{Source: src, Signature: sig, Verifier: v}); err != nil {
			t.Fatalf("bundle %d: %v", i, err)
		}
	}
	// An MCP Bundle, added as the .mcpb file it is.
	const tinyMCPB = "../../testdata/import/good/tiny-tools-0.4.1.mcpb"
	bopts := &bundle.Options{Formats: importer.All()}
	b, err := bundle.Open(ctx, tinyMCPB, bopts)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := trust.Sign(ctx, b.Listing().Bytes(), priv)
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Add(ctx, repo.AddRequest{Source: tinyMCPB, Signature: sig, Verifier: v, BundleOptions: bopts}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		version string
		status  catalog.Status
	}{{"1.5.0", catalog.StatusDeprecated}, {"1.6.0", catalog.StatusYanked}, {"1.7.0", catalog.StatusRevoked}} {
		if _, err := r.SetStatus(ctx, "acme-weather", s.version, s.status, "reason "+s.version, ""); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// serverSchema compiles the registry's published server.json schema
// (testdata/registry-schema), formats asserted.
func serverSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	data, err := os.ReadFile("testdata/registry-schema/server.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(importer.RegistrySchema, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(importer.RegistrySchema)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// Every server.json an export writes, in every document, is valid under
// the registry's published schema 2025-12-11 and names it; every
// document is a ServerResponse or a one-page ServerList of the API; the
// registry metadata has only the API's fields. And each server.json,
// read back by berth's server.json importer, runs what the bundle ran.
func TestExportRegistrySchema(t *testing.T) {
	ctx := context.Background()
	dir := exportCatalog(t)
	out := filepath.Join(t.TempDir(), "out")
	res, err := repo.ExportRegistry(ctx, dir, out, &repo.ExportOptions{BaseURL: "https://catalog.acme.example/acme", Bundle: &bundle.Options{Formats: importer.All()}})
	if err != nil {
		t.Fatal(err)
	}
	sch := serverSchema(t)
	officialKeys := []string{"status", "statusMessage", "statusChangedAt", "publishedAt", "updatedAt", "isLatest"}
	checkItem := func(file string, raw json.RawMessage) map[string]any {
		var item struct {
			Server json.RawMessage `json:"server"`
			Meta   map[string]map[string]any
		}
		item.Meta = map[string]map[string]any{}
		var wrapper map[string]json.RawMessage
		if err := json.Unmarshal(raw, &wrapper); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(wrapper) != 2 || wrapper["server"] == nil || wrapper["_meta"] == nil {
			t.Fatalf("%s: an item is not {server, _meta}: %s", file, raw)
		}
		item.Server = wrapper["server"]
		if err := json.Unmarshal(wrapper["_meta"], &item.Meta); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		off := item.Meta["io.modelcontextprotocol.registry/official"]
		for k := range off {
			if !slices.Contains(officialKeys, k) {
				t.Errorf("%s: the registry metadata has %q, which the API does not define", file, k)
			}
		}
		if msg, _ := off["statusMessage"].(string); len([]rune(msg)) > 500 {
			t.Errorf("%s: statusMessage over 500 characters", file)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(item.Server))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s: the server.json is not valid under the published schema: %v\n%s", file, err, item.Server)
		}
		var s map[string]any
		json.Unmarshal(item.Server, &s)
		if s["$schema"] != importer.RegistrySchema {
			t.Errorf("%s: $schema %v", file, s["$schema"])
		}
		return s
	}
	docs, entries, size := 0, 0, 0
	err = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == repo.ExportSkippedFile {
			return err
		}
		if d.Name() != "index.json" {
			t.Errorf("unexpected file %s", p)
		}
		docs++
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		size += len(data)
		var list struct {
			Servers  []json.RawMessage `json:"servers"`
			Metadata map[string]any    `json:"metadata"`
		}
		if filepath.Base(filepath.Dir(p)) == "servers" || filepath.Base(filepath.Dir(p)) == "versions" {
			if err := json.Unmarshal(data, &list); err != nil || list.Servers == nil {
				t.Fatalf("%s: not a ServerList: %v", p, err)
			}
			if _, has := list.Metadata["nextCursor"]; has || list.Metadata["count"] != float64(len(list.Servers)) {
				t.Errorf("%s: metadata %v for %d servers; want the count and no nextCursor", p, list.Metadata, len(list.Servers))
			}
			for _, it := range list.Servers {
				checkItem(p, it)
			}
			return nil
		}
		entries++
		checkItem(p, data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d servers, %d documents (%d single entries), %d bytes; %d versions skipped", len(res.Servers), docs, entries, size, len(res.Skipped))
	want := 1 // the MCP Bundle
	for _, eb := range exportBundles {
		if eb.exported {
			want++
		}
	}
	got := 0
	for _, s := range res.Servers {
		got += len(s.Versions)
	}
	// Each version twice (v0 and v0.1), and each server's latest twice.
	if got != want || entries != 2*(want+len(res.Servers)) || len(res.Skipped) != len(exportBundles)+1-want {
		t.Errorf("exported %d versions in %d documents (%d entries), skipped %v; want %d versions, %d skipped", got, docs, entries, res.Skipped, want, len(exportBundles)+1-want)
	}
	rules := map[string]bool{}
	for _, s := range res.Skipped {
		rules[s.Rule] = true
	}
	for _, r := range []string{repo.RuleExportRevoked, repo.RuleExportLocalProgram, repo.RuleExportServers, repo.RuleExportNativeTool, repo.RuleExportPlaceholder} {
		if !rules[r] {
			t.Errorf("no version skipped by %s: %v", r, res.Skipped)
		}
	}
	names := map[string]bool{}
	for _, s := range res.Servers {
		names[s.Name] = true
	}
	if !names["io.github.acme/tracker"] || !names["dev.berth.catalog.acme/acme-weather"] || !names["dev.berth.catalog.acme/tiny-tools"] {
		t.Errorf("servers %v; want the registry name the tracker was imported from kept, and the others derived", names)
	}
}

// Each exported server.json, read by berth's server.json importer (the
// way a --registry source builds a bundle), runs the command or talks
// to the endpoint the catalog's bundle does: the export inverts the
// importer's mapping.
func TestExportRegistryRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := exportCatalog(t)
	out := filepath.Join(t.TempDir(), "out")
	if _, err := repo.ExportRegistry(ctx, dir, out, nil); err != nil {
		t.Fatal(err)
	}
	for _, eb := range exportBundles {
		if !eb.exported {
			continue
		}
		var m bundle.Manifest
		if err := json.Unmarshal([]byte(eb.manifest), &m); err != nil {
			t.Fatal(err)
		}
		name := "dev.berth.catalog.acme/" + m.Name
		if m.ImportedFrom != nil {
			name = m.ImportedFrom.SourceName
		}
		checkExported(t, out, name, m.Version, m.MCPServers)
	}
}

// checkExported builds the exported entry name@version with berth's own
// importer and checks that it runs what the catalog's bundle runs
// (servers: the bundle's one server).
func checkExported(t *testing.T, out, name, version string, servers map[string]*bundle.Server) {
	t.Helper()
	ctx := context.Background()
	rel, err := repo.ExportFile(repo.ExportURLPath("v0.1", name, version))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(rel)))
	if err != nil {
		t.Errorf("%s %s: %v", name, version, err)
		return
	}
	var item struct {
		Server json.RawMessage `json:"server"`
	}
	json.Unmarshal(data, &item)
	b, err := importer.OpenServerJSON(ctx, name, item.Server, &bundle.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Errorf("%s %s: berth cannot build the exported server.json: %v\n%s", name, version, err, item.Server)
		return
	}
	defer b.Close()
	var want, got *bundle.Server
	for _, s := range servers {
		want = s
	}
	for _, s := range b.Manifest.MCPServers {
		got = s
	}
	if len(b.Manifest.MCPServers) != 1 {
		t.Errorf("%s: %d servers", name, len(b.Manifest.MCPServers))
		return
	}
	switch {
	case want.Stdio != nil:
		if got.Stdio == nil || got.Stdio.Command != want.Stdio.Command || !slices.Equal(got.Stdio.Args, want.Stdio.Args) || len(got.Stdio.Env) != len(want.Stdio.Env) {
			t.Errorf("%s: the exported entry runs %+v; the bundle runs %+v", name, got.Stdio, want.Stdio)
		}
	default:
		if got.Remote == nil || got.Remote.URL != want.Remote.URL || got.Remote.Transport != want.Remote.Transport ||
			len(got.Remote.Headers) != len(want.Remote.Headers) || bearer(got.Remote) != bearer(want.Remote) {
			t.Errorf("%s: the exported entry is the remote %+v; the bundle's is %+v", name, got.Remote, want.Remote)
		}
	}
}

// An MCP Bundle in the catalog is, with a base URL, the mcpb package at
// its URL with the archive's SHA-256, which berth's registry source
// takes for one MCP Bundle to download and check; without a base URL it
// is skipped (export-mcpb).
func TestExportRegistryMCPB(t *testing.T) {
	ctx := context.Background()
	dir := exportCatalog(t)
	bopts := &bundle.Options{Formats: importer.All()}
	out := filepath.Join(t.TempDir(), "out")
	res, err := repo.ExportRegistry(ctx, dir, out, &repo.ExportOptions{Bundle: bopts})
	if err != nil {
		t.Fatal(err)
	}
	skipped := false
	for _, s := range res.Skipped {
		skipped = skipped || (s.Plugin == "tiny-tools" && s.Rule == repo.RuleExportMCPB)
	}
	if !skipped {
		t.Errorf("without a base URL the MCP Bundle is not skipped by export-mcpb: %v", res.Skipped)
	}
	if _, err := repo.ExportRegistry(ctx, dir, out, &repo.ExportOptions{BaseURL: "http://catalog.acme.example/", Force: true}); err == nil || !strings.Contains(err.Error(), "--base-url") {
		t.Errorf("plain http off loopback: %v", err)
	}
	if _, err := repo.ExportRegistry(ctx, dir, out, &repo.ExportOptions{BaseURL: "https://cdn.acme.example/cat", Force: true, Bundle: bopts}); err != nil {
		t.Fatal(err)
	}
	rel, _ := repo.ExportFile(repo.ExportURLPath("v0.1", "dev.berth.catalog.acme/tiny-tools", "0.4.1"))
	data, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	var item struct {
		Server json.RawMessage `json:"server"`
	}
	json.Unmarshal(data, &item)
	pkg, err := importer.RegistryMCPBPackage(item.Server)
	if err != nil || pkg == nil {
		t.Fatalf("berth does not take the exported entry for one MCP Bundle: %v, %v\n%s", pkg, err, item.Server)
	}
	archive, err := os.ReadFile(filepath.Join(dir, "bundles", "tiny-tools", "0.4.1", "tiny-tools-0.4.1.zip"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(archive)
	if pkg.URL != "https://cdn.acme.example/cat/bundles/tiny-tools/0.4.1/tiny-tools-0.4.1.zip" || pkg.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("the mcpb package is %+v; want the archive's URL under the base and its SHA-256", pkg)
	}
}

// bearer reports whether a remote sends a bearer token (the importer
// adds an OAuth sign-in to a remote without credentials, which is not a
// difference).
func bearer(r *bundle.Remote) bool { return r.Auth != nil && r.Auth.BearerFromEnv != "" }

// The names and paths of an export: the server name is one URL path
// segment (%2F), the version too (%2B), and a static host maps the URL
// to index.json in the decoded directory.
func TestExportNamesAndPaths(t *testing.T) {
	cases := []struct{ api, name, version, url, file string }{
		{"v0.1", "", "", "v0.1/servers", "v0.1/servers/index.json"},
		{"v0", "io.github.acme/notes", "", "v0/servers/io.github.acme%2Fnotes/versions", "v0/servers/io.github.acme/notes/versions/index.json"},
		{"v0.1", "io.github.acme/notes", "1.0.0+build.5", "v0.1/servers/io.github.acme%2Fnotes/versions/1.0.0%2Bbuild.5", "v0.1/servers/io.github.acme/notes/versions/1.0.0+build.5/index.json"},
		{"v0.1", "com.example/my_server-2", "latest", "v0.1/servers/com.example%2Fmy_server-2/versions/latest", "v0.1/servers/com.example/my_server-2/versions/latest/index.json"},
	}
	for _, c := range cases {
		u := repo.ExportURLPath(c.api, c.name, c.version)
		f, err := repo.ExportFile(u)
		if u != c.url || f != c.file || err != nil {
			t.Errorf("%s %s: URL %s, file %s (%v); want %s, %s", c.name, c.version, u, f, err, c.url, c.file)
		}
	}
	names := []struct {
		ns, plugin, want string
		ok               bool
	}{
		{"dev.berth.catalog.acme", "acme-notes", "dev.berth.catalog.acme/acme-notes", true},
		{"com.acme", "n", "com.acme/n", true},
		{"acme", "notes", "", false},                      // not reverse-DNS
		{"com..acme", "notes", "", false},                 // empty label
		{".acme", "notes", "", false},                     // leading dot
		{"com.acme/x", "notes", "", false},                // a second '/'
		{"com.acme", "..", "", false},                     // a path segment of its own
		{"com.acme", "index.json", "", false},             // the document file name
		{"com.acme", strings.Repeat("a", 200), "", false}, // over 200 characters
	}
	for _, n := range names {
		got, err := repo.ExportName(n.ns, n.plugin)
		if got != n.want || (err == nil) != n.ok {
			t.Errorf("ExportName(%q, %q) = %q, %v; want %q (ok %v)", n.ns, n.plugin, got, err, n.want, n.ok)
		}
	}
	for _, bad := range []string{"../x", "./x", "index.json/x", "INDEX.JSON/x", "a/.."} {
		if err := repo.CheckExportName(bad); err == nil {
			t.Errorf("CheckExportName(%q) accepted it", bad)
		}
	}
}

// FuzzExportName: a name ExportName or CheckExportName accepts matches
// the schema's pattern and length, and its documents map to files inside
// the export, one directory per name (distinct names, distinct files),
// under the decoded name.
func FuzzExportName(f *testing.F) {
	f.Add("dev.berth.catalog.acme", "acme-notes", "1.0.0+b")
	f.Add("io.github.acme", "..", "1.0.0")
	f.Add("a.b", "index.json", "latest")
	f.Add("x.y", "%2e%2e", "1")
	f.Fuzz(func(t *testing.T, ns, plugin, version string) {
		name, err := repo.ExportName(ns, plugin)
		if err != nil {
			name = ns + "/" + plugin
			if repo.CheckExportName(name) != nil {
				return
			}
		}
		if len(name) < 3 || len(name) > 200 || strings.Count(name, "/") != 1 {
			t.Fatalf("accepted %q", name)
		}
		for _, v := range []string{"", version} {
			u := repo.ExportURLPath("v0.1", name, v)
			file, err := repo.ExportFile(u)
			if err != nil {
				if v == "" || bundle.IsStrictSemver(v) {
					t.Fatalf("%q %q: %v", name, v, err)
				}
				continue
			}
			if !filepath.IsLocal(filepath.FromSlash(file)) {
				t.Fatalf("%q %q: the file %s is not inside the export", name, v, file)
			}
			prefix := "v0.1/servers/" + name + "/versions/"
			if !strings.HasPrefix(file, prefix) && file != "v0.1/servers/"+name+"/versions/index.json" {
				t.Fatalf("%q %q: the file %s is not under %s", name, v, file, prefix)
			}
		}
	})
}

// FuzzExportFile: whatever URL path it is given, ExportFile names a file
// inside the export or fails.
func FuzzExportFile(f *testing.F) {
	f.Add("v0.1/servers/io.github.acme%2Fnotes/versions/1.0.0")
	f.Add("v0/servers/%2e%2e%2F..%2Fetc/versions")
	f.Add("v0/servers/a%5Cb/versions")
	f.Fuzz(func(t *testing.T, p string) {
		file, err := repo.ExportFile(p)
		if err != nil {
			return
		}
		if !filepath.IsLocal(filepath.FromSlash(file)) || !strings.HasSuffix(file, "/index.json") || strings.Contains(file, "\\") {
			t.Fatalf("%q maps to %q", p, file)
		}
	})
}

// An archive in DIR that is not the one the catalog lists is skipped
// (export-archive) and the rest exported; a catalog whose published
// metadata does not check is refused with nothing written; an existing
// directory is replaced only when it is an export and Force is set, and
// nothing is left beside OUT.
func TestExportRegistryRefusals(t *testing.T) {
	ctx := context.Background()
	dir := exportCatalog(t)
	parent := t.TempDir()
	out := filepath.Join(parent, "out")
	archive := filepath.Join(dir, "bundles", "acme-fetch", "2025.4.7", "acme-fetch-2025.4.7.tar.gz")
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(archive, append(data, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := repo.ExportRegistry(ctx, dir, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range res.Skipped {
		found = found || (s.Plugin == "acme-fetch" && s.Rule == repo.RuleExportArchive && strings.Contains(s.Reason, "is not the one the catalog lists"))
	}
	if !found || len(res.Servers) < 5 {
		t.Errorf("a changed archive: servers %d, skipped %v; want acme-fetch skipped by export-archive and the rest exported", len(res.Servers), res.Skipped)
	}
	os.WriteFile(archive, data, 0o644)

	if _, err := repo.ExportRegistry(ctx, dir, out, nil); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("an earlier export without Force: %v", err)
	}
	if _, err := repo.ExportRegistry(ctx, dir, out, &repo.ExportOptions{Force: true}); err != nil {
		t.Fatalf("an earlier export with Force: %v", err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 1 {
		t.Errorf("beside OUT: %v; want OUT alone", ents)
	}
	other := filepath.Join(parent, "other")
	os.MkdirAll(other, 0o755)
	if _, err := repo.ExportRegistry(ctx, dir, other, &repo.ExportOptions{Force: true}); err == nil || !strings.Contains(err.Error(), "is not an export") {
		t.Errorf("a directory that is not an export: %v", err)
	}
	if _, err := repo.ExportRegistry(ctx, dir, dir, &repo.ExportOptions{Force: true}); err == nil {
		t.Errorf("OUT = DIR accepted")
	}

	ts := filepath.Join(dir, "timestamp.json")
	meta, err := os.ReadFile(ts)
	if err != nil {
		t.Fatal(err)
	}
	// Another expiry: the signature no longer verifies.
	os.WriteFile(ts, bytes.Replace(meta, []byte(`"expires": "2`), []byte(`"expires": "3`), 1), 0o644)
	out2 := filepath.Join(parent, "out2")
	if _, err := repo.ExportRegistry(ctx, dir, out2, nil); err == nil || !strings.Contains(err.Error(), "inconsistent") {
		t.Errorf("a timestamp.json whose signature does not verify: %v", err)
	}
	if _, err := os.Lstat(out2); err == nil {
		t.Errorf("OUT written for a catalog that does not check")
	}
}

const corpusRegistry = "../../../shared/corpus/registry/server-registry.json"

// TestExportRegistryCorpus: real server.json documents, those of the
// recorded MCP Registry listing in ../shared/corpus that berth builds
// offline, added to a catalog and exported again: every exported entry
// makes berth run exactly what the recorded entry made it run. -v prints
// how many were tried, added and exported.
func TestExportRegistryCorpus(t *testing.T) {
	l, err := registrytest.Load(corpusRegistry)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("the shared corpus is not here")
	}
	if err != nil {
		t.Fatal(err)
	}
	servers, err := l.Servers()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dir, r, priv, v := exportRepo(t)
	bopts := &bundle.Options{Formats: importer.All(), TempDir: t.TempDir()}
	type added struct {
		name, version string
		servers       map[string]*bundle.Server
	}
	var done []added
	tried, built := 0, 0
	for i, raw := range servers {
		if len(done) == 60 {
			break
		}
		tried++
		src := filepath.Join(t.TempDir(), fmt.Sprint(i))
		os.Mkdir(src, 0o755)
		if err := os.WriteFile(filepath.Join(src, "server.json"), raw, 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := bundle.Open(ctx, src, bopts)
		if err != nil {
			continue // not buildable offline (an MCP Bundle, an unsupported package, …)
		}
		built++
		m := b.Manifest
		sig, err := trust.Sign(ctx, b.Listing().Bytes(), priv)
		b.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(m.MCPServers) != 1 || m.ImportedFrom == nil {
			continue
		}
		if _, err := r.Add(ctx, repo.AddRequest{Source: src, Signature: sig, Verifier: v, BundleOptions: bopts}); err != nil {
			continue // e.g. the same name and version twice in the listing
		}
		done = append(done, added{m.ImportedFrom.SourceName, m.Version, m.MCPServers})
	}
	out := filepath.Join(t.TempDir(), "out")
	res, err := repo.ExportRegistry(ctx, dir, out, &repo.ExportOptions{Bundle: bopts})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("corpus entries tried %d, built offline %d, added %d (versions); exported %d servers, %d skipped", tried, built, len(done), len(res.Servers), len(res.Skipped))
	if len(done) < 30 {
		t.Fatalf("only %d corpus entries made it into the catalog; the test needs 30", len(done))
	}
	for _, a := range done {
		checkExported(t, out, a.name, a.version, a.servers)
	}
}
