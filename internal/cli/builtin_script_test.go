package cli

import (
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
