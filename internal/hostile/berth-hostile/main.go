//go:build linux

// Command berth-hostile is the hostile MCP server of berth's confinement
// tests (package hostile): its tool try makes one attack and reports what
// it got.
package main

import (
	"os"

	"github.com/berth-mcp/berth/internal/hostile"
)

func main() { os.Exit(hostile.Main(os.Args[1:])) }
