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
		d := `{"$schema": "` + RegistrySchema + `", "name": "io.github.acme/tiny", "description": "d", "version": "1.0.0", "packages": [` + pkgs + `]`
		if remotes {
			d += `, "remotes": [{"type": "sse", "url": "https://example.com/sse"}]`
		}
		return d + "}"
	}
	cases := []struct {
		name, doc string
		// err: RegistryMCPBPackage refuses with this rule; read: it
		// returns nil (not one MCP Bundle) and berth's reading of the
		// server.json refuses it with this rule.
		err, read string
		want      bool
	}{
		{name: "one bundle", doc: doc(pkg("https://example.com/x.mcpb", sum), false), want: true},
		{name: "loopback http", doc: doc(pkg("http://127.0.0.1:8080/x.mcpb", sum), false), want: true},
		{name: "no $schema, several versions fit", doc: strings.Replace(doc(pkg("https://example.com/x.mcpb", sum), false), `"$schema": "`+RegistrySchema+`", `, ``, 1), read: "registry-schema-ambiguous"},
		{name: "no $schema, only 2025-07-09 fits", doc: `{"name": "io.github.acme/tiny", "description": "d", "version": "1.0.0", "packages": [{"registry_type": "mcpb", "identifier": "https://example.com/x.mcpb", "file_sha256": "` + sum + `", "transport": {"type": "stdio"}}]}`, want: true},
		{name: "2025-07-09 spelling", doc: `{"$schema": "` + registrySchemaURL("2025-07-09") + `", "name": "io.github.acme/tiny", "description": "d", "version": "1.0.0", "packages": [{"registry_type": "mcpb", "identifier": "https://example.com/x.mcpb", "file_sha256": "` + sum + `", "transport": {"type": "stdio"}}]}`, want: true},
		{name: "beside npm", doc: doc(pkg("https://example.com/x.mcpb", sum)+`, {"registryType": "npm", "identifier": "x", "version": "1.0.0", "transport": {"type": "stdio"}}`, false)},
		{name: "beside a remote", doc: doc(pkg("https://example.com/x.mcpb", sum), true)},
		{name: "no packages", doc: `{"$schema": "` + RegistrySchema + `", "name": "io.github.acme/tiny", "description": "d", "version": "1.0.0"}`},
		{name: "not json", doc: `{`, read: "registry-syntax"},
		{name: "two bundles", doc: doc(pkg("https://example.com/x.mcpb", sum)+", "+pkg("https://example.com/y.mcpb", sum), false), read: "registry-mcpb-choice"},
		{name: "no digest", doc: strings.Replace(doc(pkg("https://example.com/x.mcpb", ""), false), `, "fileSha256": ""`, ``, 1), read: "registry-mcpb-digest"},
		{name: "upper-case digest", doc: doc(pkg("https://example.com/x.mcpb", strings.ToUpper(sum)), false), read: "registry-wrong-type"},
		{name: "http transport", doc: strings.Replace(doc(pkg("https://example.com/x.mcpb", sum), false), `"stdio"`, `"streamable-http"`, 1), read: "registry-transport"},
		{name: "unknown $schema", doc: strings.Replace(doc(pkg("https://example.com/x.mcpb", sum), false), "2025-12-11", "2099-01-01", 1), read: "registry-schema"},
		{name: "camelCase under 2025-07-09", doc: strings.Replace(doc(pkg("https://example.com/x.mcpb", sum), false), "2025-12-11", "2025-07-09", 1), read: "registry-unknown-field"},
		{name: "snake_case under 2025-12-11", doc: strings.Replace(strings.Replace(doc(pkg("https://example.com/x.mcpb", sum), false), `"registryType"`, `"registry_type"`, 1), `"fileSha256"`, `"file_sha256"`, 1), read: "registry-unknown-field"},
		{name: "registryType in another case", doc: strings.Replace(doc(pkg("https://example.com/x.mcpb", sum), false), `"registryType"`, `"REGISTRYTYPE"`, 1), read: "registry-required-field"},
		{name: "fileSha256 in another case", doc: strings.Replace(doc(pkg("https://example.com/x.mcpb", sum), false), `"fileSha256"`, `"FILESHA256"`, 1), read: "registry-mcpb-digest"},
		{name: "plain http", doc: doc(pkg("http://example.com/x.mcpb", sum), false), err: "registry-package-source"},
		{name: "credentials", doc: doc(pkg("https://u:p@example.com/x.mcpb", sum), false), err: "registry-package-source"},
		{name: "file", doc: doc(pkg("file:///etc/passwd", sum), false), err: "registry-package-source"},
		{name: "relative", doc: doc(pkg("x.mcpb", sum), false), err: "registry-package-source"},
	}
	for _, tc := range cases {
		p, err := RegistryMCPBPackage([]byte(tc.doc))
		var me *MCPBPackageError
		switch {
		case tc.err != "":
			if !errors.As(err, &me) || me.Rule != tc.err || p != nil {
				t.Errorf("%s: %v, %v; want the rule %s", tc.name, p, err, tc.err)
			}
		case err != nil || (p != nil) != tc.want:
			t.Errorf("%s: %+v, %v; want a bundle: %v", tc.name, p, err, tc.want)
		case p != nil && (p.SHA256 != sum || p.Name != "io.github.acme/tiny" || p.URL == ""):
			t.Errorf("%s: %+v", tc.name, p)
		}
		if tc.read != "" {
			got := rules(convertRegistryData([]byte(tc.doc)))
			if len(got) == 0 || !strings.HasPrefix(got[0], tc.read+"\t") {
				t.Errorf("%s: berth's reading of the server.json reports %v; want the rule %s first", tc.name, got, tc.read)
			}
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
		if got := rules(convertRegistryData(data)); len(got) > 0 {
			t.Fatalf("would download %+v from a server.json berth's reading refuses: %v", p, got)
		}
		u, err := url.Parse(p.URL)
		if err != nil || u.User != nil || (u.Scheme != "https" && u.Scheme != "http") || !sha256HexRe.MatchString(p.SHA256) {
			t.Fatalf("would download %+v", p)
		}
	})
}
