package review

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
)

// slackOAuthPlugins are the 14 plugins of the knowledge-work-plugins
// marketplace (anthropics/knowledge-work-plugins at 5267cf7, the commit of
// the corpus's marketplace.json) whose .mcp.json declares Slack's hosted
// server with Claude Code oauth settings, as slackServer below. berth
// refused each of them with claude-plugin-remote-auth before issue 21:
// the corpus's "14 plugins refused because a server declares oauth".
// Thirteen also list connectors Claude Code fills in itself ("url": ""),
// which berth import --without leaves out; the measurement on the whole
// trees is `go run ./bench/claudetrees DIR`.
var slackOAuthPlugins = []string{
	"customer-support", "design", "engineering", "enterprise-search", "finance",
	"human-resources", "legal", "marketing", "operations", "product-management",
	"productivity", "sales", "slack-by-salesforce", "small-business",
}

// slackServer is the server as those plugins write it: a pre-registered
// public client of Slack's and a fixed callback port.
const slackServer = `{
  "mcpServers": {
    "slack": {
      "type": "http",
      "url": "https://mcp.slack.com/mcp",
      "oauth": {
        "clientId": "1601185624273.8899143856786",
        "callbackPort": 3118
      }
    }
  }
}
`

// TestCorpusClaudeOAuthPluginsImport: each of the 14 plugins, built from
// its entry of the corpus's knowledge-work-plugins marketplace.json (its
// name and description; the entry has no version, so berth derives one)
// and the Slack server its .mcp.json declares, imports (before issue 21
// every one was refused with claude-plugin-remote-auth), and its review
// says that it signs in to Slack's server as the operator, with Slack's
// pre-registered client and the plugin's callback port.
func TestCorpusClaudeOAuthPluginsImport(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes")
	}
	data, err := os.ReadFile(filepath.Join(claudeCorpus, "knowledge-work-plugins", "marketplace.json"))
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("the shared corpus is not here")
	}
	if err != nil {
		t.Fatal(err)
	}
	var market struct {
		Plugins []map[string]any `json:"plugins"`
	}
	if err := json.Unmarshal(data, &market); err != nil {
		t.Fatal(err)
	}
	imported := 0
	for _, name := range slackOAuthPlugins {
		i := slices.IndexFunc(market.Plugins, func(p map[string]any) bool { return p["name"] == name })
		if i < 0 {
			t.Errorf("the marketplace lists no %s", name)
			continue
		}
		entry := market.Plugins[i]
		if src, ok := entry["source"].(string); !ok || !strings.HasPrefix(src, "./") {
			t.Errorf("%s: source %v is not a plugin of the marketplace's own repository", name, entry["source"])
			continue
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, ".claude-plugin"), 0o755)
			pj, _ := json.Marshal(map[string]any{"name": entry["name"], "description": entry["description"]})
			if err := os.WriteFile(filepath.Join(dir, ".claude-plugin", "plugin.json"), pj, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(slackServer), 0o644); err != nil {
				t.Fatal(err)
			}
			b, err := bundle.Open(context.Background(), dir, nil)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			defer b.Close()
			imported++
			out := string(text(t, New(b)))
			for _, want := range []string{
				"signs in     to https://mcp.slack.com/mcp at the authorization server the server names (discovered at sign-in) as you, asking for the scopes the server names; the token is kept in berth's secret store and sent only to https://mcp.slack.com\n",
				`client       the pre-registered public client "1601185624273.8899143856786"`,
				"redirect     http://127.0.0.1:3118/callback",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("the review does not say %q:\n%s", want, out)
				}
			}
		})
	}
	t.Logf("%d of the %d plugins refused for their oauth settings before issue 21 import", imported, len(slackOAuthPlugins))
}
