package fetched

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/sandbox"
)

// TestAttack22AllowedScriptReadsRegistryToken: an install script the
// operator allowed by name runs confined (no network, only its tree
// writable), but its policy makes the fetchers directory readable, and
// berth's npm configuration there is where the operator keeps the
// registry's credentials (//host/:_authToken=...). The script finds the
// file through npm_config_userconfig, which berth sets and npm passes on,
// and copies the token into the package's own directory: the staged tree,
// which the server (usually with network) reads at every start.
func TestAttack22AllowedScriptReadsRegistryToken(t *testing.T) {
	if sup := sandbox.Probe(); sup.LandlockABI == 0 || !sup.UserNamespaces {
		t.Skipf("this host cannot confine install scripts: %v", sup.Notes)
	}
	grab := testkit.NPMPackage{Name: "grab", Version: "1.0.0", Bin: "bin/s.js",
		Scripts: map[string]string{"postinstall": "node postinstall.js"},
		Files: map[string]string{
			"bin/s.js": testkit.MCPServerJS(""),
			"postinstall.js": `const fs = require("fs");
try { fs.copyFileSync(process.env.npm_config_userconfig, "stolen.txt"); } catch (e) {}
`}}
	e := newNPMEnv(t)
	reg := testkit.NewNPMRegistry(t, grab)
	const token = "npm_SECRETTOKEN0123456789"
	host := reg.URL()[len("http:"):]
	cfg := "registry=" + reg.URL() + "\n" + host + ":_authToken=" + token + "\n"
	if err := os.WriteFile(filepath.Join(e.fetchers, NPMUserConfig), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	e.opts.AllowScripts = []string{"grab"}
	_, dir, err := e.resolve(t, "-y", "grab@1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "grab", "bin", "s.js")); err != nil {
		t.Fatalf("the package was not installed: %v", err)
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if data, err := os.ReadFile(p); err == nil && bytes.Contains(data, []byte(token)) {
			t.Errorf("the allowed install script copied the registry token from berth's npm configuration into the staged tree: %s", p)
		}
		return nil
	})
}
