package builtin

import (
	"context"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/runtimefetch"
)

// TestEmbeddedEntries opens every embedded bundle strictly and checks it
// against its entry: the digest of the embedded bytes, the name and
// version, and the one npm package it runs, at exactly the entry's
// version. A hand edit of a bundle or of catalog.json fails here.
func TestEmbeddedEntries(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Plugins) == 0 {
		t.Fatal("the built-in catalog lists no plugin")
	}
	if got := c.Source(); got != "builtin (berth "+bundle.BerthVersion+", "+c.Generated+")" {
		t.Errorf("Source() = %q", got)
	}
	dirs, err := embedded.ReadDir("bundles")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != len(c.Plugins) {
		t.Errorf("%d bundle directories for %d entries", len(dirs), len(c.Plugins))
	}
	for _, e := range c.Plugins {
		t.Run(e.Name, func(t *testing.T) {
			dir := t.TempDir()
			if err := WriteBundle(e.Name, dir); err != nil {
				t.Fatal(err)
			}
			b, err := bundle.Open(context.Background(), dir, nil)
			if err != nil {
				t.Fatalf("the embedded bundle of %s does not validate: %v", e.Name, err)
			}
			defer b.Close()
			if b.Digest != e.Digest {
				t.Errorf("digest of the embedded bytes %s, catalog.json says %s (run make builtin-catalog)", b.Digest, e.Digest)
			}
			m := b.Manifest
			if m.Name != e.Name || m.Version != e.Version {
				t.Errorf("the bundle is %s %s, the entry %s %s", m.Name, m.Version, e.Name, e.Version)
			}
			if len(m.MCPServers) != 1 || len(m.NativeTools) != 0 {
				t.Fatalf("the bundle has %d servers and %d native tools; a built-in entry runs one fetched server", len(m.MCPServers), len(m.NativeTools))
			}
			for name, srv := range m.MCPServers {
				if srv.Stdio == nil {
					t.Fatalf("server %s is not a stdio server", name)
				}
				f, err := runtimefetch.Read(srv.Stdio.Command, srv.Stdio.Args)
				if err != nil || f == nil {
					t.Fatalf("server %s fetches nothing berth reads: %v", name, err)
				}
				if f.Ecosystem != runtimefetch.EcosystemNPM || f.Package != e.Package+"@"+e.Version {
					t.Errorf("server %s fetches %s %s, the entry pins %s@%s", name, f.Ecosystem, f.Package, e.Package, e.Version)
				}
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	good := `{"builtinVersion":1,"generated":"2026-12-03","registry":"https://registry.npmjs.org/","plugins":[{"name":"fs","description":"d","homepage":"h","tags":[],"version":"1.0.0","package":"p","integrity":"sha512-` + strings.Repeat("A", 86) + `==","released":"2026-01-01T00:00:00Z","digest":"sha256:` + strings.Repeat("a", 64) + `"}]}`
	if _, err := Parse([]byte(good)); err != nil {
		t.Fatalf("good: %v", err)
	}
	for name, bad := range map[string]string{
		"unknown field": strings.Replace(good, `"registry"`, `"extra":1,"registry"`, 1),
		"version":       strings.Replace(good, `"builtinVersion":1`, `"builtinVersion":2`, 1),
		"date":          strings.Replace(good, `2026-12-03`, `yesterday`, 1),
		"digest":        strings.Replace(good, `"sha256:`, `"sha1:`, 1),
		"integrity":     strings.Replace(good, `"sha512-`, `"sha1-`, 1),
		"name":          strings.Replace(good, `"name":"fs"`, `"name":"../fs"`, 1),
		"twice":         strings.Replace(good, `]}`, `,{"name":"fs","description":"d","homepage":"h","tags":[],"version":"1.0.0","package":"p","integrity":"sha512-`+strings.Repeat("A", 86)+`==","released":"2026-01-01T00:00:00Z","digest":"sha256:`+strings.Repeat("a", 64)+`"}]}`, 1),
		"trailing":      good + "{}",
		"no released":   strings.Replace(good, `"released":"2026-01-01T00:00:00Z",`, ``, 1),
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := Files("../x"); err == nil {
		t.Error("Files accepted a path")
	}
}

func FuzzParse(f *testing.F) {
	data, _ := embedded.ReadFile("catalog.json")
	f.Add(data)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		for _, e := range c.Plugins {
			if !bundle.IsValidName(e.Name) {
				t.Fatalf("accepted the name %q", e.Name)
			}
		}
	})
}
