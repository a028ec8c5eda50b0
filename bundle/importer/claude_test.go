package importer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
)

// writePlugin writes a Claude Code plugin into a new directory: its
// plugin.json, and files (path → content) beside it.
func writePlugin(t *testing.T, pluginJSON string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	all := map[string]string{claudeManifest: pluginJSON}
	for k, v := range files {
		all[k] = v
	}
	for rel, body := range all {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(rel, "bin/") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// openValid opens dir and fails the test unless it is a valid bundle.
func openValid(t *testing.T, dir string) *bundle.Bundle {
	t.Helper()
	b, err := bundle.Open(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// openInvalid opens dir and returns its problems as "rule\tpath" lines;
// the test fails when it is valid.
func openInvalid(t *testing.T, dir string) (lines []string, ie *bundle.InvalidError) {
	t.Helper()
	b, err := bundle.Open(context.Background(), dir, nil)
	if err == nil {
		b.Close()
		t.Fatalf("%s is valid", dir)
	}
	if !errors.As(err, &ie) {
		t.Fatalf("Open: %v", err)
	}
	for _, p := range ie.Problems {
		lines = append(lines, p.Rule+"\t"+p.Path)
	}
	return lines, ie
}

func TestForeignNames(t *testing.T) {
	long := strings.Repeat("Very Long Name ", 8)
	for _, c := range []struct {
		in, plugin, server string
	}{
		{"google calendar", "google-calendar", "google-calendar"},
		{"PubMed", "pubmed", "pubmed"},
		{"Synapse.org", "synapse-org", "synapse-org"},
		{"Filesystem", "filesystem", "filesystem"},
		{"Slack MCP Server", "slack-mcp-server", "slack-mcp-server"},
		{"  --Äpfel & Birnen--  ", "pfel-birnen", "pfel-birnen"},
		// Already berth names: kept as they are.
		{"acme-db", "acme-db", "acme-db"},
		{"a--b", "a--b", "a--b"},
		{"my_server", "my-server", "my_server"},
		{"a__b", "a-b", "a-b"},
		{long, "very-long-name-very-long-name-very-long-name-very-long-" + hash8(long), "very-long-name-very-lon-" + hash8(long)},
	} {
		if got, ok := PluginName(c.in); !ok || got != c.plugin || !bundle.IsValidName(got) {
			t.Errorf("PluginName(%q) = %q, %v; want %q", c.in, got, ok, c.plugin)
		}
		if got, ok := ServerName(c.in); !ok || got != c.server || !bundle.IsValidServerName(got) {
			t.Errorf("ServerName(%q) = %q, %v; want %q", c.in, got, ok, c.server)
		}
	}
	for _, in := range []string{"", "日本語", "!!!", "--"} {
		if got, ok := PluginName(in); ok {
			t.Errorf("PluginName(%q) = %q, want none", in, got)
		}
		if got, ok := ServerName(in); ok {
			t.Errorf("ServerName(%q) = %q, want none", in, got)
		}
	}
}

// hash8 is the first 8 hex digits of the SHA-256 of s.
func hash8(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

// Claude Code takes any server and plugin name; berth maps each to its
// grammar, and keeps the source's names for the review.
func TestClaudeNamesMapped(t *testing.T) {
	dir := writePlugin(t, `{"name": "Acme Tools", "version": "1.0.0", "description": "d"}`, map[string]string{
		".mcp.json": `{"mcpServers": {
			"google calendar": {"type": "http", "url": "https://calendar.example/mcp"},
			"PubMed": {"type": "http", "url": "https://pubmed.example/mcp"},
			"plain": {"type": "http", "url": "https://plain.example/mcp"}}}`,
	})
	b := openValid(t, dir)
	m := b.Manifest
	if m.Name != "acme-tools" || m.ImportedFrom.SourceName != "Acme Tools" {
		t.Errorf("name %q, source name %q", m.Name, m.ImportedFrom.SourceName)
	}
	for _, n := range []string{"google-calendar", "pubmed", "plain"} {
		if m.MCPServers[n] == nil {
			t.Errorf("no server %q: %v", n, m.MCPServers)
		}
	}
	want := map[string]string{"google-calendar": "google calendar", "pubmed": "PubMed"}
	if got := m.ImportedFrom.ServerNames; len(got) != 2 || got["google-calendar"] != want["google-calendar"] || got["pubmed"] != want["pubmed"] {
		t.Errorf("server names %v, want %v", got, want)
	}
}

// Two names that map to one are refused, naming both; a name with
// nothing to map is refused as berth refuses a bad name.
func TestClaudeNamesRefused(t *testing.T) {
	dir := writePlugin(t, `{"name": "!!!", "version": "1.0.0", "description": "d"}`, map[string]string{
		".mcp.json": `{"mcpServers": {
			"Google Calendar": {"type": "http", "url": "https://a.example/mcp"},
			"google-calendar": {"type": "http", "url": "https://b.example/mcp"},
			"日本": {"type": "http", "url": "https://c.example/mcp"}}}`,
	})
	lines, ie := openInvalid(t, dir)
	want := []string{
		"name-format\t.claude-plugin/plugin.json: name",
		"claude-plugin-server-duplicate\t.mcp.json: mcpServers.google-calendar",
		"server-name-format\t.mcp.json: mcpServers[\"日本\"]",
	}
	for _, w := range want {
		if !strings.Contains(strings.Join(lines, "\n"), w) {
			t.Errorf("no problem %q in\n%v", w, ie)
		}
	}
	if msg := ie.Error(); !strings.Contains(msg, `"Google Calendar"`) || !strings.Contains(msg, `"google-calendar"`) {
		t.Errorf("the collision does not name both: %v", ie)
	}
}

// An MCP Bundle's name is mapped too ("Slack MCP Server").
func TestMCPBNameMapped(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "server"), 0o755)
	os.WriteFile(filepath.Join(dir, "server", "index.js"), []byte("//\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"manifest_version": "0.3", "name": "Slack MCP Server", "display_name": "Slack MCP Server", "version": "1.0.0", "description": "d", "author": {"name": "A"},
		"server": {"type": "node", "entry_point": "server/index.js", "mcp_config": {"command": "node", "args": ["${__dirname}/server/index.js"]}}}`), 0o644)
	b := openValid(t, dir)
	if b.Manifest.Name != "slack-mcp-server" || b.Manifest.ImportedFrom.SourceName != "Slack MCP Server" {
		t.Errorf("name %q, source name %q", b.Manifest.Name, b.Manifest.ImportedFrom.SourceName)
	}
}

// A plugin with no version gets 0.0.0-berth.<12 hex digits of its content
// digest>: the same for the same files, another for other files, and
// independent of the berth.json it goes into.
func TestClaudeVersionless(t *testing.T) {
	files := map[string]string{".mcp.json": `{"mcpServers": {"github": {"type": "http", "url": "https://api.example/mcp/", "headers": {"Authorization": "Bearer ${GITHUB_PERSONAL_ACCESS_TOKEN}"}}}}`}
	const pj = `{"name": "github", "description": "d"}`
	a, b := writePlugin(t, pj, files), writePlugin(t, pj, files)
	ba, bb := openValid(t, a), openValid(t, b)
	// The content digest is the generated bundle's, its berth.json with
	// the version (and the digest) left blank.
	digest := bundle.DerivedDigest(ba.Tree.Listing, ba.Manifest)
	if own, err := ContentDigest(context.Background(), a); err != nil || own == digest {
		t.Fatalf("the plugin's own files give %s (%v): the generated berth.json is not covered", own, err)
	}
	want := "0.0.0-berth." + strings.TrimPrefix(digest, "sha256:")[:12]
	if ba.Manifest.Version != want || bb.Manifest.Version != want || ba.Digest != bb.Digest {
		t.Fatalf("versions %s %s, want %s; digests %s %s", ba.Manifest.Version, bb.Manifest.Version, want, ba.Digest, bb.Digest)
	}
	if dv := ba.Manifest.ImportedFrom.DerivedVersion; dv == nil || dv.ContentDigest != digest {
		t.Errorf("derivedVersion %+v, want %s", dv, digest)
	}
	if !bundle.IsDerivedVersion(want) {
		t.Errorf("%s is not a derived version", want)
	}
	// Written out and read again as a berth bundle: the same version and
	// digest.
	out := filepath.Join(t.TempDir(), "out")
	if err := ba.WriteTree(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	if w := openValid(t, out); w.Manifest.Version != want || w.Digest != ba.Digest {
		t.Errorf("written: %s %s", w.Manifest.Version, w.Digest)
	}
	// Another content, another version.
	os.WriteFile(filepath.Join(b, "README.md"), []byte("changed\n"), 0o644)
	if bc := openValid(t, b); bc.Manifest.Version == want || !bundle.IsDerivedVersion(bc.Manifest.Version) {
		t.Errorf("changed content keeps version %s", bc.Manifest.Version)
	}
	// An empty version is still refused.
	c := writePlugin(t, `{"name": "github", "version": "", "description": "d"}`, files)
	if lines, _ := openInvalid(t, c); !strings.Contains(strings.Join(lines, "\n"), "claude-plugin-version-missing\t.claude-plugin/plugin.json: version") {
		t.Errorf("empty version: %v", lines)
	}
}

// ${CLAUDE_PROJECT_DIR} in a command line is the workspace; in env it is
// refused with the way to pass it, and other host variables in argv stay
// refused.
func TestClaudeProjectDir(t *testing.T) {
	dir := writePlugin(t, `{"name": "p", "version": "1.0.0", "description": "d"}`, map[string]string{
		"bin/srv":   "#!/bin/sh\n",
		".mcp.json": `{"mcpServers": {"s": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/srv", "args": ["--root", "${CLAUDE_PROJECT_DIR}", "--db=${CLAUDE_PROJECT_DIR}/db"]}}}`,
	})
	b := openValid(t, dir)
	args := b.Manifest.MCPServers["s"].Stdio.Args
	if strings.Join(args, " ") != "--root ${workspace} --db=${workspace}/db" {
		t.Errorf("args %q", args)
	}
	if in := b.Manifest.ImportedFrom.Inputs; len(in) != 1 || in[0].Name != "${CLAUDE_PROJECT_DIR}" || !strings.Contains(in[0].Becomes, "${workspace}") {
		t.Errorf("inputs %+v", in)
	}
	bad := writePlugin(t, `{"name": "p", "version": "1.0.0", "description": "d"}`, map[string]string{
		"bin/srv":   "#!/bin/sh\n",
		".mcp.json": `{"mcpServers": {"s": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/srv", "args": ["${HOME}/x"], "env": {"ROOT": "${CLAUDE_PROJECT_DIR}"}}}}`,
	})
	lines, _ := openInvalid(t, bad)
	got := strings.Join(lines, "\n")
	for _, w := range []string{"claude-plugin-variable\t.mcp.json: mcpServers.s.env.ROOT", "claude-plugin-variable\t.mcp.json: mcpServers.s.args[0]"} {
		if !strings.Contains(got, w) {
			t.Errorf("no %q in %s", w, got)
		}
	}
}

// A whole Authorization value from the environment (context7's plugin
// sends "Authorization": "${CONTEXT7_API_KEY:-}") is an Authorization
// header read from that variable; a literal one, a mixed one, or one
// beside a bearer token stays refused.
func TestClaudeAuthorizationFromEnv(t *testing.T) {
	dir := writePlugin(t, `{"name": "context7", "version": "1.0.2", "description": "d"}`, map[string]string{
		".mcp.json": `{"mcpServers": {"context7": {"type": "http", "url": "https://mcp.context7.com/mcp", "headers": {"Authorization": "${CONTEXT7_API_KEY:-}"}}}}`,
	})
	b := openValid(t, dir)
	r := b.Manifest.MCPServers["context7"].Remote
	if r.Headers["Authorization"].FromEnv != "CONTEXT7_API_KEY" || r.Auth != nil {
		t.Errorf("headers %+v, auth %+v", r.Headers, r.Auth)
	}
	in := b.Manifest.ImportedFrom.Inputs
	if len(in) != 1 || !in[0].Sensitive || in[0].Default != "" || !strings.Contains(in[0].Becomes, "Authorization") {
		t.Errorf("inputs %+v", in)
	}
	for _, c := range []struct{ headers, rule string }{
		{`{"Authorization": "sk-literal-token"}`, "claude-plugin-literal-value"},
		{`{"Authorization": "Token ${KEY}"}`, "claude-plugin-literal-value"},
		{`{"Cookie": "${COOKIE}"}`, "header-forbidden"},
	} {
		bad := writePlugin(t, `{"name": "p", "version": "1.0.0", "description": "d"}`, map[string]string{
			".mcp.json": `{"mcpServers": {"s": {"type": "http", "url": "https://x.example/mcp", "headers": ` + c.headers + `}}}`,
		})
		lines, ie := openInvalid(t, bad)
		if !strings.Contains(strings.Join(lines, "\n"), c.rule) {
			t.Errorf("%s: %v", c.headers, ie)
		}
		if strings.Contains(ie.Error(), "sk-literal-token") {
			t.Errorf("the literal is shown: %v", ie)
		}
	}
}
