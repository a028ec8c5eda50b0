package e2e

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/peers"
	"github.com/berth-mcp/berth/mcpexport"
)

// tsLongWaiter is tsWaiter with the text argument given as argv[4].
const tsLongWaiter = `
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
const [url, tool, token, text] = process.argv.slice(1);
const client = new Client({ name: 'berth-ts-waiter', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: 'Bearer ' + token } } }));
console.log('connected');
await client.callTool({ name: tool, arguments: { text } }, undefined, { timeout: 600000 });
`

// TestApprovalsShowsAWaitingCall: for a call that really waits in the
// queue (a TypeScript SDK client over Streamable HTTP with the token),
// `berth approvals` shows its TRANSPORT and AUTHENTICATED columns and
// summarizes an argument too long to list, and `berth approvals --full ID`
// shows that argument whole.
func TestApprovalsShowsAWaitingCall(t *testing.T) {
	peers.Require(t)
	w := newWorld(t)
	w.demo()
	s := w.serve(1, "--http", "127.0.0.1:0", "--approval-timeout", "2m")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	long := strings.Repeat("0123456789", 500) + "-the-end"
	cmd := peers.Command(ctx, t, "node", "--input-type=module", "-e", tsLongWaiter, s.urls[0], demoWipe, s.token, long)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	m, _, err := s.log.wait(ctx, waitingRe, 0)
	if err != nil {
		t.Fatalf("the call never waited: %v\n%s\n%s", err, errb.String(), s.log)
	}
	id := m[2]

	listing, err := w.berth(ctx, "approvals")
	if err != nil {
		t.Fatalf("berth approvals: %v\n%s", err, listing)
	}
	lines := strings.Split(listing, "\n")
	header := lines[0]
	tcol, acol := strings.Index(header, "TRANSPORT"), strings.Index(header, "AUTHENTICATED")
	if tcol < 0 || acol < 0 {
		t.Fatalf("berth approvals has no TRANSPORT and AUTHENTICATED columns:\n%s", listing)
	}
	var row string
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, id+" ") {
			row = l
			break
		}
	}
	if len(row) <= acol || !strings.HasPrefix(row[tcol:], mcpexport.TransportHTTP+" ") || !strings.HasPrefix(row[acol:], "yes ") {
		t.Fatalf("the row of %s does not say transport %s, authenticated yes:\n%s", id, mcpexport.TransportHTTP, listing)
	}
	if !regexp.MustCompile(`transport:\s+` + regexp.QuoteMeta(mcpexport.TransportHTTP) + `, `).MatchString(listing) {
		t.Errorf("the call's details do not name its transport:\n%s", listing)
	}
	if strings.Contains(listing, long) {
		t.Fatalf("berth approvals lists the %d-byte argument whole; it should summarize it", len(long))
	}

	full, err := w.berth(ctx, "approvals", "--full", id)
	if err != nil {
		t.Fatalf("berth approvals --full %s: %v\n%s", id, err, full)
	}
	if !strings.Contains(full, `"text": "`+long+`"`) || !strings.Contains(full, "berth approve "+id) {
		t.Fatalf("berth approvals --full %s does not show the argument whole:\n%.600s", id, full)
	}
}

// warnNoTokenRe is the warning berth serve logs when it serves without a
// token.
var warnNoTokenRe = regexp.MustCompile(`level=WARN msg="berth serve: serving WITHOUT a token \(--unsafe-no-token\): every local user can call this workspace's tools`)

// TestUnsafeNoTokenWarns: berth serve --unsafe-no-token logs, at WARN,
// that every local user can call the workspace's tools, before it
// listens; with a token it does not.
func TestUnsafeNoTokenWarns(t *testing.T) {
	w := newWorld(t)
	w.demo()
	s := w.serve(0, "--http", "127.0.0.1:0", "--unsafe-no-token")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := s.log.wait(ctx, regexp.MustCompile(`msg="berth serve: listening" url=\S+.* token=none`), 0); err != nil {
		t.Fatalf("berth serve --unsafe-no-token did not listen: %v\n%s", err, s.log)
	}
	if !warnNoTokenRe.MatchString(s.log.String()) {
		t.Fatalf("berth serve --unsafe-no-token did not warn:\n%s", s.log)
	}
	tok := w.serve(1, "--http", "127.0.0.1:0")
	if warnNoTokenRe.MatchString(tok.log.String()) {
		t.Fatalf("berth serve with a token warns that it has none:\n%s", tok.log)
	}
}
