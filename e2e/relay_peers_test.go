package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/peers"
)

// tsRelayClient is a TypeScript SDK client with sampling and elicitation
// that sets a log level and calls server-everything's progress, sampling
// and elicitation tools through berth, printing what it got.
const tsRelayClient = `
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const [url, token, prefix] = process.argv.slice(1);
const client = new Client({ name: 'berth-ts-relay-test', version: '1.0.0' }, { capabilities: { sampling: {}, elicitation: { form: {} } } });
const out = { progress: [], sampled: [], asked: [], logs: [], results: {} };
client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
  out.sampled.push(req.params.messages.map(m => m.content.text).join(' '));
  return { role: 'assistant', model: 'test-model', content: { type: 'text', text: 'Paris' }, stopReason: 'endTurn' };
});
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  out.asked.push(req.params.message);
  return { action: 'decline' };
});
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { out.logs.push(n.params.logger || ''); });
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: 'Bearer ' + token } } });
await client.connect(transport);
await client.setLoggingLevel('debug');
const text = (r) => (r.content || []).map(c => c.text || '').join('\n');
out.results.progress = text(await client.callTool({ name: prefix + 'trigger-long-running-operation', arguments: { duration: 1, steps: 3 } }, undefined, { onprogress: (p) => out.progress.push(p.progress + '/' + p.total) }));
out.results.sampling = text(await client.callTool({ name: prefix + 'trigger-sampling-request', arguments: { prompt: 'capital of France?', maxTokens: 5 } }));
out.results.elicitation = text(await client.callTool({ name: prefix + 'trigger-elicitation-request', arguments: {} }));
await client.callTool({ name: prefix + 'toggle-simulated-logging', arguments: {} });
await new Promise(r => setTimeout(r, 6000));
console.log(JSON.stringify(out));
await client.close();
`

// TestTypeScriptSDKRelayThroughServerEverything: server-everything's
// progress, sampling, elicitation and log messages reach a TypeScript SDK
// client through berth serve --http: progress under the client's token,
// in order; sampling and elicitation asked of that client (the
// elicitation naming the plugin and server); log messages under a logger
// naming them.
func TestTypeScriptSDKRelayThroughServerEverything(t *testing.T) {
	dir := peers.Require(t)
	node, err := peers.Node22()
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t)
	// Through the package's npm bin link: its npm tree is the program's
	// runtime prefix, all a confined server may run and read of it.
	w.path = append([]string{filepath.Join(dir, "node_modules", ".bin"), filepath.Dir(node)}, w.path...)
	w.plugin("everything", "srv", "mcp-server-everything", "stdio")
	const prefix = "everything__srv__"
	w.policy("everything__*", "allow")
	s := w.serve(1, "--http", "127.0.0.1:0", "--approval-timeout", "2s")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := peers.Command(ctx, t, "node", "--input-type=module", "-e", tsRelayClient, s.urls[0], s.token, prefix)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("TypeScript client: %v\n%s\nberth serve:\n%s", err, stderr.String(), s.log)
	}
	var out struct {
		Progress []string          `json:"progress"`
		Sampled  []string          `json:"sampled"`
		Asked    []string          `json:"asked"`
		Logs     []string          `json:"logs"`
		Results  map[string]string `json:"results"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("TypeScript client printed %q: %v", stdout.String(), err)
	}
	if strings.Join(out.Progress, ",") != "1/3,2/3,3/3" {
		t.Errorf("progress through berth: %v, want 1/3,2/3,3/3 (result %q)", out.Progress, out.Results["progress"])
	}
	if len(out.Sampled) != 1 || !strings.Contains(out.Sampled[0], "capital of France?") || !strings.Contains(out.Results["sampling"], "Paris") {
		t.Errorf("sampling through berth: asked %q, result %q", out.Sampled, out.Results["sampling"])
	}
	if len(out.Asked) != 1 || !strings.HasPrefix(out.Asked[0], "[plugin everything, server srv] ") {
		t.Errorf("elicitation through berth: %q (result %q)", out.Asked, out.Results["elicitation"])
	}
	found := false
	for _, l := range out.Logs {
		if strings.HasPrefix(l, "everything__srv") {
			found = true
		} else {
			t.Errorf("a log message with logger %q", l)
		}
	}
	if !found {
		t.Errorf("no log message of server-everything reached the client (loggers %q)", out.Logs)
	}
}
