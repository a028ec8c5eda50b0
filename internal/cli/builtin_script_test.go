package cli

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/berth-mcp/berth/marketplace/builtin"
)

// builtinEntryCmd: builtin-entry NAME sets $BUILTIN_PACKAGE,
// $BUILTIN_VERSION and $BUILTIN_DIGEST to what the built-in catalog
// compiled into berth pins for NAME, so a script need not repeat what
// make builtin-catalog regenerates.
func builtinEntryCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: builtin-entry NAME")
	}
	c, err := builtin.Load()
	if err != nil {
		ts.Fatalf("builtin-entry: %v", err)
	}
	e := c.Entry(args[0])
	if e == nil {
		ts.Fatalf("builtin-entry: the built-in catalog has no %s", args[0])
	}
	ts.Setenv("BUILTIN_PACKAGE", e.Package)
	ts.Setenv("BUILTIN_VERSION", e.Version)
	ts.Setenv("BUILTIN_DIGEST", e.Digest)
}

// builtinFakeEnv names the directory a test's berth reads the built-in
// catalog from (builtin.UseForTest, in TestMain of this test binary
// only: the berth binary never reads it).
const builtinFakeEnv = "BERTH_TEST_BUILTIN_DIR"

// builtinFakeCmd: builtin-fake NAME starts a loopback npm registry (as
// npmreg) serving a tiny package at the name and version the built-in
// catalog pins for NAME, and writes into $WORK/builtin-fake the built-in
// catalog with NAME's integrity pinned to that tarball, which the berth
// of this script then reads: the whole built-in install path runs
// without the real tarball. It sets $BUILTIN_PACKAGE, $BUILTIN_VERSION,
// $BUILTIN_DIGEST and $NPM_URL.
func builtinFakeCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: builtin-fake NAME")
	}
	builtinEntryCmd(ts, false, args)
	pkg, version := ts.Getenv("BUILTIN_PACKAGE"), ts.Getenv("BUILTIN_VERSION")
	reg := startNPMReg(ts, []string{pkg + "@" + version})
	c, err := builtin.Load()
	if err != nil {
		ts.Fatalf("builtin-fake: %v", err)
	}
	dir := ts.MkAbs("builtin-fake")
	for _, e := range c.Plugins {
		files, err := builtin.Files(e.Name)
		if err != nil {
			ts.Fatalf("builtin-fake: %v", err)
		}
		for p, data := range files {
			full := filepath.Join(dir, "bundles", e.Name, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				ts.Fatalf("%v", err)
			}
			if err := os.WriteFile(full, data, 0o644); err != nil {
				ts.Fatalf("%v", err)
			}
		}
		if e.Name == args[0] {
			e.Integrity = reg.Integrity(pkg, version)
		}
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		ts.Fatalf("%v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "catalog.json"), data, 0o644); err != nil {
		ts.Fatalf("%v", err)
	}
	ts.Setenv(builtinFakeEnv, dir)
}

// useBuiltinFake makes this process (a berth a script runs) read the
// built-in catalog builtin-fake wrote, when the script asked for it.
func useBuiltinFake() {
	if dir := os.Getenv(builtinFakeEnv); dir != "" {
		builtin.UseForTest(os.DirFS(dir))
	}
}
