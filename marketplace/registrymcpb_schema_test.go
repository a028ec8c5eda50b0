package marketplace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/importer"
	"github.com/berth-mcp/berth/store"
)

// snakeMCPBDoc is an entry of server.json 2025-07-09 (snake_case field
// names) whose only package is one MCP Bundle.
func snakeMCPBDoc(name, url, sha string) string {
	return strings.NewReplacer(importer.RegistrySchema, "https://static.modelcontextprotocol.io/schemas/2025-07-09/server.schema.json",
		`"registryType"`, `"registry_type"`, `"fileSha256"`, `"file_sha256"`).Replace(mcpbDoc(name, url, sha))
}

// A 2025-07-09 entry spells its package registry_type and file_sha256:
// it is one MCP Bundle, downloaded, checked and shown as the
// 2025-12-11 spelling is.
func TestRegistryMCPB20250709(t *testing.T) {
	data, err := os.ReadFile(tinyMCPB)
	if err != nil {
		t.Fatal(err)
	}
	reg := newMCPBRegistry(t, map[string][]byte{"tiny.mcpb": data}, snakeMCPBDoc("io.github.acme/tiny", "{{ORIGIN}}/files/tiny.mcpb", sha256Hex(data)))
	c := newRegistryCache(t, nil)
	addRegistry(t, c, reg.srv.URL)
	sh, err := c.ShowUnsigned(context.Background(), "reg", "io.github.acme/tiny", "", nil, &bundle.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if sh.MCPB == nil || sh.MCPB.Name != "tiny-tools" || sh.MCPB.SHA256 != sha256Hex(data) || reg.hits.Load() != 1 {
		t.Errorf("show: %+v (mcpb %+v), %d downloads; want the MCP Bundle tiny-tools", sh, sh.MCPB, reg.hits.Load())
	}
}

// An entry that names itself an MCP Bundle in a way berth's reading of
// the server.json refuses (fields of another schema version than its
// $schema, a field name in another case) is refused as that server.json,
// with the reading's rule, and nothing is downloaded.
func TestRegistryMCPBRefusedBeforeDownload(t *testing.T) {
	data, err := os.ReadFile(tinyMCPB)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256Hex(data)
	files := map[string][]byte{"tiny.mcpb": data}
	ctx := context.Background()
	cases := []struct{ name, doc, want string }{
		{"camelCase under 2025-07-09", strings.Replace(mcpbDoc("io.github.acme/tiny", "{{ORIGIN}}/files/tiny.mcpb", sum), "2025-12-11", "2025-07-09", 1), "[registry-unknown-field]"},
		{"snake_case under 2025-12-11", strings.Replace(snakeMCPBDoc("io.github.acme/tiny", "{{ORIGIN}}/files/tiny.mcpb", sum), "2025-07-09", "2025-12-11", 1), "[registry-unknown-field]"},
		{"registryType in another case", strings.Replace(mcpbDoc("io.github.acme/tiny", "{{ORIGIN}}/files/tiny.mcpb", sum), `"registryType"`, `"REGISTRYTYPE"`, 1), "[registry-required-field]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := newMCPBRegistry(t, files, tc.doc)
			c := newRegistryCache(t, nil)
			addRegistry(t, c, reg.srv.URL)
			bopts := &bundle.Options{TempDir: t.TempDir()}
			if _, err := c.ShowUnsigned(ctx, "reg", "io.github.acme/tiny", "", nil, bopts); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("show: %v, want %q", err, tc.want)
			}
			res, err := c.Search(Query{Text: "tiny"}, nil)
			if err != nil || len(res.Results) != 1 || !strings.Contains(res.Results[0].Unbuildable, tc.want) {
				t.Errorf("search: %+v %v; want it marked unbuildable %s", res, err, tc.want)
			}
			st := store.Open(store.Paths{Root: filepath.Join(t.TempDir(), "state")}, nil)
			d, _ := store.ParseDigest("sha256:" + strings.Repeat("ab", 32))
			if _, err := c.InstallUnsigned(ctx, st, UnsignedInstallRequest{Catalog: "reg", Name: "io.github.acme/tiny", AllowUnsigned: true, Digest: d, Bundle: bopts}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("install: %v, want %q", err, tc.want)
			}
			if n := reg.hits.Load(); n != 0 {
				t.Errorf("%d downloads of the MCP Bundle; want none", n)
			}
			if recs, _ := st.Records(); len(recs) != 0 {
				t.Errorf("installed %v", recs)
			}
		})
	}
}
