package review

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/runtimefetch"
)

// TestReviewOfPinnedImport: the review of a source berth pinned says
// when, to what, and what the source asked for; the review of the bundle
// berth import wrote says the same without the time (the berth.json's
// claim), and both have the same hash.
func TestReviewOfPinnedImport(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "plugin")
	os.MkdirAll(filepath.Join(dir, ".claude-plugin"), 0o755)
	os.WriteFile(filepath.Join(dir, ".claude-plugin", "plugin.json"), []byte(`{"name": "acme-notes", "version": "1.0.0", "description": "Notes"}`), 0o644)
	os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers": {"notes": {"command": "npx", "args": ["-y", "@acme/notes@latest"]}}}`), 0o644)
	pin := func(_ context.Context, u *runtimefetch.Unpinned) (*runtimefetch.Pin, error) {
		return &runtimefetch.Pin{Requested: u.Requested, Resolved: "1.4.2", Spec: u.Pinned("1.4.2"), Registry: "https://registry.npmjs.org/"}, nil
	}
	b, err := bundle.Open(ctx, dir, &bundle.Options{Pin: pin})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	d := New(b)
	var text bytes.Buffer
	d.WriteText(&text)
	today := time.Now().UTC().Format(time.DateOnly)
	want := "server notes: @acme/notes pinned by berth on " + today + ": 1.4.2; the source asked for latest (resolved for npx against https://registry.npmjs.org/)"
	if !strings.Contains(text.String(), want) {
		t.Errorf("review lacks %q:\n%s", want, text.String())
	}
	if len(d.PinnedOnImport) != 1 {
		t.Errorf("json: %+v", d.PinnedOnImport)
	}
	out := filepath.Join(t.TempDir(), "out")
	if err := b.WriteTree(ctx, out); err != nil {
		t.Fatal(err)
	}
	w, err := bundle.Open(ctx, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	dw := New(w)
	text.Reset()
	dw.WriteText(&text)
	if want := "server notes: @acme/notes pinned by berth on import (as claimed): 1.4.2; the source asked for latest"; !strings.Contains(text.String(), want) {
		t.Errorf("review of the written bundle lacks %q:\n%s", want, text.String())
	}
	if dw.Hash() != d.Hash() {
		t.Errorf("hashes differ: %s %s", dw.Hash(), d.Hash())
	}
}
