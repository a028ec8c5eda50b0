package cli

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/berth-mcp/berth/internal/testkit"
)

// npmregCmd is "npmreg NAME@VERSION...": a loopback npm registry serving,
// for each spec, a tiny MCP server package of that name and version (a
// bin named like the package), named in $BERTH_HOME/fetchers/npmrc so
// that berth resolves fetched servers against it at trust. It sets
// $NPM_URL.
func npmregCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: npmreg NAME@VERSION...")
	}
	startNPMReg(ts, args)
}

// startNPMReg is npmreg's work; it returns the registry.
func startNPMReg(ts *testscript.TestScript, args []string) *testkit.NPMRegistry {
	var pkgs []testkit.NPMPackage
	for _, spec := range args {
		at := strings.LastIndex(spec, "@")
		if at <= 0 {
			ts.Fatalf("npmreg: %q is not NAME@VERSION", spec)
		}
		name := spec[:at]
		pkgs = append(pkgs, testkit.NPMPackage{Name: name, Version: spec[at+1:], Bin: "server.js",
			Files: map[string]string{"server.js": testkit.MCPServerJS("")}})
	}
	reg, err := testkit.StartNPMRegistry(pkgs...)
	if err != nil {
		ts.Fatalf("npmreg: %v", err)
	}
	ts.Defer(reg.Close)
	ts.Setenv("NPM_URL", reg.Server.URL)
	dir := filepath.Join(ts.Getenv("BERTH_HOME"), "fetchers")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		ts.Fatalf("%v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "npmrc"), []byte("registry="+reg.URL()+"\n"), 0o600); err != nil {
		ts.Fatalf("%v", err)
	}
	return reg
}
