package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/peers"
	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/mcpexport"
)

// tsWaiter is a TypeScript SDK client that cannot answer forms: it calls
// argv[2] over Streamable HTTP with the token argv[3] and waits, so that
// the call waits in berth's queue until the test kills it.
const tsWaiter = `
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
const [url, tool, token] = process.argv.slice(1);
const client = new Client({ name: 'berth-ts-waiter', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: 'Bearer ' + token } } }));
console.log('connected');
await client.callTool({ name: tool, arguments: { text: 'for nobody' } }, undefined, { timeout: 600000 });
`

// TestApprovalDiesWithKilledClient: a client built on the TypeScript SDK
// is killed while its call waits in the queue. Within 2 s the call leaves
// `berth approvals`, `berth approve ID` says nobody is waiting any more
// and exits 1, nothing runs, and the audit log says withdrawn.
func TestApprovalDiesWithKilledClient(t *testing.T) {
	peers.Require(t)
	w := newWorld(t)
	w.demo()
	s := w.serve(1, "--http", "127.0.0.1:0", "--approval-timeout", "2m")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := peers.Command(ctx, t, "node", "--input-type=module", "-e", tsWaiter, s.urls[0], demoWipe, s.token)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m, _, err := s.log.wait(ctx, waitingRe, 0)
	if err != nil {
		t.Fatalf("the call never waited: %v\n%s\n%s", err, errb.String(), s.log)
	}
	id := m[2]
	list := func() []mcpexport.Pending {
		o, err := w.berth(ctx, "approvals", "--json")
		if err != nil {
			t.Fatal(err)
		}
		var l []mcpexport.Pending
		if err := json.Unmarshal([]byte(o), &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := list()
	var args bytes.Buffer
	if len(l) == 1 {
		json.Compact(&args, l[0].Arguments)
	}
	if len(l) != 1 || l[0].ID != id || l[0].Transport != mcpexport.TransportHTTP || !l[0].Authenticated || !strings.HasPrefix(l[0].Client, "berth-ts-waiter") || args.String() != `{"text":"for nobody"}` {
		t.Fatalf("berth approvals --json: %+v", l)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !testkit.Poll(2*time.Second, 50*time.Millisecond, func() bool { return len(list()) == 0 }) {
		t.Fatalf("approval %s still listed 2s after its client was killed", id)
	}
	approve := exec.CommandContext(ctx, w.berthPath(), "approve", id)
	approve.Env = w.env()
	o, _ := approve.CombinedOutput()
	if code := approve.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(o), "nobody is waiting for this approval any more") || !strings.Contains(string(o), "nothing was run") {
		t.Fatalf("berth approve %s: exit %d, %s", id, code, o)
	}
	a := w.auditOf(id)
	if a.Outcome != "withdrawn" || a.Decision != "none" || !strings.Contains(a.Reason, "went away") {
		t.Fatalf("audit %+v", a)
	}
	if strings.Contains(s.log.String(), "wiped for nobody") {
		t.Fatal("the tool ran")
	}
}
