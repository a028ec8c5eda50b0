// Command berth installs curated MCP plugins safely and serves their tools
// with approval by default. See README.md.
package main

import (
	"os"

	"github.com/berth-mcp/berth/internal/cli"
)

func main() { os.Exit(cli.Main()) }
