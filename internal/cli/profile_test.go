package cli

import (
	"strings"
	"testing"

	"github.com/berth-mcp/berth/store"
)

// TestUnmatchedPatterns: profile create warns about a pattern that matches
// none of the tools pinned for its plugin (servers and native tool
// providers), and says nothing of a plugin not yet started.
func TestUnmatchedPatterns(t *testing.T) {
	w := &store.Workspace{Plugins: map[string]*store.Enablement{
		"acme": {Surfaces: map[string]*store.Surface{
			"notes":        {Tools: map[string]string{"read_note": "h", "search": "h"}},
			"native:clock": {Tools: map[string]string{"now": "h"}},
		}},
		"fresh": {},
	}}
	p := &store.Profile{
		Tools:  []string{"acme__notes__read_*", "acme__clock__now", "acme__notes__raed_*", "fresh__x__*"},
		Mode:   store.ToolsLazy,
		Always: []string{"acme__notes__read_note", "acme__notes__serch", "acme__notes__search"},
	}
	got := unmatchedPatterns(w, p)
	want := []string{
		"--tool acme__notes__raed_* matches none of the 3 tools pinned for acme (berth tools lists them); it offers nothing until a tool of that name appears",
		"--always acme__notes__serch matches none of the 3 tools pinned for acme",
		"--always acme__notes__search matches only tools of acme that the profile's --tool patterns leave out, so it lists none",
	}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d = %q, want %q", i, got[i], want[i])
		}
	}
	if unmatchedPatterns(nil, p) != nil {
		t.Fatal("a workspace without plugins warned")
	}
}

// noProfile's commands name the workspace quoted for a shell, so they run
// as printed for a path with a space.
func TestNoProfileQuotesTheWorkspace(t *testing.T) {
	got := noProfile("/home/me/my notes", "desk").Error()
	want := "/home/me/my notes has no profile desk: berth profile list --workspace '/home/me/my notes' shows its profiles, berth profile create desk --workspace '/home/me/my notes' --plugin P makes it"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
