package importer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/runtimefetch"
)

// unpinnedPlugin writes a Claude Code plugin whose servers fetch an npm
// package by dist-tag, a PyPI package with no version and an image by tag.
func unpinnedPlugin(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "plugin")
	files := map[string]string{
		".claude-plugin/plugin.json": `{"name": "acme-notes", "version": "1.0.0", "description": "Notes"}`,
		".mcp.json": `{"mcpServers": {
		  "notes": {"command": "npx", "args": ["-y", "@acme/notes@latest", "--stdio"]},
		  "fetch": {"command": "uvx", "args": ["mcp-server-fetch"]},
		  "box": {"command": "docker", "args": ["run", "-i", "--rm", "ghcr.io/acme/box:v2"]}
		}}`,
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var boxDigest = "sha256:" + strings.Repeat("b", 64)

// fakePin resolves as a registry that has @acme/notes 1.4.2, mcp-server-fetch
// 2025.4.7 and ghcr.io/acme/box:v2 at boxDigest; fail makes it fail.
func fakePin(fail bool) func(context.Context, *runtimefetch.Unpinned) (*runtimefetch.Pin, error) {
	return func(_ context.Context, u *runtimefetch.Unpinned) (*runtimefetch.Pin, error) {
		if fail {
			return nil, fmt.Errorf("cannot pin %q (%s): the registry's dist-tag \"latest\" points at 9.9.9, a version it does not list", u.Spec, u.Tool)
		}
		res := map[string]string{"@acme/notes": "1.4.2", "mcp-server-fetch": "2025.4.7", "ghcr.io/acme/box": boxDigest}[u.Name]
		return &runtimefetch.Pin{Requested: u.Requested, Resolved: res, Spec: u.Pinned(res), Registry: "stub"}, nil
	}
}

func TestPinOnImport(t *testing.T) {
	ctx := context.Background()
	src := unpinnedPlugin(t)

	// Without --pin: refused, and the refusal names --pin.
	_, err := bundle.Open(ctx, src, nil)
	var ie *bundle.InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("unpinned plugin: %v", err)
	}
	rules := map[string]int{}
	for _, p := range ie.Problems {
		rules[p.Rule]++
		if (p.Rule == bundle.RuleRuntimeFetchUnpinned || p.Rule == bundle.RuleRuntimeFetchImageDigest) && !strings.Contains(p.Message, "berth import --pin SOURCE") {
			t.Errorf("the refusal does not offer --pin: %s", p.Message)
		}
	}
	if rules[bundle.RuleRuntimeFetchUnpinned] != 2 || rules[bundle.RuleRuntimeFetchImageDigest] != 1 {
		t.Fatalf("problems %v", ie.Problems)
	}

	// With --pin: an ordinary pinned bundle that records what was asked.
	b, err := bundle.Open(ctx, src, &bundle.Options{Pin: fakePin(false)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	m := b.Manifest
	if got := m.MCPServers["notes"].Stdio.Args; strings.Join(got, " ") != "-y @acme/notes@1.4.2 --stdio" {
		t.Errorf("notes args %q", got)
	}
	if got := m.MCPServers["fetch"].Stdio.Args; strings.Join(got, " ") != "mcp-server-fetch==2025.4.7" {
		t.Errorf("fetch args %q", got)
	}
	if got := m.MCPServers["box"].Stdio.Args; got[3] != "ghcr.io/acme/box:v2@"+boxDigest {
		t.Errorf("box args %q", got)
	}
	want := []bundle.PinnedFetch{
		{Server: "box", Package: "ghcr.io/acme/box", Requested: "v2", Resolved: boxDigest},
		{Server: "fetch", Package: "mcp-server-fetch", Resolved: "2025.4.7"},
		{Server: "notes", Package: "@acme/notes", Requested: "latest", Resolved: "1.4.2"},
	}
	if fmt.Sprint(m.ImportedFrom.Pinned) != fmt.Sprint(want) {
		t.Errorf("pinned %+v", m.ImportedFrom.Pinned)
	}
	if len(b.Import.Pinned) != 3 || b.Import.Pinned[2].At.IsZero() || b.Import.Pinned[2].Tool != "npx" {
		t.Errorf("import pins %+v", b.Import.Pinned)
	}
	data, err := os.ReadFile(filepath.Join(b.Dir, bundle.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"requested": "latest",`) || strings.Contains(string(data), "2026") {
		t.Errorf("berth.json:\n%s", data)
	}

	// The same resolution gives the same digest, and so does the bundle
	// berth import writes, read back as a berth bundle.
	b2, err := bundle.Open(ctx, src, &bundle.Options{Pin: fakePin(false)})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if b2.Digest != b.Digest {
		t.Errorf("two imports: %s and %s", b.Digest, b2.Digest)
	}
	out := filepath.Join(t.TempDir(), "out")
	if err := b.WriteTree(ctx, out); err != nil {
		t.Fatal(err)
	}
	w, err := bundle.Open(ctx, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if w.Digest != b.Digest || len(w.Manifest.ImportedFrom.Pinned) != 3 {
		t.Errorf("written: %s, %+v", w.Digest, w.Manifest.ImportedFrom)
	}

	// A registry that lies: the fetch is refused with the reason, at the
	// source's server, and nothing is pinned.
	_, err = bundle.Open(ctx, src, &bundle.Options{Pin: fakePin(true)})
	if !errors.As(err, &ie) {
		t.Fatalf("failing pin: %v", err)
	}
	n := 0
	for _, p := range ie.Problems {
		if p.Rule == bundle.RuleRuntimeFetchPin {
			n++
			if !strings.Contains(p.Message, "a version it does not list") || !strings.HasPrefix(p.Path, ".mcp.json") {
				t.Errorf("runtime-fetch-pin problem %s: %s", p.Path, p.Message)
			}
		}
		if p.Rule == bundle.RuleRuntimeFetchUnpinned {
			t.Errorf("the unpinned refusal is reported beside the failed pin: %s", p.Message)
		}
	}
	if n != 3 {
		t.Errorf("problems %v", ie.Problems)
	}
}

// TestPinnedRecordIsChecked edits the importedFrom.pinned of a written
// bundle: a record that does not match what the command runs is refused.
func TestPinnedRecordIsChecked(t *testing.T) {
	ctx := context.Background()
	b, err := bundle.Open(ctx, unpinnedPlugin(t), &bundle.Options{Pin: fakePin(false)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, c := range []struct{ from, to, want string }{
		{`"resolved": "1.4.2"`, `"resolved": "1.4.3"`, `runs "@acme/notes@1.4.2", not "@acme/notes@1.4.3"`},
		{`"requested": "latest"`, `"requested": "git+https://x"`, "not a request berth pins"},
		{`"server": "notes"`, `"server": "zzz"`, `"zzz", which is not a stdio server`},
		{`"server": "box"`, `"server": "fetch"`, "sorted by server"},
		{`"resolved": "2025.4.7"`, `"resolved": "2025.4.7", "at": "2026-12-02"`, "unknown"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		if err := b.WriteTree(ctx, out); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(out, bundle.ManifestFile)
		data, _ := os.ReadFile(p)
		if !strings.Contains(string(data), c.from) {
			t.Fatalf("berth.json has no %s", c.from)
		}
		os.WriteFile(p, []byte(strings.Replace(string(data), c.from, c.to, 1)), 0o644)
		_, err := bundle.Open(ctx, out, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s → %s: %v, want %q", c.from, c.to, err, c.want)
		}
	}
}

// TestPinRegistryEntry: a server.json package by "latest", by range and an
// image by tag are refused with their registry rules, which offer --pin;
// with a pin they become an ordinary pinned bundle. A version berth cannot
// pin (a URL) stays refused either way.
func TestPinRegistryEntry(t *testing.T) {
	ctx := context.Background()
	write := func(pkgs string) string {
		p := filepath.Join(t.TempDir(), "server.json")
		doc := `{"$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
		  "name": "io.github.acme/notes", "description": "Notes", "version": "1.0.0", "packages": [` + pkgs + `]}`
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	src := write(`{"registryType": "npm", "identifier": "@acme/notes", "version": "latest", "transport": {"type": "stdio"}},
	  {"registryType": "pypi", "identifier": "mcp-server-fetch", "version": ">=2025", "transport": {"type": "stdio"}},
	  {"registryType": "oci", "identifier": "ghcr.io/acme/box:v2", "transport": {"type": "stdio"}}`)
	_, err := bundle.Open(ctx, src, nil)
	var ie *bundle.InvalidError
	if !errors.As(err, &ie) || len(ie.Problems) != 3 {
		t.Fatalf("unpinned entry: %v", err)
	}
	for _, p := range ie.Problems {
		if (p.Rule != bundle.RuleRegistryUnpinned && p.Rule != bundle.RuleRegistryOCIDigest) || !strings.Contains(p.Message, "berth import --pin SOURCE") {
			t.Errorf("%s %s: %s", p.Path, p.Rule, p.Message)
		}
	}
	b, err := bundle.Open(ctx, src, &bundle.Options{Pin: fakePin(false)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := len(b.Manifest.ImportedFrom.Pinned); got != 3 {
		t.Fatalf("pinned %+v", b.Manifest.ImportedFrom.Pinned)
	}
	for _, s := range b.Manifest.MCPServers {
		if f, err := runtimefetch.Read(s.Stdio.Command, s.Stdio.Args); err != nil || f == nil {
			t.Errorf("%q: %v", s.Stdio.Args, err)
		}
	}
	// A failed pin leaves the registry's refusal and says why.
	_, err = bundle.Open(ctx, src, &bundle.Options{Pin: fakePin(true)})
	if !errors.As(err, &ie) {
		t.Fatal(err)
	}
	rules := map[string]int{}
	for _, p := range ie.Problems {
		rules[p.Rule]++
	}
	if rules[bundle.RuleRuntimeFetchPin] != 3 || rules[bundle.RuleRegistryUnpinned] != 2 || rules[bundle.RuleRegistryOCIDigest] != 1 {
		t.Errorf("problems %v", ie.Problems)
	}
	// Not a request berth pins: refused, without the offer, with or
	// without a pin.
	src = write(`{"registryType": "npm", "identifier": "@acme/notes", "version": "github:acme/notes", "transport": {"type": "stdio"}}`)
	for _, o := range []*bundle.Options{nil, {Pin: fakePin(false)}} {
		_, err = bundle.Open(ctx, src, o)
		if !errors.As(err, &ie) || len(ie.Problems) != 1 || ie.Problems[0].Rule != bundle.RuleRegistryUnpinned || strings.Contains(ie.Problems[0].Message, "--pin") {
			t.Errorf("unpinnable: %v", err)
		}
	}
}
