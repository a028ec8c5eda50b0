package review

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
)

const claudeCorpus = "../../shared/corpus/claude-marketplaces"

// TestGoldenCorpusClaudePlugin: the review of one real Claude Code plugin
// entry, context7 of the official marketplace (anthropics/
// claude-plugins-official), is testdata/import/golden/corpus-context7.
// The corpus holds the marketplace.json entry only, not the plugin's
// tree, so the test builds the tree from the entry's own data: its
// plugin.json is the entry's name, description, author and homepage (the
// entry, like the plugin, has no version: berth derives one), and its
// .mcp.json is the hosted server the entry's description names
// (https://mcp.context7.com/mcp) with the header upstash's context7 plugin
// sends ("Authorization": "${CONTEXT7_API_KEY:-}", issue 20).
func TestGoldenCorpusClaudePlugin(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes")
	}
	data, err := os.ReadFile(filepath.Join(claudeCorpus, "claude-plugins-official", "marketplace.json"))
	if err != nil {
		t.Skipf("the corpus is not here: %v", err)
	}
	var market struct {
		Plugins []map[string]any `json:"plugins"`
	}
	if err := json.Unmarshal(data, &market); err != nil {
		t.Fatal(err)
	}
	var entry map[string]any
	for _, p := range market.Plugins {
		if p["name"] == "context7" {
			entry = p
		}
	}
	if entry == nil {
		t.Fatal("the official marketplace lists no context7")
	}
	if _, ok := entry["version"]; ok {
		t.Fatalf("the entry has a version now: %v", entry["version"])
	}
	const url = "https://mcp.context7.com/mcp"
	if !strings.Contains(entry["description"].(string), url) {
		t.Fatalf("the entry's description no longer names %s", url)
	}
	pj := map[string]any{}
	for _, k := range []string{"name", "description", "author", "homepage"} {
		if v, ok := entry[k]; ok {
			pj[k] = v
		}
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".claude-plugin"), 0o755)
	pjData, _ := json.MarshalIndent(pj, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, ".claude-plugin", "plugin.json"), append(pjData, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	mcp := `{
  "mcpServers": {
    "context7": {
      "type": "http",
      "url": "` + url + `",
      "headers": {
        "Authorization": "${CONTEXT7_API_KEY:-}"
      }
    }
  }
}
`
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(mcp), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Open(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !bundle.IsDerivedVersion(b.Manifest.Version) {
		t.Errorf("version %s is not derived", b.Manifest.Version)
	}
	checkGolden(t, filepath.Join(importGood, "..", "golden", "corpus-context7"), New(b))
}
