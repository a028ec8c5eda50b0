package mcpexport_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/mcpexport"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// An embedder serves a workspace's pool to an MCP client; here a client
// connected in memory lists the catalog of a workspace where nothing is
// enabled yet. ServeStdio and Handler serve real clients the same way.
func Example() {
	ctx := context.Background()
	home, err := os.MkdirTemp("", "mcpexport-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(home)
	paths, err := store.NewPaths(home)
	if err != nil {
		log.Fatal(err)
	}
	p, err := pool.Open(ctx, store.Open(paths, nil), home, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	srv := mcpexport.New(p, nil)
	defer srv.Close()

	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.MCPServer().Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	c := mcp.NewClient(&mcp.Implementation{Name: "example-client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cs.InitializeResult().ServerInfo.Name, len(tools.Tools))
	// Output:
	// berth 0
}
