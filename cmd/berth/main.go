// Command berth installs curated MCP plugins safely and serves their tools
// with approval by default. See README.md.
package main

import (
	"os"

	"github.com/berth-mcp/berth/internal/cli"
	"github.com/berth-mcp/berth/sandbox"
)

func main() {
	// berth re-executes itself as the sandbox launcher of a local server
	// (docs/sandbox.md): then Main confines the process and execs the
	// server, and never returns.
	sandbox.Main()
	os.Exit(cli.Main())
}
