package foreign

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const claudeCorpus = "../../../shared/corpus/claude-marketplaces"

var quotedRe = regexp.MustCompile(`"[^"]*"|\([^)]*\)`)

// TestClaudeCorpusMeasure reads every marketplace.json of the corpus (474
// entries of five real marketplaces) as berth marketplace add does, and
// logs how many entries
// berth lists and why it skips the rest, grouped by rule and reason
// (quoted values left out). The corpus holds the catalogs only, so a
// local source names a plugin directory that is not there (as-recorded);
// with-plugin-trees plants each one as its entry describes it
// (plantPlugins). Run with
//
//	go test ./marketplace/foreign -run TestClaudeCorpusMeasure -v
func TestClaudeCorpusMeasure(t *testing.T) {
	t.Run("as-recorded", func(t *testing.T) { measureClaudeCorpus(t, false) })
	t.Run("with-plugin-trees", func(t *testing.T) { measureClaudeCorpus(t, true) })
}

// plantPlugins writes, for every entry of the marketplace.json data with a
// local source, the plugin directory it names with the plugin.json the
// entry describes: its name, and its version when it has one (Claude Code
// takes the entry's version for a plugin.json without one). So every
// entry is read as far as the entry's own data allows.
func plantPlugins(t *testing.T, root string, data []byte) {
	var doc struct {
		Plugins []struct {
			Name    string          `json:"name"`
			Version string          `json:"version"`
			Source  json.RawMessage `json:"source"`
		} `json:"plugins"`
		Metadata struct {
			PluginRoot string `json:"pluginRoot"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range doc.Plugins {
		var rel string
		if json.Unmarshal(p.Source, &rel) != nil || !strings.HasPrefix(rel, "./") {
			continue
		}
		dir := filepath.Join(root, doc.Metadata.PluginRoot, filepath.FromSlash(rel), ".claude-plugin")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		pj := map[string]string{"name": p.Name}
		if p.Version != "" {
			pj["version"] = p.Version
		}
		out, _ := json.Marshal(pj)
		if err := os.WriteFile(filepath.Join(dir, "plugin.json"), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func measureClaudeCorpus(t *testing.T, withTrees bool) {
	dirs, err := os.ReadDir(claudeCorpus)
	if err != nil {
		t.Skipf("the corpus is not here: %v", err)
	}
	total, listed := 0, 0
	reasons := map[string]int{}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(claudeCorpus, d.Name(), "marketplace.json"))
		if err != nil {
			t.Fatal(err)
		}
		root := t.TempDir()
		if withTrees {
			plantPlugins(t, root, data)
		}
		entries, ps, err := ParseClaudeMarketplace(data, root)
		if err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
		total += len(entries) + len(ps)
		listed += len(entries)
		for _, p := range ps {
			msg := quotedRe.ReplaceAllString(p.Message, "…")
			if i := strings.Index(msg, ": "); i > 0 && strings.HasPrefix(msg, "the source") {
				msg = msg[:i]
			}
			reasons[p.Rule+": "+msg]++
		}
	}
	if total != 474 {
		t.Errorf("%d entries, want the corpus's 474", total)
	}
	var lines []string
	for r, n := range reasons {
		lines = append(lines, fmt.Sprintf("%4d  %s", n, r))
	}
	slices.Sort(lines)
	slices.Reverse(lines)
	t.Logf("%d entries: %d listed, %d skipped:\n%s", total, listed, total-listed, strings.Join(lines, "\n"))
	for r := range reasons {
		if strings.Contains(r, "not a berth plugin name") || strings.Contains(r, "no letter or digit") {
			t.Errorf("an entry refused for its name: %s", r)
		}
	}
}
