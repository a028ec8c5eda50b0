//go:build unix

package pool

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/store"
)

const widgetURI = "ui://berth-testserver/widget"

// toolByName returns the catalog entry name, or nil.
func toolByName(t *testing.T, p *Pool, name string) *Tool {
	t.Helper()
	tools, err := p.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.Name == name {
			return tl
		}
	}
	return nil
}

func readText(t *testing.T, p *Pool, uri string) (string, error) {
	t.Helper()
	res, err := p.ReadResource(context.Background(), uri, allow)
	if err != nil {
		return "", err
	}
	return res.Contents[0].Text, nil
}

// An MCP Apps template is pinned at the first listing; a changed template
// is withheld (the read refused naming berth accept, the tool's ui link
// dropped) until accepted, whether it changed under a running server or
// across a restart.
func TestUITemplatePinnedWithheldAccepted(t *testing.T) {
	f := newFixture(t)
	html := filepath.Join(f.ws, "widget.html")
	os.WriteFile(html, []byte("<html>v1</html>"), 0o644)
	f.plugin("demo", map[string]any{"main": testServer("-tools", "echo", "-ui-file", "${workspace}/widget.html")})
	p := f.open(nil)
	show := toolByName(t, p, "demo__main__show")
	if show == nil || show.UI != widgetURI || UILink(show.Definition) != widgetURI {
		t.Fatalf("the tool's ui link is not relayed: %+v", show)
	}
	st0, _ := f.store.State()
	pinned := st0.Workspaces[f.ws].Plugins["demo"].Surfaces["main"].UI[widgetURI]
	if !strings.HasPrefix(pinned, "sha256:") {
		t.Fatalf("template not pinned at enable: %v", st0.Workspaces[f.ws].Plugins["demo"].Surfaces["main"])
	}
	if got, err := readText(t, p, widgetURI); err != nil || got != "<html>v1</html>" {
		t.Fatalf("read %q, %v", got, err)
	}

	// Changed under the running server: the read is the boundary.
	os.WriteFile(html, []byte("<html>v2 <script>exfiltrate()</script></html>"), 0o644)
	_, err := readText(t, p, widgetURI)
	var se *SurfaceError
	if !errors.As(err, &se) || !errors.Is(err, store.ErrDrift) || !strings.Contains(err.Error(), "berth accept demo") || !strings.Contains(err.Error(), widgetURI) {
		t.Fatalf("read of a changed template: %v", err)
	}
	show = toolByName(t, p, "demo__main__show")
	if show == nil || show.UI != "" || UILink(show.Definition) != "" {
		t.Fatalf("a withheld template's link is still listed: %+v", show.Definition.Meta)
	}
	st := status(t, p, "demo__main")
	if st.State != StateChanged || len(st.Changes) != 1 {
		t.Fatalf("status %+v", st)
	}
	ch := st.Changes[0]
	if ch.URI != widgetURI || ch.Tool != "" || ch.Kind != ChangeChanged || ch.Pinned != pinned || ch.Live == pinned || ch.Template == nil || ch.Template.MIMEType != UIMimeType {
		t.Fatalf("change %+v", ch)
	}
	if err := p.Accept(context.Background(), "demo", nil); err == nil {
		t.Fatal("accepted an unseen template")
	}
	if err := p.Accept(context.Background(), "demo", st.Changes); err != nil {
		t.Fatal(err)
	}
	if got, err := readText(t, p, widgetURI); err != nil || !strings.Contains(got, "v2") {
		t.Fatalf("after accept: %q, %v", got, err)
	}
	if show = toolByName(t, p, "demo__main__show"); show.UI != widgetURI {
		t.Fatalf("link not restored after accept: %+v", show)
	}
	st1, _ := f.store.State()
	if got := st1.Workspaces[f.ws].Plugins["demo"].Surfaces["main"].UI[widgetURI]; got != ch.Live {
		t.Fatalf("recorded %s, want %s", got, ch.Live)
	}
	p.Close()

	// Changed across a restart: the listing finds it before any read.
	os.WriteFile(html, []byte("<html>v3</html>"), 0o644)
	p = f.open(nil)
	if show = toolByName(t, p, "demo__main__show"); show == nil || show.UI != "" || UILink(show.Definition) != "" {
		t.Fatalf("after a restart the changed template is linked: %+v", show)
	}
	if st := status(t, p, "demo__main"); st.State != StateChanged || len(st.Changes) != 1 || st.Changes[0].URI != widgetURI {
		t.Fatalf("status after restart %+v", st)
	}
	if _, err := readText(t, p, widgetURI); !errors.As(err, &se) {
		t.Fatalf("read after restart: %v", err)
	}
	if toolByName(t, p, "demo__main__echo") == nil {
		t.Fatal("a template change withheld other tools")
	}
}

func TestUILink(t *testing.T) {
	for _, c := range []struct {
		meta mcp.Meta
		want string
	}{
		{nil, ""},
		{mcp.Meta{"ui": map[string]any{"resourceUri": "ui://a/b"}}, "ui://a/b"},
		{mcp.Meta{"ui/resourceUri": "ui://old"}, "ui://old"},
		{mcp.Meta{"ui": map[string]any{"resourceUri": "ui://new"}, "ui/resourceUri": "ui://old"}, "ui://new"},
		{mcp.Meta{"ui": map[string]any{"resourceUri": "https://x"}}, ""},
		{mcp.Meta{"ui": "ui://x"}, ""},
	} {
		if got := UILink(&mcp.Tool{Meta: c.meta}); got != c.want {
			t.Errorf("UILink(%v) = %q, want %q", c.meta, got, c.want)
		}
	}
	m := withoutUILink(mcp.Meta{"ui": map[string]any{"resourceUri": "ui://a", "visibility": []any{"app"}}, "ui/resourceUri": "ui://a", "x": 1})
	if UILink(&mcp.Tool{Meta: m}) != "" || m["x"] != 1 || m["ui"].(map[string]any)["visibility"] == nil {
		t.Fatalf("withoutUILink: %v", m)
	}
}

// A tool without a ui link hashes as before MCP Apps (pinned surfaces stay
// valid); a tool's ui link is part of its surface.
func TestToolHashUILink(t *testing.T) {
	base := &mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}}
	h0, _ := ToolHash(base)
	linked := *base
	linked.Meta = mcp.Meta{"ui": map[string]any{"resourceUri": "ui://a"}}
	h1, _ := ToolHash(&linked)
	other := *base
	other.Meta = mcp.Meta{"ui": map[string]any{"resourceUri": "ui://b"}}
	h2, _ := ToolHash(&other)
	unrelated := *base
	unrelated.Meta = mcp.Meta{"progressToken": 1}
	h3, _ := ToolHash(&unrelated)
	if h0 == h1 || h1 == h2 || h0 != h3 {
		t.Fatalf("hashes %s %s %s %s", h0, h1, h2, h3)
	}
}
