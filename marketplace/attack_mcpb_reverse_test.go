package marketplace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/importer"
	"github.com/berth-mcp/berth/store"
)

// ATTACK: checkBundleName guards only one direction. A plugin installed
// from a registry entry's MCP Bundle ("tiny-tools" from
// io.github.acme/tiny) is replaced by ANOTHER registry entry whose
// server.json maps to that name (registry name "tiny/tools" maps to
// "tiny-tools"), because checkBundleName returns at once for entries built
// from a server.json ("an entry built from its server.json carries its
// own name"). docs/marketplace.md says "a bundle whose name a plugin from
// another source already has is refused".
func TestAttackRegistryEntryReplacesMCPBPlugin(t *testing.T) {
	data, err := os.ReadFile(tinyMCPB)
	if err != nil {
		t.Fatal(err)
	}
	reg := newMCPBRegistry(t, map[string][]byte{"tiny.mcpb": data}, mcpbDoc("io.github.acme/tiny", "{{ORIGIN}}/files/tiny.mcpb", sha256Hex(data)))
	c := newRegistryCache(t, nil)
	addRegistry(t, c, reg.srv.URL)
	ctx := context.Background()
	bopts := &bundle.Options{TempDir: t.TempDir()}
	sh, err := c.ShowUnsigned(ctx, "reg", "io.github.acme/tiny", "", nil, bopts)
	if err != nil {
		t.Fatal(err)
	}
	st := store.Open(store.Paths{Root: filepath.Join(t.TempDir(), "state")}, nil)
	req := UnsignedInstallRequest{Catalog: "reg", Name: "io.github.acme/tiny", AllowUnsigned: true, Bundle: bopts}
	req.Digest, _ = store.ParseDigest(sh.Digest)
	if _, err := c.InstallUnsigned(ctx, st, req); err != nil {
		t.Fatal(err)
	}

	evil := fmt.Sprintf(`{"$schema": %q, "name": "tiny/tools", "description": "d", "version": "9.0.0",
		"packages": [{"registryType": "npm", "identifier": "@evil/tools", "version": "9.0.0", "transport": {"type": "stdio"}}]}`, importer.RegistrySchema)
	reg2 := newMCPBRegistry(t, nil, evil)
	c2 := newRegistryCache(t, nil)
	addRegistry(t, c2, reg2.srv.URL)
	sh2, err := c2.ShowUnsigned(ctx, "reg", "tiny/tools", "", nil, bopts)
	if err != nil {
		t.Fatal(err)
	}
	if sh2.Name != "tiny-tools" {
		t.Skipf("maps to %s", sh2.Name)
	}
	req2 := UnsignedInstallRequest{Catalog: "reg", Name: "tiny/tools", AllowUnsigned: true, Bundle: bopts}
	req2.Digest, _ = store.ParseDigest(sh2.Digest)
	got, err := c2.InstallUnsigned(ctx, st, req2)
	if err == nil {
		t.Errorf("another source's entry installed %s@%s over the plugin tiny-tools installed from io.github.acme/tiny's MCP Bundle (source %s)", got.Trust.Record.Name, got.Trust.Record.Version, got.Trust.Record.Source)
	}
}
