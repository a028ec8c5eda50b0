package pool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// A library user opens the pool of a workspace, lists its catalog and
// calls a tool, approving what the operator's policy allows by itself.
// (Not run: it needs an enabled plugin.)
func Example() {
	ctx := context.Background()
	paths, err := store.NewPaths(store.DefaultRoot(os.Getenv))
	if err != nil {
		log.Fatal(err)
	}
	p, err := pool.Open(ctx, store.Open(paths, nil), ".", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	if err := p.WaitStarted(ctx); err != nil {
		log.Fatal(err)
	}
	tools, err := p.Tools(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range tools {
		fmt.Println(t.Name, t.Policy.Action)
	}
	approver := pool.ApproverFunc(func(ctx context.Context, req *pool.ApprovalRequest) (pool.Decision, error) {
		if pool.AllowedByPolicy(req) {
			return pool.Decision{Allow: true, By: "policy"}, nil
		}
		return pool.Decision{By: "example", Reason: "nobody to ask"}, nil
	})
	res, err := p.Call(ctx, "acme-notes__notes__search", json.RawMessage(`{"query":"berth"}`), approver)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.IsError)
}

func ExampleExportName() {
	fmt.Println(pool.ExportName("acme-notes", "notes", "search"))
	fmt.Println(pool.ServerID("acme-notes", "notes"))
	plugin, server, tool, _ := pool.ParseName("acme-notes__notes__search")
	fmt.Println(plugin, server, tool)
	long := pool.ExportName("acme-notes", "notes", "a_tool_name_that_goes_on_and_on_for_far_too_long")
	fmt.Println(len(long), pool.ValidName(long))
	// Output:
	// acme-notes__notes__search
	// acme-notes__notes
	// acme-notes notes search
	// 64 true
}
