package importer

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/strictjson"
)

// checkConversion is what every importer must hold to for any input: no
// panic, every problem located in a file of the source with a rule and a
// message, and a generated manifest that berth's strict decoder reads
// back unchanged.
func checkConversion(t *testing.T, c *conversion, files ...string) {
	t.Helper()
	for _, p := range c.ps.list {
		if p.Rule == "" || p.Message == "" || p.Path == "" {
			t.Fatalf("malformed problem %+v", p)
		}
		ok := false
		for _, f := range files {
			if p.Path == f || strings.HasPrefix(p.Path, f+": ") {
				ok = true
			}
		}
		if !ok {
			t.Fatalf("problem not located in %q: %+v", files, p)
		}
	}
	if c.manifest == nil {
		return
	}
	data := bundle.EncodeManifest(c.manifest)
	m, ps := bundle.DecodeManifest(data)
	if len(ps) > 0 {
		t.Fatalf("the generated berth.json does not decode: %v\n%s", ps, data)
	}
	if again := bundle.EncodeManifest(m); string(again) != string(data) {
		t.Fatalf("the generated berth.json does not round-trip:\n%s\n%s", data, again)
	}
}

func seedFiles(f *testing.F, pattern string) {
	names, _ := filepath.Glob(pattern)
	for _, n := range names {
		if data, err := os.ReadFile(n); err == nil {
			f.Add(data)
		}
	}
}

// FuzzMCPBManifest converts arbitrary MCPB manifests.
func FuzzMCPBManifest(f *testing.F) {
	seedFiles(f, filepath.Join(importFixtures, "*", "*", "manifest.json"))
	seedFiles(f, filepath.Join(corpusMCPB, "*", "manifest.json")) // the real ones, when the corpus is here
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "server"), 0o755)
		os.WriteFile(filepath.Join(dir, "server", "index.js"), []byte("x"), 0o644)
		if err := os.WriteFile(filepath.Join(dir, mcpbManifest), data, 0o644); err != nil {
			t.Fatal(err)
		}
		checkConversion(t, convertMCPB(dir), mcpbManifest)
	})
}

// FuzzClaudePlugin converts arbitrary plugin.json and .mcp.json pairs.
func FuzzClaudePlugin(f *testing.F) {
	for _, d := range []string{"good/claude-plugin", "good/claude-plugin-oauth", "bad/claude-plugin-server-duplicate", "bad/claude-plugin-remote-auth", "bad/claude-plugin-oauth-xaa", "bad/claude-plugin-oauth-metadata-url", "bad/claude-plugin-variable"} {
		p, _ := os.ReadFile(filepath.Join(importFixtures, d, claudeManifest))
		m, _ := os.ReadFile(filepath.Join(importFixtures, d, claudeMCPFile))
		f.Add(p, m)
	}
	f.Fuzz(func(t *testing.T, plugin, mcp []byte) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, ".claude-plugin"), 0o755)
		os.MkdirAll(filepath.Join(dir, "hooks"), 0o755)
		os.WriteFile(filepath.Join(dir, claudeManifest), plugin, 0o644)
		os.WriteFile(filepath.Join(dir, claudeMCPFile), mcp, 0o644)
		// plugin.json may name its own files; the fuzzer's hooks file is
		// .mcp.json's bytes too.
		os.WriteFile(filepath.Join(dir, "hooks", "hooks.json"), mcp, 0o644)
		c := convertClaude(dir, nil)
		var files []string
		for _, p := range c.ps.list {
			// Problems may be located in any file plugin.json names.
			file, _, _ := strings.Cut(p.Path, ": ")
			files = append(files, file)
			if filepath.IsAbs(file) || strings.Contains(file, "..") {
				t.Fatalf("problem outside the plugin: %+v", p)
			}
		}
		checkConversion(t, c, append(files, claudeManifest, claudeMCPFile)...)
	})
}

// FuzzServerJSON converts arbitrary server.json documents.
func FuzzServerJSON(f *testing.F) {
	seedFiles(f, filepath.Join(importFixtures, "*", "*.json"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, registryManifest), data, 0o644); err != nil {
			t.Fatal(err)
		}
		checkConversion(t, convertRegistry(dir), registryManifest)
	})
}

// FuzzServerJSONVersions checks the schema-version mapping on arbitrary
// documents: read as each published version (and with the version
// inferred) every conversion holds to checkConversion; an inferred
// version reads as that version does; and a camelCase document written
// in 2025-07-09's snake_case names reads, as 2025-07-09, into the same
// servers, inputs and problem rules as it does as 2025-09-16 (the two
// differ only in the names of their fields).
func FuzzServerJSONVersions(f *testing.F) {
	seedFiles(f, filepath.Join(importFixtures, "*", "*.json"))
	f.Add([]byte(`{"name": "io.github.a/b", "description": "d", "version": "v1.0.0", "repository": {}, "x": 1,
	  "packages": [{"registryType": "npm", "identifier": "a", "version": "1.0.0", "transport": {"type": "stdio"},
	    "environmentVariables": [{"name": "K", "value": "{k}", "isSecret": true, "variables": {"k": {"isRequired": true}}}]}],
	  "remotes": [{"type": "sse", "url": "https://x.example/sse", "headers": [{"name": "Authorization", "value": "Bearer {t}"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		root, ps := strictjson.Parse(data, strictjson.Options{MaxSize: maxForeignSize})
		if len(ps) > 0 || root == nil || root.Kind != strictjson.Object {
			return
		}
		reads := map[string]*conversion{}
		for _, v := range registryVersions {
			c := readRegistry(registryManifest, root, v)
			checkConversion(t, c, registryManifest)
			reads[v.date] = c
		}
		c := inferRegistry(registryManifest, root, "absent")
		checkConversion(t, c, registryManifest)
		if c.manifest != nil {
			imp := c.manifest.ImportedFrom
			if !imp.FormatVersionInferred || len(shapeProblems(c)) > 0 {
				t.Fatalf("inferred %s with shape problems %v", imp.FormatVersion, c.ps.list)
			}
			imp.FormatVersionInferred = false
			if got, want := bundle.EncodeManifest(c.manifest), bundle.EncodeManifest(reads[imp.FormatVersion].manifest); string(got) != string(want) {
				t.Fatalf("inferred %s reads as\n%s\nnot as\n%s", imp.FormatVersion, got, want)
			}
		}
		if hasKey(root, func(k string) bool { return slices.Contains(slices.Collect(maps.Values(snakeNames)), k) }) {
			return
		}
		camel := reads["2025-09-16"]
		sn := readRegistry(registryManifest, toSnake(root, false), registryVersions[0])
		if a, b := fuzzSummary(camel), fuzzSummary(sn); a != b {
			t.Fatalf("as 2025-09-16:\n%s\nin snake_case as 2025-07-09:\n%s", a, b)
		}
	})
}

// hasKey reports whether a key of an object in n (outside _meta) is one
// that match holds.
func hasKey(n *strictjson.Node, match func(string) bool) bool {
	for i, k := range n.Keys {
		if match(k) || k != "_meta" && hasKey(n.Values[i], match) {
			return true
		}
	}
	for _, e := range n.Elems {
		if hasKey(e, match) {
			return true
		}
	}
	return false
}

// toSnake copies n with every field 2025-09-16 renamed written as
// 2025-07-09 spells it; _meta and the names of variables (map keys, not
// fields) are kept.
func toSnake(n *strictjson.Node, varNames bool) *strictjson.Node {
	out := *n
	out.Keys, out.Values, out.Elems = nil, nil, nil
	for i, k := range n.Keys {
		v := n.Values[i]
		name := k
		if s, ok := snakeNames[k]; ok && !varNames {
			name = s
		}
		if k != "_meta" || varNames {
			v = toSnake(v, k == "variables" && !varNames && v.Kind == strictjson.Object)
		}
		out.Keys = append(out.Keys, name)
		out.Values = append(out.Values, v)
	}
	for _, e := range n.Elems {
		out.Elems = append(out.Elems, toSnake(e, false))
	}
	return &out
}

// fuzzSummary is what a conversion makes of a document, apart from the
// spelling of locations: its servers, inputs, the number of parts not
// carried over, and its problems' rules.
func fuzzSummary(c *conversion) string {
	var b strings.Builder
	for _, p := range c.ps.list {
		b.WriteString(p.Rule + "\n")
	}
	if c.manifest != nil {
		m := *c.manifest
		imp := *m.ImportedFrom
		fmt.Fprintf(&b, "not carried over: %d\n", len(imp.NotCarriedOver))
		imp.NotCarriedOver, imp.FormatVersion = nil, ""
		m.ImportedFrom = &imp
		b.Write(bundle.EncodeManifest(&m))
	}
	return b.String()
}

// FuzzMCPBFile opens arbitrary .mcpb files: the signature block parser
// and the zip reader never panic, and a file read without problems
// reports a signature only with a fingerprint or a problem.
func FuzzMCPBFile(f *testing.F) {
	seedFiles(f, filepath.Join(importFixtures, "*", "*.mcpb"))
	f.Fuzz(func(t *testing.T, data []byte) {
		name := filepath.Join(t.TempDir(), "x.mcpb")
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
		b, ps, err := bundle.Load(context.Background(), name, &bundle.Options{Limits: bundle.Limits{MaxTotalSize: 4 << 20, MaxEntries: 1000}})
		if err != nil {
			return
		}
		defer b.Close()
		if len(ps) > 0 || b.Import == nil || b.Import.Signature == nil {
			return
		}
		if s := b.Import.Signature; s.Fingerprint == "" && s.Problem == "" {
			t.Fatalf("signature %+v", s)
		}
	})
}

// FuzzNames: whatever name another tool accepts, PluginName and
// ServerName give a valid berth name or none, keep a valid one as it is,
// and map the same name the same way.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"google calendar", "PubMed", "Synapse.org", "Slack MCP Server", "a__b", "日本", strings.Repeat("Long Name ", 20)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, ok := PluginName(s); ok != (n != "") || (ok && !bundle.IsValidName(n)) || (bundle.IsValidName(s) && n != s) {
			t.Fatalf("PluginName(%q) = %q, %v", s, n, ok)
		}
		if n, ok := ServerName(s); ok != (n != "") || (ok && !bundle.IsValidServerName(n) && n != "sampling" && n != "elicitation") || (bundle.IsValidServerName(s) && n != s) {
			t.Fatalf("ServerName(%q) = %q, %v", s, n, ok)
		}
		a, _ := PluginName(s)
		b, _ := PluginName(s)
		if a != b {
			t.Fatal("not deterministic")
		}
	})
}
