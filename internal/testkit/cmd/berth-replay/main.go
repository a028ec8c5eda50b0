// Command berth-replay serves recorded real MCP tools over stdio (package
// replayserver): berth-replay [-dir DIR] RECORDING...
package main

import (
	"os"

	"github.com/berth-mcp/berth/internal/testkit/replayserver"
)

func main() { os.Exit(replayserver.Main(os.Args[1:])) }
