package e2e

import (
	"bufio"
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/peers"
)

// tsProgressWaiter calls a tool with the TypeScript SDK client's own
// request timeout (argv[4] ms) and, when argv[5] is "reset",
// resetTimeoutOnProgress; onprogress makes the SDK send a progress token.
// It prints each progress ("progress SECONDS") and the outcome.
const tsProgressWaiter = `
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
const [url, tool, token, timeout, reset] = process.argv.slice(1);
const client = new Client({ name: 'berth-ts-keepalive', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: 'Bearer ' + token } } }));
try {
  const res = await client.callTool({ name: tool, arguments: { text: 'kept alive' } }, undefined, {
    timeout: Number(timeout), resetTimeoutOnProgress: reset === 'reset',
    onprogress: (p) => console.log('progress ' + p.progress),
  });
  console.log('result ' + JSON.stringify(res.content));
} catch (e) {
  console.log('error ' + e.message);
}
process.exit(0);
`

// TestKeepaliveWhileWaiting: while a call waits for approval, berth sends
// a progress notification every second to a client that sent a progress
// token, so a TypeScript SDK client with resetTimeoutOnProgress and a 3 s
// request timeout still gets the result after a wait longer than that
// (here, approved after 5 s of progress); the same client without
// resetTimeoutOnProgress gives up at its timeout.
func TestKeepaliveWhileWaiting(t *testing.T) {
	peers.Require(t)
	w := newWorld(t)
	w.demo()
	s := w.serve(1, "--http", "127.0.0.1:0", "--approval-timeout", "2m")
	pos := 0 // where in berth serve's log the next waiting call is
	for _, c := range []struct {
		reset string
		want  string
	}{{"reset", "result "}, {"no-reset", "error "}} {
		t.Run(c.reset, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := peers.Command(ctx, t, "node", "--input-type=module", "-e", tsProgressWaiter, s.urls[0], demoWipe, s.token, "3000", c.reset)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var errb strings.Builder
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			lines := bufio.NewScanner(out)
			var id string
			approved := false
			var last string
			for lines.Scan() {
				last = lines.Text()
				if v, ok := strings.CutPrefix(last, "progress "); ok && !approved {
					if f, _ := strconv.ParseFloat(v, 64); f >= 5 {
						// Longer than the client's 3 s timeout: approve now.
						if id == "" {
							m, next, err := s.log.wait(ctx, waitingRe, pos)
							if err != nil {
								t.Fatal(err)
							}
							id, pos = m[2], next
						}
						if o, err := w.berth(ctx, "approve", id); err != nil {
							t.Fatalf("berth approve %s: %v\n%s", id, err, o)
						}
						approved = true
					}
					continue
				}
				if strings.HasPrefix(last, "result ") || strings.HasPrefix(last, "error ") {
					break
				}
			}
			io.Copy(io.Discard, out)
			if !strings.HasPrefix(last, c.want) {
				t.Fatalf("the client ended with %q, want %q… (approved: %v)\n%s", last, c.want, approved, errb.String())
			}
			if c.want == "result " && (!approved || !strings.Contains(last, "kept alive")) {
				t.Fatalf("result %q, approved %v", last, approved)
			}
			if c.want == "error " {
				// Its request is cancelled: berth withdraws the call.
				if !strings.Contains(last, "timed out") || approved {
					t.Fatalf("the client without resetTimeoutOnProgress ended with %q (approved: %v), want its timeout", last, approved)
				}
			}
		})
	}
}
