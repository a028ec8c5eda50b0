//go:build unix

// Command berth-testserver runs the MCP test server of package testserver
// over stdio, for the CLI's tests.
package main

import (
	"os"

	"github.com/berth-mcp/berth/pool/internal/testserver"
)

func main() { os.Exit(testserver.Main(os.Args[1:])) }
