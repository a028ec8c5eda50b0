package pool

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzUILink: whatever _meta a plugin server lists with a tool, UILink
// returns "" or a ui:// URI, withoutUILink leaves no link and never
// changes the tool's own _meta, and the tool still hashes.
func FuzzUILink(f *testing.F) {
	f.Add(`{"ui":{"resourceUri":"ui://a/b","visibility":["app"]}}`)
	f.Add(`{"ui/resourceUri":"ui://old"}`)
	f.Add(`{"ui":"ui://x","ui/resourceUri":7}`)
	f.Add(`{"ui":{"resourceUri":"UI://A"}}`)
	f.Fuzz(func(t *testing.T, raw string) {
		var meta mcp.Meta
		if json.Unmarshal([]byte(raw), &meta) != nil {
			return
		}
		before, _ := json.Marshal(meta)
		tool := &mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}, Meta: meta}
		if u := UILink(tool); u != "" && !IsUIURI(u) {
			t.Fatalf("UILink = %q", u)
		}
		stripped := withoutUILink(meta)
		if u := UILink(&mcp.Tool{Meta: stripped}); u != "" {
			t.Fatalf("a link survived: %q in %v", u, stripped)
		}
		if after, _ := json.Marshal(meta); string(after) != string(before) {
			t.Fatalf("withoutUILink changed the tool's own _meta: %s → %s", before, after)
		}
		if _, err := ToolHash(tool); err != nil {
			t.Fatal(err)
		}
	})
}
