// Package e2e tests berth end to end: the berth CLI as a process, with
// MCP clients and servers that berth did not write. It sits above every
// package of berth, so that no library package's tests depend on the CLI.
package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-mcp/berth/internal/cli"
	"github.com/berth-mcp/berth/internal/testrelay"
	"github.com/berth-mcp/berth/internal/testupstream"
	"github.com/berth-mcp/berth/sandbox"
)

// TestMain lets the test binary act as the berth CLI, through a symlink
// named berth, and as the upstream server of the tests, through one named
// testupstream.Name: the berth under test is the same code, race detector
// included, that `go test -race` builds.
func TestMain(m *testing.M) {
	// A test binary re-executed as the sandbox launcher never runs tests.
	sandbox.Main()
	switch filepath.Base(os.Args[0]) {
	case berthName:
		os.Exit(cli.Main())
	case testupstream.Name:
		testupstream.Main()
		return
	case testrelay.Name:
		testrelay.Main()
		return
	}
	os.Exit(m.Run())
}
