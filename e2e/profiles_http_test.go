package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/peers"
	"github.com/berth-mcp/berth/mcpexport"
	"github.com/berth-mcp/berth/store"
)

// tsProfiles is a program of two MCP clients written with the TypeScript
// SDK (testdata/peers) that connect over Streamable HTTP to the profiles
// a (lazy) and b (full) of one berth serve (argv[1] is its base URL,
// argv[2] the token). It prints one line with the tools each lists, what
// a's berth_find_tools finds for its own tool and for b's, the HTTP
// status of a's session ID sent to b's path, and the error of a
// connection to an unknown profile. Then client a calls demo__up__wipe
// through berth_call_tool and client b calls it directly (neither can
// elicit, so each call waits in berth's queue); it prints each result on
// a line of its own.
const tsProfiles = `
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [base, token] = process.argv.slice(1);
const headers = { Authorization: 'Bearer ' + token };
async function open(path, name) {
  const c = new Client({ name, version: '1.0.0' }, { capabilities: {} });
  const t = new StreamableHTTPClientTransport(new URL(base + path), { requestInit: { headers } });
  await c.connect(t);
  return { c, t };
}
const a = await open('/profiles/a/mcp', 'ts-client-a');
const b = await open('/profiles/b/mcp', 'ts-client-b');
const names = async (x) => (await x.c.listTools()).tools.map((t) => t.name).sort();
const out = { a: await names(a), b: await names(b) };
const find = async (query) => (await a.c.callTool({ name: 'berth_find_tools', arguments: { query, limit: 10 } })).structuredContent.tools.map((t) => t.name);
out.aFindsWipe = await find('wipe everything');
out.aFindsEcho = await find('echo the text');
const r = await fetch(base + '/profiles/b/mcp', { method: 'POST', headers: { ...headers, 'Content-Type': 'application/json',
  Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': a.t.sessionId, 'Mcp-Protocol-Version': '2025-11-25' },
  body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} }) });
out.cross = r.status;
try { await open('/profiles/nope/mcp', 'ts-client-nope'); out.unknown = 'connected'; } catch (e) { out.unknown = String(e); }
console.log(JSON.stringify(out));
const viaMeta = await a.c.callTool({ name: 'berth_call_tool', arguments: { name: 'demo__up__wipe', arguments: { text: 'from a' } } }, undefined, { timeout: 120000 });
console.log(JSON.stringify(viaMeta));
const res = await b.c.callTool({ name: 'demo__up__wipe', arguments: { text: 'from b' } }, undefined, { timeout: 120000 });
console.log(JSON.stringify(res));
await a.c.close();
await b.c.close();
`

// TestTypeScriptSDKProfiles: two clients of one berth serve --http, built
// on the TypeScript SDK, at two profiles' paths, one lazy and one full,
// are offered two tool sets: the lazy one lists the meta-tools, finds its
// profile's tool and not the other profile's, and calls it through
// berth_call_tool once berth approve answers; a session of one path is
// unknown at the other; an unknown profile is refused naming berth
// profile list; berth status shows each session with its profile and
// mode; berth approvals shows the profile of each waiting call.
func TestTypeScriptSDKProfiles(t *testing.T) {
	peers.Require(t)
	w := newWorld(t)
	w.demo()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := w.store.Update(ctx, func(st *store.State) error {
		for _, ws := range st.Workspaces {
			ws.Profiles = map[string]*store.Profile{
				"a": {Tools: []string{demoWipe}, Mode: store.ToolsLazy, CreatedAt: time.Now().UTC()},
				"b": {Tools: []string{demoEcho, demoWipe}, Mode: store.ToolsFull, CreatedAt: time.Now().UTC()},
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s := w.serve(1, "--http", "127.0.0.1:0")
	base := strings.TrimSuffix(s.urls[0], "/mcp")
	cmd := peers.Command(ctx, t, "node", "--input-type=module", "-e", tsProfiles, base, s.token)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	if !lines.Scan() {
		t.Fatalf("TypeScript clients printed nothing: %s\nberth serve:\n%s", errb.String(), s.log)
	}
	var first struct {
		A, B                   []string
		AFindsWipe, AFindsEcho []string
		Cross                  int
		Unknown                string
	}
	if err := json.Unmarshal(lines.Bytes(), &first); err != nil {
		t.Fatalf("%q: %v", lines.Text(), err)
	}
	if !slices.Equal(first.A, []string{mcpexport.MetaCallTool, mcpexport.MetaFindTools}) || !slices.Equal(first.B, []string{demoEcho, demoWipe}) {
		t.Errorf("profile a lists %v, profile b lists %v; want the meta-tools and %s %s", first.A, first.B, demoEcho, demoWipe)
	}
	if !slices.Equal(first.AFindsWipe, []string{demoWipe}) {
		t.Errorf("profile a finds %v for its own tool, want %s", first.AFindsWipe, demoWipe)
	}
	if slices.Contains(first.AFindsEcho, demoEcho) {
		t.Errorf("profile a finds profile b's %s: %v", demoEcho, first.AFindsEcho)
	}
	if first.Cross != 404 {
		t.Errorf("a's session ID at b's path: HTTP %d, want 404", first.Cross)
	}
	if !strings.Contains(first.Unknown, `no profile \"nope\"`) || !strings.Contains(first.Unknown, "berth profile list") {
		t.Errorf("an unknown profile: %s", first.Unknown)
	}

	// berth status: both sessions, each with its profile.
	out, err := w.berth(ctx, "status", "--workspace", w.ws, "--json")
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	var st struct {
		Sessions []mcpexport.ServeSession `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json %q: %v", out, err)
	}
	var got []string
	for _, ss := range st.Sessions {
		got = append(got, ss.Profile+" "+string(ss.Mode)+" "+ss.Transport+" "+ss.Client)
		if ss.PID != s.cmd.Process.Pid {
			t.Errorf("session %+v: pid, want berth serve's %d", ss, s.cmd.Process.Pid)
		}
	}
	slices.Sort(got)
	if want := []string{"a lazy streamable-http ts-client-a 1.0.0", "b full streamable-http ts-client-b 1.0.0"}; !slices.Equal(got, want) {
		t.Errorf("status sessions %q, want %q", got, want)
	}
	if out, err = w.berth(ctx, "status", "--workspace", w.ws); err != nil || !strings.Contains(out, "Sessions of berth serve") || !strings.Contains(out, "ts-client-a") {
		t.Errorf("status: %v\n%s", err, out)
	}

	// Client a's call through berth_call_tool waits in the queue as a call
	// of wipe by profile a; berth approve runs it.
	p := w.pendingOf(ctx, t, "a")
	if p.Tool != demoWipe || !strings.Contains(string(p.Arguments), "from a") {
		t.Fatalf("pending %+v, want %s of profile a", p, demoWipe)
	}
	if out, err := w.berth(ctx, "approve", p.ID); err != nil {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	if !lines.Scan() || strings.Contains(lines.Text(), `"isError":true`) || !strings.Contains(lines.Text(), "wiped from a") {
		t.Fatalf("the approved call through berth_call_tool: %q %s", lines.Text(), errb.String())
	}
	if a := w.auditOf(p.ID); a == nil || a.Profile != "a" || a.Tool != demoWipe || a.Via != mcpexport.MetaCallTool || a.Outcome != mcpexport.OutcomeRan {
		t.Fatalf("audit of the approved call %+v, want %s of profile a via %s, ran", a, demoWipe, mcpexport.MetaCallTool)
	}

	// berth approvals: the waiting call of client b names profile b.
	p = w.pendingOf(ctx, t, "b")
	if p.Tool != demoWipe {
		t.Fatalf("pending %+v, want %s of profile b", p, demoWipe)
	}
	if out, err := w.berth(ctx, "approvals"); err != nil || !strings.Contains(out, "profile:     b") {
		t.Errorf("approvals: %v\n%s", err, out)
	}
	if out, err := w.berth(ctx, "deny", p.ID); err != nil {
		t.Fatalf("deny: %v\n%s", err, out)
	}
	if !lines.Scan() || !strings.Contains(lines.Text(), `"isError":true`) || !strings.Contains(lines.Text(), "berth deny") {
		t.Fatalf("the denied call: %q %s", lines.Text(), errb.String())
	}
	if a := w.auditOf(p.ID); a == nil || a.Profile != "b" {
		t.Fatalf("audit of the denied call %+v, want profile b", a)
	}
}

// pendingOf waits for berth approvals --json to list a call of profile.
func (w *world) pendingOf(ctx context.Context, t *testing.T, profile string) *mcpexport.Pending {
	t.Helper()
	for ctx.Err() == nil {
		out, err := w.berth(ctx, "approvals", "--json")
		if err != nil {
			t.Fatalf("approvals: %v\n%s", err, out)
		}
		var list []*mcpexport.Pending
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatal(err)
		}
		for _, p := range list {
			if p.Profile == profile {
				return p
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no call of profile %s waits in berth approvals", profile)
	return nil
}
