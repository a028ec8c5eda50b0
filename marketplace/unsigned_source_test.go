package marketplace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/importer"
	"github.com/berth-mcp/berth/store"
)

// A plugin installed from a registry entry's MCP Bundle ("tiny-tools" from
// io.github.acme/tiny) is not replaced by another registry entry whose
// server.json maps to that name ("tiny/tools" maps to "tiny-tools"): every
// unsigned install compares the source of the plugin's latest record with
// its own (store.TrustOptions.SameSource), and the error names both and
// berth revoke.
func TestUnsignedInstallRefusesAnotherSourcesPlugin(t *testing.T) {
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
	npmRegistryFor(t, st.Paths().Root, "@evil/tools@9.0.0")
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
		t.Fatalf("tiny/tools maps to %s, not tiny-tools", sh2.Name)
	}
	req2 := UnsignedInstallRequest{Catalog: "reg", Name: "tiny/tools", AllowUnsigned: true, Bundle: bopts}
	req2.Digest, _ = store.ParseDigest(sh2.Digest)
	got, err := c2.InstallUnsigned(ctx, st, req2)
	if err == nil {
		t.Fatalf("another source's entry installed %s@%s over the plugin tiny-tools installed from io.github.acme/tiny's MCP Bundle (source %s)", got.Trust.Record.Name, got.Trust.Record.Version, got.Trust.Record.Source)
	}
	var sc *store.SourceChangeError
	if !errors.As(err, &sc) || !strings.Contains(err.Error(), "io.github.acme%2Ftiny") || !strings.Contains(err.Error(), "tiny%2Ftools") || !strings.Contains(err.Error(), "berth revoke tiny-tools") {
		t.Errorf("refusal does not name both sources and berth revoke: %v", err)
	}
	// After berth revoke, the other source installs.
	recs, err := st.Find("tiny-tools", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if _, err := st.Revoke(ctx, r.Name, r.Version); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c2.InstallUnsigned(ctx, st, req2); err != nil {
		t.Fatalf("after revoking tiny-tools, the other entry: %v", err)
	}
}
