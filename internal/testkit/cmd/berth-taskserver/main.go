// Command berth-taskserver is a plugin server over stdio that implements
// the tasks extension's conformance fixtures (package taskserver).
package main

import (
	"os"

	"github.com/berth-mcp/berth/internal/testkit/taskserver"
)

func main() { os.Exit(taskserver.Main(os.Args[1:])) }
