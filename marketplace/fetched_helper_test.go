package marketplace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/internal/testkit"
)

// npmRegistryFor serves, from a loopback npm registry, a tiny MCP server
// package for each NAME@VERSION, and names it in the fetchers' npmrc of
// the berth home root: a fetched server is resolved at trust.
func npmRegistryFor(t *testing.T, root string, specs ...string) {
	t.Helper()
	var pkgs []testkit.NPMPackage
	for _, s := range specs {
		at := strings.LastIndex(s, "@")
		pkgs = append(pkgs, testkit.NPMPackage{Name: s[:at], Version: s[at+1:], Bin: "server.js", Files: map[string]string{"server.js": testkit.MCPServerJS("")}})
	}
	reg := testkit.NewNPMRegistry(t, pkgs...)
	dir := filepath.Join(root, "fetchers")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "npmrc"), []byte("registry="+reg.URL()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}
