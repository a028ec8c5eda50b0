package importer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
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
	for _, d := range []string{"good/claude-plugin", "bad/claude-plugin-server-duplicate", "bad/claude-plugin-remote-auth", "bad/claude-plugin-variable"} {
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
