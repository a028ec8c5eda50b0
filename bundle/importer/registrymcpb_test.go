package importer

import (
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
)

func TestRegistryMCPBPackage(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	pkg := func(id, sha string) string {
		return `{"registryType": "mcpb", "identifier": "` + id + `", "fileSha256": "` + sha + `", "transport": {"type": "stdio"}}`
	}
	doc := func(pkgs string, remotes bool) string {
		d := `{"name": "io.github.acme/tiny", "packages": [` + pkgs + `]`
		if remotes {
			d += `, "remotes": [{"type": "sse", "url": "https://example.com/sse"}]`
		}
		return d + "}"
	}
	cases := []struct {
		name, doc, rule string
		want            bool
	}{
		{"one bundle", doc(pkg("https://example.com/x.mcpb", sum), false), "", true},
		{"loopback http", doc(pkg("http://127.0.0.1:8080/x.mcpb", sum), false), "", true},
		{"beside npm", doc(pkg("https://example.com/x.mcpb", sum)+`, {"registryType": "npm", "identifier": "x", "version": "1.0.0"}`, false), "", false},
		{"beside a remote", doc(pkg("https://example.com/x.mcpb", sum), true), "", false},
		{"no packages", `{"name": "io.github.acme/tiny"}`, "", false},
		{"not json", `{`, "", false},
		{"two bundles", doc(pkg("https://example.com/x.mcpb", sum)+", "+pkg("https://example.com/y.mcpb", sum), false), "registry-mcpb-choice", false},
		{"no digest", doc(pkg("https://example.com/x.mcpb", ""), false), "registry-mcpb-digest", false},
		{"upper-case digest", doc(pkg("https://example.com/x.mcpb", strings.ToUpper(sum)), false), "registry-mcpb-digest", false},
		{"plain http", doc(pkg("http://example.com/x.mcpb", sum), false), "registry-package-source", false},
		{"credentials", doc(pkg("https://u:p@example.com/x.mcpb", sum), false), "registry-package-source", false},
		{"file", doc(pkg("file:///etc/passwd", sum), false), "registry-package-source", false},
		{"relative", doc(pkg("x.mcpb", sum), false), "registry-package-source", false},
		{"http transport", strings.Replace(doc(pkg("https://example.com/x.mcpb", sum), false), `"stdio"`, `"streamable-http"`, 1), "registry-transport", false},
	}
	for _, tc := range cases {
		p, err := RegistryMCPBPackage([]byte(tc.doc))
		var me *MCPBPackageError
		switch {
		case tc.rule != "":
			if !errors.As(err, &me) || me.Rule != tc.rule || p != nil {
				t.Errorf("%s: %v, %v; want the rule %s", tc.name, p, err, tc.rule)
			}
		case err != nil || (p != nil) != tc.want:
			t.Errorf("%s: %+v, %v; want a bundle: %v", tc.name, p, err, tc.want)
		case p != nil && (p.SHA256 != sum || p.Name != "io.github.acme/tiny"):
			t.Errorf("%s: %+v", tc.name, p)
		}
	}
}

// FuzzRegistryMCPBPackage: for any server.json, an MCP Bundle berth would
// download is named by an https URL (or http on loopback) without
// credentials, with a 64-hex digest; every refusal names its rule.
func FuzzRegistryMCPBPackage(f *testing.F) {
	if data, err := os.ReadFile("../../testdata/import/bad/registry-mcpb-choice.json"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"name": "a.b/c", "packages": [{"registryType": "mcpb", "identifier": "https://example.com/x.mcpb", "fileSha256": "` + strings.Repeat("0", 64) + `"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := RegistryMCPBPackage(data)
		if err != nil {
			var me *MCPBPackageError
			if !errors.As(err, &me) || me.Rule == "" || p != nil {
				t.Fatalf("%v %v", p, err)
			}
			return
		}
		if p == nil {
			return
		}
		u, err := url.Parse(p.URL)
		if err != nil || u.User != nil || (u.Scheme != "https" && u.Scheme != "http") || !sha256HexRe.MatchString(p.SHA256) {
			t.Fatalf("would download %+v", p)
		}
	})
}
