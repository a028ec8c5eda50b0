//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A real npm-fetched server in each foreign format that has no registry
// of its own (issue 20's "done when"): a versionless Claude Code plugin
// whose .mcp.json runs chrome-devtools-mcp through npx, as the plugin of
// ChromeDevTools/chrome-devtools-mcp (listed in the corpus's
// chrome-devtools-mcp marketplace) does, and an MCP Bundle whose display
// name is not a berth name and whose mcp_config runs the same package.
// Each is digested, trusted unsigned by that digest, enabled, and berth
// lists the tools npx's server offers. The server.json path is
// TestRegistryCorpusInstall's.
func TestImportedFormatsRunThroughNPX(t *testing.T) {
	const spec = "chrome-devtools-mcp@0.10.2"
	home := t.TempDir()
	t.Cleanup(func() { makeWritable(home) })
	run := func(args ...string) string { t.Helper(); return runBerth(t, home, args...) }
	src := t.TempDir()
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(src, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("claude/.claude-plugin/plugin.json", `{
  "name": "chrome-devtools-mcp",
  "description": "Reliable automation, in-depth debugging, and performance analysis in Chrome using Chrome DevTools and Puppeteer",
  "author": {"name": "Chrome DevTools Team"}
}
`)
	write("claude/.mcp.json", `{
  "mcpServers": {
    "chrome-devtools": {"command": "npx", "args": ["-y", "`+spec+`"]}
  }
}
`)
	write("mcpb/manifest.json", `{
  "manifest_version": "0.3",
  "name": "Chrome DevTools",
  "version": "0.10.2",
  "description": "Chrome DevTools for coding agents",
  "author": {"name": "Chrome DevTools Team"},
  "server": {
    "type": "node",
    "entry_point": "server/index.js",
    "mcp_config": {"command": "npx", "args": ["-y", "`+spec+`"]}
  }
}
`)
	write("mcpb/server/index.js", "")

	cases := []struct {
		dir, plugin, version string
	}{
		// No version in plugin.json: berth derives one from the content.
		{"claude", "chrome-devtools-mcp", `0\.0\.0-berth\.[0-9a-f]+`},
		// "Chrome DevTools" maps to berth's name grammar.
		{"mcpb", "chrome-devtools", `0\.10\.2`},
	}
	digests := map[string]string{}
	for _, c := range cases {
		dir := filepath.Join(src, c.dir)
		out := run("review", dir)
		if !regexp.MustCompile(regexp.QuoteMeta(c.plugin) + ` ` + c.version).MatchString(out) {
			t.Fatalf("review of the %s source does not name %s %s:\n%s", c.dir, c.plugin, c.version, out)
		}
		if !strings.Contains(out, "npx -y "+spec) {
			t.Fatalf("review of the %s source does not show the npx fetch:\n%s", c.dir, out)
		}
		digests[c.dir] = strings.TrimSpace(run("digest", dir))
	}

	// The real fetch: skipped (a failure under BERTH_REQUIRE_PEERS=1) when
	// npm cannot see the package here.
	npmFetches(t, home, spec)
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		run("trust", "--yes", "--allow-unsigned", "--digest", digests[c.dir], filepath.Join(src, c.dir))
		run("enable", c.plugin, "--workspace", ws)
		out := run("tools", c.plugin, "--workspace", ws)
		if !regexp.MustCompile(regexp.QuoteMeta(c.plugin) + `__[a-z0-9_-]+__navigate_page`).MatchString(out) {
			st, _ := berthCmd(home, nil, "status", "--workspace", ws).CombinedOutput()
			t.Errorf("berth tools of the %s plugin %s:\n%s\nstatus:\n%s", c.dir, c.plugin, out, st)
		}
	}
}
