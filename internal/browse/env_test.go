package browse

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/trust"
)

// clock is the settable clock of a fixture's repositories and cache.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fixture is two real TUF catalogs, made with the marketplace package and
// signed with real keys, added to an operator's cache:
//
//   - acme: acme-notes (a bundled stdio server, three versions, one
//     yanked, curator-listed tools with annotations, a README with
//     hostile parts, an icon), acme-cloud (two remote servers, official),
//     acme-fmt (a native tool), everything (npx- and uvx-fetched
//     servers), old-sync (every version revoked) and hostile (text made to
//     break out of HTML);
//   - beta: its own acme-notes (so the name is in two catalogs), stale.
type fixture struct {
	t        testing.TB
	ctx      context.Context
	dir      string
	clk      *clock
	priv     []byte
	verifier *trust.Verifier
	cache    *marketplace.Cache
	repos    map[string]*repo.Repository
	roots    map[string]string
}

var fixtureStart = time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: context.Background(), dir: t.TempDir(), clk: &clock{t: fixtureStart}, repos: map[string]*repo.Repository{}, roots: map[string]string{}}
	var err error
	if f.priv, err = os.ReadFile("testdata/publisher.key"); err != nil {
		t.Fatal(err)
	}
	pub, err := os.ReadFile("testdata/publisher.pub")
	if err != nil {
		t.Fatal(err)
	}
	s, err := trust.NewKeySigner("acme", pub, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.verifier, err = trust.NewVerifier([]trust.Signer{s}, nil); err != nil {
		t.Fatal(err)
	}
	f.cache = marketplace.OpenCache(filepath.Join(f.dir, "home", "catalogs"), &marketplace.CacheOptions{Now: f.clk.now})
	f.initRepo("acme", repo.Expiries{})
	f.initRepo("beta", repo.Expiries{Timestamp: 2 * time.Hour})

	notes := func(version, readme string) map[string]any {
		return manifest("acme-notes", version, "Search your notes from any MCP client, with full-text search over the Markdown files of your workspace and quick capture of new notes.", map[string]any{
			"mcpServers": map[string]any{"notes": map[string]any{
				"description": "notes index",
				"stdio": map[string]any{"command": "${bundle}/bin/notes-server", "args": []string{"--root", "${workspace}"},
					"env": map[string]any{"NOTES_TOKEN": map[string]any{"fromEnv": "ACME_NOTES_TOKEN"}}},
				"tools": map[string]any{"allow": []string{"search_*", "add_note"}},
			}},
		})
	}
	f.add("acme", notes("1.0.0", ""), "# Acme Notes\n\nold", repo.AddRequest{Tier: catalog.TierVerified, Tags: []string{"notes", "search"}})
	f.clk.advance(24 * time.Hour)
	f.add("acme", notes("1.1.0", ""), "", repo.AddRequest{})
	f.clk.advance(24 * time.Hour)
	f.add("acme", notes("1.2.0", ""), readmeMD, repo.AddRequest{Icon: testIcon(t)})
	f.clk.advance(time.Hour)
	f.add("acme", manifest("acme-cloud", "2.1.0", "Acme's hosted notes service, reached over the network.", map[string]any{
		"mcpServers": map[string]any{
			"cloud": map[string]any{"remote": map[string]any{"transport": "streamable-http", "url": "https://mcp.acme.example/v1",
				"headers": map[string]any{"X-Team": map[string]any{"fromEnv": "ACME_TEAM"}}, "auth": map[string]any{"bearerFromEnv": "ACME_TOKEN"},
				"network": map[string]any{"hosts": []string{"mcp.acme.example"}}}, "tools": map[string]any{"deny": []string{"admin_*"}}},
			"events": map[string]any{"remote": map[string]any{"transport": "sse", "url": "http://127.0.0.1:8931/sse", "network": map[string]any{"hosts": []string{"127.0.0.1"}}}},
		},
	}), "", repo.AddRequest{Tier: catalog.TierOfficial, Tags: []string{"notes", "cloud"}})
	f.clk.advance(time.Hour)
	f.add("acme", manifest("acme-fmt", "0.3.0", "Format and hash files in your workspace.", map[string]any{
		"nativeTools": map[string]any{"fmt": map[string]any{"executable": "${bundle}/bin/fmt-tools",
			"sandbox": map[string]any{"filesystem": map[string]any{"read": []string{"${workspace}"}}, "network": map[string]any{"mode": "none"}}}},
	}), "", repo.AddRequest{Tags: []string{"format"}})
	f.clk.advance(time.Hour)
	f.add("acme", manifest("everything", "2026.8.31", "The MCP reference server, fetched from npm at a pinned version.", map[string]any{
		"mcpServers": map[string]any{
			"everything": map[string]any{"stdio": map[string]any{"command": "npx", "args": []string{"-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"}}},
			"fetch":      map[string]any{"stdio": map[string]any{"command": "uvx", "args": []string{"mcp-server-fetch==2025.4.7"}}},
		},
	}), "", repo.AddRequest{Tier: catalog.TierOfficial, Tags: []string{"reference"}})
	f.clk.advance(time.Hour)
	f.add("acme", manifest("old-sync", "0.9.0", "Syncs notes to a server that no longer exists.", map[string]any{
		"mcpServers": map[string]any{"sync": map[string]any{"remote": map[string]any{"transport": "streamable-http", "url": "https://sync.old.example/mcp", "network": map[string]any{"hosts": []string{"sync.old.example"}}}}},
	}), "", repo.AddRequest{Tags: []string{"notes"}})
	f.clk.advance(time.Hour)
	f.add("acme", manifest("hostile", "1.0.0", `<script>alert("desc")</script> "quotes" & ampersands`, map[string]any{
		"publisher": map[string]any{"name": `<img src=x onerror=alert(1)>`},
		"mcpServers": map[string]any{"x": map[string]any{"stdio": map[string]any{"command": "${bundle}/bin/notes-server",
			"args": []string{`</script><script>alert(1)</script>`, "\u202etxt.exe"}}}},
	}), hostileMD, repo.AddRequest{Tags: []string{"test"}})

	// The curator's edits, published with berth catalog sign's code path:
	// tools with annotations, and statuses.
	f.edit("acme", func(c *catalog.Catalog) {
		yes, no := true, false
		tools := []catalog.Tool{
			{Server: "notes", Name: "search_notes", Title: "Search notes", Description: "Full-text search over the notes in your workspace.", Annotations: &catalog.ToolAnnotations{ReadOnlyHint: &yes}},
			{Server: "notes", Name: "add_note", Description: "Write a new note file.", Annotations: &catalog.ToolAnnotations{ReadOnlyHint: &no, DestructiveHint: &no}},
			{Server: "notes", Name: "search_purge", Description: "Delete every note that matches a query.", Annotations: &catalog.ToolAnnotations{DestructiveHint: &yes}},
		}
		p := c.Plugin("acme-notes")
		p.Version("1.2.0").Summary.Tools = tools
		p.Version("1.1.0").Summary.Tools = tools[:2]
		h := c.Plugin("hostile")
		h.Version("1.0.0").Summary.Tools = []catalog.Tool{{Server: "x", Name: "t", Description: `<b>bold</b></td></tr></table><script>alert(2)</script>`}}
	})
	f.status("acme", "acme-notes", "1.0.0", catalog.StatusYanked, "it lost notes with a colon in their name")
	f.status("acme", "old-sync", "0.9.0", catalog.StatusRevoked, "the sync server was taken over; do not use")

	f.add("beta", notes("0.9.0", ""), "# beta's notes\n", repo.AddRequest{Tags: []string{"notes"}})
	f.addCatalog("acme")
	f.addCatalog("beta")
	// Three hours on, beta's timestamp (2h) has expired: it is stale.
	f.clk.advance(3 * time.Hour)
	return f
}

const readmeMD = `# Acme Notes

Search your notes from any MCP client. See the [guide](https://acme.example/notes/guide) or
[this](javascript:alert(document.cookie)) link.

![diagram](https://cdn.acme.example/diagram.png)

<script>alert("readme")</script>
<iframe src="https://evil.example"></iframe>

| command | what |
|---|---|
| ` + "`search_notes`" + ` | searches |

` + "```sh\nberth install acme-notes@^1.2\n```\n"

const hostileMD = `<img src=x onerror=alert(1)> [x](data:text/html,<script>alert(1)</script>) <a href="https://evil.example" onclick="alert(1)">click</a>
<style>body{display:none}</style>
`

func manifest(name, version, desc string, extra map[string]any) map[string]any {
	m := map[string]any{"manifestVersion": 1, "name": name, "version": version, "description": desc,
		"publisher": map[string]any{"name": "Acme", "url": "https://acme.example"}, "license": "MIT"}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func testIcon(t testing.TB) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 64, 64))
	for y := range 64 {
		for x := range 64 {
			c := color.NRGBA{R: 20, G: 120, B: 90, A: 255}
			if (x-32)*(x-32)+(y-32)*(y-32) < 20*20 {
				c = color.NRGBA{R: 250, G: 250, B: 240, A: 255}
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func (f *fixture) initRepo(name string, exp repo.Expiries) {
	dir := filepath.Join(f.dir, "repo-"+name)
	keys := filepath.Join(f.dir, "keys-"+name)
	res, err := repo.Init(f.ctx, dir, keys, &repo.Options{Name: name, Expiries: exp, Now: f.clk.now})
	if err != nil {
		f.t.Fatal(err)
	}
	r, err := repo.Open(dir, keys, &repo.Options{Now: f.clk.now})
	if err != nil {
		f.t.Fatal(err)
	}
	f.repos[name], f.roots[name] = r, res.RootSHA256
}

// bundleDir is where add wrote a bundle.
func (f *fixture) bundleDir(catName, name, version string) string {
	return filepath.Join(f.dir, "bundles", catName, name+"-"+version)
}

// add writes a bundle with manifest m (and readme as README.md), signs it
// with the publisher's key and publishes it in catalog.
func (f *fixture) add(catName string, m map[string]any, readme string, req repo.AddRequest) {
	f.t.Helper()
	dir := filepath.Join(f.dir, "bundles", catName, fmt.Sprintf("%s-%s", m["name"], m["version"]))
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		f.t.Fatal(err)
	}
	data, _ := json.MarshalIndent(m, "", "  ")
	write := func(p string, data []byte, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, p), data, mode); err != nil {
			f.t.Fatal(err)
		}
	}
	write("berth.json", data, 0o644)
	write("bin/notes-server", []byte("#!/bin/sh\necho notes\n"), 0o755)
	write("bin/fmt-tools", []byte("#!/bin/sh\necho fmt\n"), 0o755)
	if readme != "" {
		write("README.md", []byte(readme), 0o644)
	}
	b, err := bundle.Open(f.ctx, dir, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	sig, err := trust.Sign(f.ctx, b.Listing().Bytes(), f.priv)
	b.Close()
	if err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(dir+".sigstore.json", sig, 0o644); err != nil {
		f.t.Fatal(err)
	}
	req.Source, req.Signature, req.Verifier = dir, sig, f.verifier
	if _, err := f.repos[catName].Add(f.ctx, req); err != nil {
		f.t.Fatal(err)
	}
}

// edit changes the working catalog.json and publishes it (berth catalog
// sign).
func (f *fixture) edit(catName string, fn func(*catalog.Catalog)) {
	f.t.Helper()
	r := f.repos[catName]
	path := filepath.Join(r.Dir(), "catalog.json")
	data, err := os.ReadFile(path)
	if err != nil {
		f.t.Fatal(err)
	}
	c := &catalog.Catalog{}
	if err := json.Unmarshal(data, c); err != nil {
		f.t.Fatal(err)
	}
	fn(c)
	if err := os.WriteFile(path, c.Marshal(), 0o644); err != nil {
		f.t.Fatal(err)
	}
	if _, err := r.Sign(f.ctx); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) status(catName, name, version string, st catalog.Status, reason string) {
	f.t.Helper()
	if _, err := f.repos[catName].SetStatus(f.ctx, name, version, st, reason, ""); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) addCatalog(name string) {
	f.t.Helper()
	src, err := marketplace.ParseSource(f.repos[name].Dir())
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.cache.Add(f.ctx, name, src, marketplace.RootPin{SHA256: f.roots[name]}); err != nil {
		f.t.Fatal(err)
	}
}

// site is the fixture's page; resolution runs on the fixture's clock.
func (f *fixture) site() *Site {
	return New(f.cache, &Options{Resolve: &marketplace.ResolveOptions{Now: f.clk.now()}})
}
