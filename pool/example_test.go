package pool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/trust"
)

// A library user opens the pool of a workspace, lists its catalog and
// calls a tool, approving what the operator's policy allows by itself.
// (Not run: it needs an enabled plugin.)
func Example() {
	ctx := context.Background()
	paths, err := trust.NewPaths(trust.DefaultRoot(os.Getenv))
	if err != nil {
		log.Fatal(err)
	}
	p, err := pool.Open(ctx, paths, ".", nil)
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
	res, err := p.Call(ctx, "acme-notes-notes__search", json.RawMessage(`{"query":"berth"}`), approver)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.IsError)
}

func ExampleExportName() {
	fmt.Println(pool.ExportName("acme-notes", "notes", "search"))
	fmt.Println(pool.NativeExportName("acme-notes", "index"))
	long := pool.ExportName("acme-notes", "notes", "a_tool_name_that_goes_on_and_on_for_far_too_long")
	fmt.Println(len(long), pool.ValidName(long))
	// Output:
	// acme-notes-notes__search
	// acme-notes__index
	// 64 true
}

func ExampleMatchPolicy() {
	rules := []trust.PolicyRule{
		{Pattern: "acme-notes-*", Action: "allow"},
		{Pattern: "acme-notes-notes__delete_*", Action: "deny"},
		{Pattern: "acme-notes-notes__delete_draft", Action: "ask"},
	}
	for _, tool := range []string{"acme-notes-notes__search", "acme-notes-notes__delete_all", "acme-notes-notes__delete_draft", "other__x"} {
		m := pool.MatchPolicy(rules, tool)
		fmt.Printf("%s: %s %q exact=%v\n", tool, m.Action, m.Pattern, m.Exact)
	}
	// Output:
	// acme-notes-notes__search: allow "acme-notes-*" exact=false
	// acme-notes-notes__delete_all: deny "acme-notes-notes__delete_*" exact=false
	// acme-notes-notes__delete_draft: ask "acme-notes-notes__delete_draft" exact=true
	// other__x: ask "" exact=false
}
