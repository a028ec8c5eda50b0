//go:build unix

package mcpexport

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"net/http/httptest"

	"github.com/berth-mcp/berth/internal/peers"
	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/store"
)

// tsLazyClient is a client written with the TypeScript SDK
// (@modelcontextprotocol/sdk, pinned in testdata/peers) that uses lazy
// mode as a model would: it lists, searches, and calls what it found
// through berth_call_tool. Its first client declares no elicitation (a
// call that needs approval waits in berth's queue), its second answers
// berth's form with allow-once. It prints one JSON object.
const tsLazyClient = `
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [url, token] = process.argv.slice(1);
const connect = async (caps) => {
  const client = new Client({ name: 'berth-ts-lazy-test', version: '1.0.0' }, { capabilities: caps });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: 'Bearer ' + token } } }));
  return client;
};
const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const out = {};
const client = await connect({});
out.tools = (await client.listTools()).tools;
const found = await client.callTool({ name: 'berth_find_tools', arguments: { query: 'wipe everything', limit: 3 } });
out.found = found.structuredContent;
out.foundText = text(found);
out.secretFound = (await client.callTool({ name: 'berth_find_tools', arguments: { query: 'a tool the operator denies' } })).structuredContent;
const secret = await client.callTool({ name: 'berth_call_tool', arguments: { name: 'demo__up__secret', arguments: { text: 'x' } } });
out.secret = { isError: secret.isError, text: text(secret) };
console.log('waiting');
let progress = 0;
const queued = await client.callTool({ name: 'berth_call_tool', arguments: { name: out.found.tools[0].name, arguments: { text: 'from typescript' } } },
  undefined, { timeout: 120000, onprogress: () => { progress++; } });
out.queued = { isError: queued.isError, text: text(queued), progress };
await client.close();

const asker = await connect({ elicitation: { form: {} } });
const asked = [];
asker.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push(req.params.message);
  return { action: 'accept', content: { decision: 'allow-once' } };
});
const elicited = await asker.callTool({ name: 'berth_call_tool', arguments: { name: 'demo__up__wipe', arguments: { text: 'asked' } } });
out.elicited = { isError: elicited.isError, text: text(elicited), asked };
await asker.close();
console.log(JSON.stringify(out));
`

type tsLazyOutput struct {
	Tools []struct {
		Name        string
		Annotations map[string]any
	}
	Found       FindResult
	FoundText   string
	SecretFound FindResult
	Secret      struct {
		IsError bool
		Text    string
	}
	Queued struct {
		IsError  bool
		Text     string
		Progress int
	}
	Elicited struct {
		IsError bool
		Text    string
		Asked   []string
	}
}

// The TypeScript SDK client in lazy mode: tools/list holds the meta-tools
// and the Always tool; berth_find_tools finds wipe and not the denied
// secret; berth_call_tool refuses secret and runs wipe once approved in
// the queue (with berth's waiting progress on the client's token) or by
// the client's form, which names wipe and not the meta-tool.
func TestTypeScriptSDKLazyMode(t *testing.T) {
	peers.Require(t)
	e := newEnv(t, lazy(echoTool), store.PolicyRule{Pattern: secretTool, Action: store.ActionDeny})
	hs := httptest.NewServer(e.srv.Handler(&HTTPOptions{Token: testToken}))
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := peers.Command(ctx, t, "node", "--input-type=module", "-e", tsLazyClient, hs.URL+"/mcp", testToken)
	var stdout syncBuffer
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var p *Pending
	testkit.Eventually(t, 60*time.Second, "the TypeScript client's call to wait in the queue", func() bool {
		list, _ := e.srv.queue.List()
		if len(list) == 1 {
			p = list[0]
		}
		return p != nil
	})
	if p.Tool != wipeTool || !strings.Contains(string(p.Arguments), "from typescript") || !strings.HasPrefix(p.Client, "berth-ts-lazy-test") {
		t.Fatalf("queued %+v", p)
	}
	time.Sleep(1500 * time.Millisecond) // a progress notification or two
	if _, err := e.srv.queue.Decide(p.ID, true, false, "test"); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the TypeScript client: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var out tsLazyOutput
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &out); err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	var names []string
	for _, tl := range out.Tools {
		names = append(names, tl.Name)
		if tl.Name == MetaCallTool && len(tl.Annotations) != 0 {
			t.Errorf("berth_call_tool has annotations %v", tl.Annotations)
		}
	}
	if sorted(names) != sorted([]string{MetaCallTool, MetaFindTools, echoTool}) {
		t.Fatalf("tools/list: %v", names)
	}
	if len(out.Found.Tools) == 0 || out.Found.Tools[0].Name != wipeTool || out.Found.Tools[0].Description != "wipe everything" || out.Found.Tools[0].InputSchema == nil {
		t.Fatalf("found %+v", out.Found)
	}
	var fromText FindResult
	if json.Unmarshal([]byte(out.FoundText), &fromText) != nil || len(fromText.Tools) != len(out.Found.Tools) {
		t.Fatalf("the text result %q does not hold the matches", out.FoundText)
	}
	for _, f := range out.SecretFound.Tools {
		if f.Name == secretTool {
			t.Fatalf("found the denied %s", secretTool)
		}
	}
	if !out.Secret.IsError || strings.Contains(out.Secret.Text, "secret ran") || !strings.Contains(out.Secret.Text, MetaFindTools) {
		t.Fatalf("berth_call_tool secret: %+v", out.Secret)
	}
	if out.Queued.IsError || out.Queued.Text != "wiped from typescript" || out.Queued.Progress == 0 {
		t.Fatalf("the queued call: %+v", out.Queued)
	}
	if out.Elicited.IsError || out.Elicited.Text != "wiped asked" || len(out.Elicited.Asked) != 1 ||
		!strings.Contains(out.Elicited.Asked[0], "Tool:        "+wipeTool) || strings.Contains(out.Elicited.Asked[0], MetaCallTool) {
		t.Fatalf("the elicited call: %+v", out.Elicited)
	}
	var vias []string
	for _, a := range readAudit(t, e.paths) {
		if a.Tool == wipeTool && a.Outcome == OutcomeRan {
			vias = append(vias, a.Via+"/"+string(a.DecidedBy))
		}
	}
	if !slices.Equal(vias, []string{MetaCallTool + "/queue", MetaCallTool + "/elicitation"}) {
		t.Fatalf("audit of wipe: %v", vias)
	}
}

// tsLazyBoundaries is a TypeScript SDK client in lazy mode that keeps one
// session across three boundaries the test makes: it has demo's server
// add a tool (a change of the pinned surface, withheld), searches and
// calls it; the test accepts the change and the client searches and calls
// it again; it finds wipe, the test revokes demo and the client searches
// and calls wipe again. It prints each step's name, then waits for a line
// on stdin before going on, and prints one JSON object at the end.
const tsLazyBoundaries = `
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import readline from 'node:readline';

const [url, token] = process.argv.slice(1);
const rl = readline.createInterface({ input: process.stdin });
const lines = rl[Symbol.asyncIterator]();
const step = async (name) => { console.log(name); await lines.next(); };
const client = new Client({ name: 'berth-ts-lazy-boundaries', version: '1.0.0' }, { capabilities: {} });
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: 'Bearer ' + token } } }));
const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const find = async (query) => (await client.callTool({ name: 'berth_find_tools', arguments: { query, limit: 10 } })).structuredContent.tools.map((t) => t.name);
const call = async (name, args) => {
  const r = await client.callTool({ name: 'berth_call_tool', arguments: { name, arguments: args } });
  return { isError: !!r.isError, text: text(r) };
};
const extra = 'an extra tool added after the surface was pinned';
const out = {};
out.added = text(await client.callTool({ name: 'demo__up__echo', arguments: { text: 'add a tool' } }));
await step('added');
out.withheldFound = await find(extra);
out.withheldCall = await call('demo__up__extra', {});
await step('withheld');
out.acceptedFound = await find(extra);
out.acceptedCall = await call('demo__up__extra', {});
out.wipeBefore = await find('wipe everything');
await step('accepted');
out.wipeAfter = await find('wipe everything');
out.wipeCall = await call('demo__up__wipe', { text: 'x' });
out.tools = (await client.listTools()).tools.map((t) => t.name);
await client.close();
rl.close();
console.log(JSON.stringify(out));
`

type tsCallOutput struct {
	IsError bool
	Text    string
}

type tsBoundariesOutput struct {
	Added                                               string
	WithheldFound, AcceptedFound, WipeBefore, WipeAfter []string
	WithheldCall, AcceptedCall, WipeCall                tsCallOutput
	Tools                                               []string
}

// The TypeScript SDK client in lazy mode, one session: a tool added after
// the surface was pinned is neither found nor callable until berth accept,
// then it is both; wipe, found before demo is revoked, is neither found
// nor callable after, nor listed.
func TestTypeScriptSDKLazyBoundaries(t *testing.T) {
	peers.Require(t)
	const extra = "demo__up__extra"
	e := newEnv(t, lazy(echoTool), allowDemo...)
	hs := httptest.NewServer(e.srv.Handler(&HTTPOptions{Token: testToken}))
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := peers.Command(ctx, t, "node", "--input-type=module", "-e", tsLazyBoundaries, hs.URL+"/mcp", testToken)
	var stdout syncBuffer
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	// await waits for the client to print step, then lets it go on after
	// do.
	await := func(step string, do func()) {
		t.Helper()
		testkit.Eventually(t, 60*time.Second, "the TypeScript client's step "+step, func() bool {
			return slices.Contains(strings.Split(stdout.String(), "\n"), step)
		})
		do()
		if _, err := stdin.Write([]byte("go\n")); err != nil {
			t.Fatalf("%v\n%s\n%s", err, stdout.String(), stderr.String())
		}
	}
	await("added", func() {
		testkit.Eventually(t, 20*time.Second, "the added tool to be withheld", func() bool {
			e.srv.Sync(context.Background())
			for _, st := range e.pool.Status() {
				for _, c := range st.Changes {
					if c.Tool == "extra" {
						return true
					}
				}
			}
			return false
		})
	})
	await("withheld", func() { acceptChanges(t, e, "demo") })
	await("accepted", func() {
		recs, err := e.store.Find("demo", "1.0.0")
		if err != nil || len(recs) != 1 {
			t.Fatal(recs, err)
		}
		if _, err := e.store.MarkRevoked(ctx, store.Revocation{Name: "demo", Version: "1.0.0", Digest: recs[0].Digest, Catalog: "test", Reason: "test"}); err != nil {
			t.Fatal(err)
		}
	})
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the TypeScript client: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var out tsBoundariesOutput
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &out); err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	if out.Added != "echo: add a tool" {
		t.Fatalf("echo: %q", out.Added)
	}
	if slices.Contains(out.WithheldFound, extra) {
		t.Errorf("found the withheld %s: %v", extra, out.WithheldFound)
	}
	if c := out.WithheldCall; !c.IsError || strings.Contains(c.Text, "extra ran") || !strings.Contains(c.Text, "berth accept demo") {
		t.Errorf("berth_call_tool of the withheld tool: %+v", c)
	}
	if !slices.Contains(out.AcceptedFound, extra) {
		t.Errorf("after berth accept, %s not found: %v", extra, out.AcceptedFound)
	}
	if c := out.AcceptedCall; c.IsError || c.Text != "extra ran" {
		t.Errorf("berth_call_tool of the accepted tool: %+v", c)
	}
	if !slices.Equal(out.WipeBefore[:min(1, len(out.WipeBefore))], []string{wipeTool}) {
		t.Errorf("find wipe before the revocation: %v", out.WipeBefore)
	}
	if len(out.WipeAfter) != 0 {
		t.Errorf("find after the revocation: %v", out.WipeAfter)
	}
	if c := out.WipeCall; !c.IsError || strings.Contains(c.Text, "wiped") {
		t.Errorf("berth_call_tool of wipe after the revocation: %+v", c)
	}
	if sorted(out.Tools) != sorted([]string{MetaCallTool, MetaFindTools}) {
		t.Errorf("tools/list after the revocation: %v", out.Tools)
	}
}
