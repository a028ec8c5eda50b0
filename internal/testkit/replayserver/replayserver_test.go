//go:build unix

package replayserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/peers"
	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/internal/testkit/recorded"
	"github.com/berth-mcp/berth/internal/testkit/replayserver"
)

const pkg = "github.com/berth-mcp/berth/internal/testkit/cmd/berth-replay"

// TestReplayGoClient runs berth-replay over stdio for two recordings and
// checks through a go-sdk client that it lists exactly their tools (as
// go-sdk decodes them) and answers a call with the fixed text and, for a
// tool with an output schema, structured content.
func TestReplayGoClient(t *testing.T) {
	bin := testkit.Program(t, t.TempDir(), pkg)
	recs, err := replayserver.Select(recorded.Dir(), []string{"filesystem", "@modelcontextprotocol/server-memory"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "replay-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, "filesystem", "@modelcontextprotocol/server-memory")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []*mcp.Tool
	for _, r := range recs {
		want = append(want, r.Tools...)
	}
	if len(res.Tools) != len(want) {
		t.Fatalf("listed %d tools, recorded %d", len(res.Tools), len(want))
	}
	listed := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		listed[tl.Name] = tl
	}
	for _, w := range want {
		got, ok := listed[w.Name]
		if !ok {
			t.Errorf("recorded tool %s not listed", w.Name)
			continue
		}
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(w)
		if !bytes.Equal(gj, wj) {
			t.Errorf("tool %s listed as\n%s\nrecorded as\n%s", w.Name, gj, wj)
		}
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": "/x/y.txt", "head": 3}})
	if err != nil {
		t.Fatal(err)
	}
	text := r.Content[0].(*mcp.TextContent).Text
	if text != `replayed read_text_file with arguments {"head":3,"path":"/x/y.txt"}` {
		t.Errorf("answer %q", text)
	}
	if sc, _ := json.Marshal(r.StructuredContent); string(sc) != `{"content":""}` {
		t.Errorf("structured content %s, want {\"content\":\"\"} (read_text_file's output schema requires content)", sc)
	}
}

func TestSelectAndNewErrors(t *testing.T) {
	if _, err := replayserver.Select(recorded.Dir(), []string{"nonesuch"}); err == nil || !strings.Contains(err.Error(), `no recording "nonesuch"`) {
		t.Errorf("Select(nonesuch) = %v", err)
	}
	recs, err := replayserver.Select(recorded.Dir(), []string{"filesystem", "desktop-commander"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replayserver.New(recs); err == nil || !strings.Contains(err.Error(), "its own replay server") {
		t.Errorf("New of two recordings sharing read_file = %v, want the collision named", err)
	}
}

// tsReplayClient lists the tools of a stdio server with the TypeScript
// SDK client and calls each with {} (every call: the client checks
// structured content against a tool's output schema), printing the tool
// count and the texts.
const tsReplayClient = `
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
const [command, ...args] = process.argv.slice(1);
const client = new Client({ name: 'berth-replay-test', version: '1.0.0' });
await client.connect(new StdioClientTransport({ command, args }));
const { tools } = await client.listTools();
const texts = [];
for (const t of tools) {
  const r = await client.callTool({ name: t.name, arguments: {} });
  texts.push(r.content[0].text);
}
console.log(JSON.stringify({ count: tools.length, texts }));
await client.close();
`

// TestReplayTSClient: the real TypeScript SDK client lists every
// recorded tool of every recording (one replay server each) and calls
// each one, which it accepts only when the structured content matches
// the output schema.
func TestReplayTSClient(t *testing.T) {
	peers.Require(t)
	bin := testkit.Program(t, t.TempDir(), pkg)
	recs, err := recorded.Load(recorded.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := peers.Command(ctx, t, "node", "--input-type=module", "-e", tsReplayClient, bin, "-dir", recorded.Dir(), r.File)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Errorf("%s: TypeScript client: %v\n%s", r.File, err, errb.String())
			continue
		}
		var got struct {
			Count int      `json:"count"`
			Texts []string `json:"texts"`
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("%s: %v: %s", r.File, err, out.String())
		}
		if got.Count != len(r.Tools) {
			t.Errorf("%s: TypeScript client listed %d tools, recorded %d", r.File, got.Count, len(r.Tools))
		}
		// go-sdk lists tools in name order, not the recording's.
		var want []string
		for _, tl := range r.Tools {
			want = append(want, "replayed "+tl.Name+" with arguments {}")
		}
		sort.Strings(want)
		sort.Strings(got.Texts)
		if !slices.Equal(got.Texts, want) {
			t.Errorf("%s: answers\n%q\nwant\n%q", filepath.Base(r.File), got.Texts, want)
		}
	}
}
