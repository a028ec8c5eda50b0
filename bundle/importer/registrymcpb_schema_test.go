package importer

import (
	"strings"
	"testing"
)

// RegistryMCPBPackage decides that a registry entry is an MCP Bundle to
// download and install from berth's version-aware reading of the
// server.json, so a document that reading refuses (an unknown $schema, a
// field of another version, a field name in another case) is never taken
// for one: it is refused as the server.json it is, before any download.
// And a 2025-07-09 entry, which spells the fields registry_type and
// file_sha256, is one. (From the attack review of issue 20, finding 1.)
func TestRegistryMCPBPackageReadsSchemaVersion(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	pkg := `{"registryType": "mcpb", "identifier": "https://example.com/x.mcpb", "fileSha256": "` + sum + `", "transport": {"type": "stdio"}}`
	cases := map[string]string{
		// camelCase registryType/fileSha256 under the snake_case 2025-07-09 label
		"camelCase under 2025-07-09": `{"$schema": "` + registrySchemaURL("2025-07-09") + `", "name": "io.github.acme/tiny", "description": "d", "version": "1.0.0", "packages": [` + pkg + `]}`,
		// a schema berth does not know
		"unknown schema": `{"$schema": "https://static.modelcontextprotocol.io/schemas/2099-01-01/server.schema.json", "name": "io.github.acme/tiny", "description": "d", "version": "1.0.0", "packages": [` + pkg + `]}`,
		// a field name in another case, which the importer does not read as registryType
		"RegistryType in another case": `{"$schema": "` + registrySchemaURL("2025-10-17") + `", "name": "io.github.acme/tiny", "description": "d", "version": "1.0.0", "packages": [` + strings.Replace(pkg, `"registryType"`, `"REGISTRYTYPE"`, 1) + `]}`,
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			c := convertDoc(t, doc)
			if len(c.ps.list) == 0 {
				t.Fatalf("the importer accepts this server.json; the case tests nothing")
			}
			p, err := RegistryMCPBPackage([]byte(doc))
			if p != nil || err != nil {
				t.Errorf("the importer refuses this server.json (%v), yet RegistryMCPBPackage answers %+v, %v (want nil, nil: build the server.json, which is refused)", rules(c), p, err)
			}
		})
	}
	snake := `{"$schema": "` + registrySchemaURL("2025-07-09") + `", "name": "io.github.acme/tiny", "description": "d", "version": "1.0.0", "packages": [{"registry_type": "mcpb", "identifier": "https://example.com/x.mcpb", "file_sha256": "` + sum + `", "transport": {"type": "stdio"}}]}`
	if c := convertDoc(t, snake); len(c.ps.list) > 0 {
		t.Fatalf("the importer refuses the 2025-07-09 entry: %v", rules(c))
	}
	p, err := RegistryMCPBPackage([]byte(snake))
	if err != nil || p == nil || p.URL != "https://example.com/x.mcpb" || p.SHA256 != sum || p.Name != "io.github.acme/tiny" {
		t.Errorf("a 2025-07-09 entry with registry_type mcpb and file_sha256: %+v, %v; want the MCP Bundle https://example.com/x.mcpb", p, err)
	}
}
