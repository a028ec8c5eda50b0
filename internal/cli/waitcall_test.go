package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/berth-mcp/berth/internal/testkit"
)

// A call waiting for approval, for the scripts: waitcall starts berth
// serve over stdio as a client would (in the script's environment and
// working directory), calls a tool from a client without forms so that
// the call waits in the approval queue, and sets $APPROVAL_ID once
// `berth approvals --json` lists it; waitcall-result waits for the call
// to end and prints its result.

type waitingCall struct {
	done chan string
	stop func()
}

var (
	waitingMu sync.Mutex
	waiting   = map[string]*waitingCall{} // by work dir
)

// scriptBerth is berth, run as a process in the script's environment.
func scriptBerth(ts *testscript.TestScript, args ...string) *exec.Cmd {
	cmd := exec.Command("berth", args...)
	cmd.Env = append(os.Environ(), "BERTH_HOME="+ts.Getenv("BERTH_HOME"), "PATH="+ts.Getenv("PATH"), "HOME="+ts.Getenv("HOME"))
	cmd.Dir = ts.Getenv("WORK")
	return cmd
}

// waitCallCmd: waitcall TOOL [KEY=VALUE...] (string arguments).
func waitCallCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: waitcall TOOL [KEY=VALUE...]")
	}
	tool, arguments := args[0], map[string]any{}
	for _, kv := range args[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			ts.Fatalf("waitcall: %q is not KEY=VALUE", kv)
		}
		arguments[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	client := mcp.NewClient(&mcp.Implementation{Name: "script-client", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: scriptBerth(ts, "serve")}, nil)
	if err != nil {
		cancel()
		ts.Fatalf("waitcall: starting berth serve: %v", err)
	}
	w := &waitingCall{done: make(chan string, 1), stop: func() { cs.Close(); cancel() }}
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: arguments})
		switch {
		case err != nil:
			w.done <- "error: " + err.Error()
		default:
			var b strings.Builder
			fmt.Fprintf(&b, "isError: %v\n", res.IsError)
			for _, c := range res.Content {
				if t, ok := c.(*mcp.TextContent); ok {
					b.WriteString(t.Text + "\n")
				}
			}
			w.done <- b.String()
		}
	}()
	waitingMu.Lock()
	waiting[ts.Getenv("WORK")] = w
	waitingMu.Unlock()
	ts.Defer(func() {
		w.stop()
		waitingMu.Lock()
		delete(waiting, ts.Getenv("WORK"))
		waitingMu.Unlock()
	})
	if !testkit.Poll(30*time.Second, 50*time.Millisecond, func() bool {
		out, err := scriptBerth(ts, "approvals", "--json").Output()
		if err != nil {
			ts.Fatalf("waitcall: berth approvals --json: %v", err)
		}
		var list []struct{ ID, Tool string }
		if err := json.Unmarshal(out, &list); err != nil {
			ts.Fatalf("waitcall: berth approvals --json: %v\n%s", err, out)
		}
		for _, p := range list {
			if p.Tool == tool {
				ts.Setenv("APPROVAL_ID", p.ID)
				return true
			}
		}
		return false
	}) {
		ts.Fatalf("waitcall: the call of %s never waited in the approval queue", tool)
	}
}

// waitCallResultCmd: waitcall-result prints the waiting call's result once
// it ends.
func waitCallResultCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: waitcall-result")
	}
	waitingMu.Lock()
	w := waiting[ts.Getenv("WORK")]
	waitingMu.Unlock()
	if w == nil {
		ts.Fatalf("waitcall-result: no waitcall")
	}
	select {
	case r := <-w.done:
		fmt.Fprint(ts.Stdout(), r)
	case <-time.After(time.Minute):
		ts.Fatalf("waitcall-result: the call did not end")
	}
}
