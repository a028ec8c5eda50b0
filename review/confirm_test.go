package review

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
)

// The review shows each input's description, choices and example, and
// for a value the operator confirms, the publisher's value and that the
// operator's value is kept in berth's config.
func TestReviewConfirmInput(t *testing.T) {
	m := map[string]any{
		"manifestVersion": 1, "name": "acme", "version": "1.0.0", "description": "d",
		"mcpServers": map[string]any{"s": map[string]any{"stdio": map[string]any{
			"command": "node", "args": []string{"${bundle}/berth.json"},
			"env": map[string]any{"MODE": map[string]any{"fromEnv": "ACME_MODE"}},
		}}},
		"importedFrom": map[string]any{"format": "mcpb", "manifest": "berth.json", "inputs": []any{map[string]any{
			"name": "user_config.mode", "type": "string", "description": "How to search", "default": "fast",
			"placeholder": "fast or slow", "choices": []string{"fast", "slow"}, "fromEnv": "ACME_MODE", "confirm": true, "becomes": "the environment variable MODE",
		}}},
	}
	data, _ := json.Marshal(m)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, bundle.ManifestFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Open(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	out := string(text(t, New(b)))
	for _, w := range []string{
		"description  How to search",
		`choices      "fast", "slow"`,
		`example      "fast or slow"`,
		`confirm      the publisher offers "fast"; you confirm it as ACME_MODE when you install or enable the plugin`,
		"never in the bundle",
		"environment  MODE: the value you confirm, kept as ACME_MODE in berth's config (never read from your environment)",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("the review lacks %q:\n%s", w, out)
		}
	}
	// Not a variable berth reads from the environment or the secret store.
	if src := New(b).Sources(); len(src) != 0 {
		t.Errorf("Sources = %+v, want none", src)
	}
}
