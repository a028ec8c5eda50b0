package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// berth serve, run as a process over stdio the way MCP clients run it,
// offers a plugin's native tools (the example provider, built here) beside
// its stdio server's: a client lists them as <plugin>__<tool> and calls
// them; a destructive one waits in the approval queue until `berth
// approve`; a staged executable swapped while serve runs takes the
// plugin's tools out of the catalog and fails its calls closed (from the
// CLI: exit 5, naming the file).
func TestServeNativeTools(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("process groups and sh")
	}
	ctx := context.Background()
	bin, home := t.TempDir(), t.TempDir()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	buildPrograms(t, bin, "github.com/berth-mcp/berth/pool/internal/testserver/berth-testserver",
		"github.com/berth-mcp/berth/examples/fmttools")
	t.Cleanup(func() {
		// Snapshots are read-only; make them removable.
		filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o700)
			}
			return nil
		})
	})

	// Trust (unsigned) and enable a bundle with both kinds.
	dir := filepath.Join(t.TempDir(), "demo")
	os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
	exe, err := os.ReadFile(filepath.Join(bin, "fmttools"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "bin", "fmt-tools"), exe, 0o755)
	os.WriteFile(filepath.Join(dir, "berth.json"), []byte(`{"manifestVersion": 1, "name": "demo", "version": "1.0.0",
	  "description": "a test plugin with a native tool provider",
	  "mcpServers": {"main": {"stdio": {"command": "berth-testserver", "args": ["-tools", "echo"]}}},
	  "nativeTools": {"fmt": {"executable": "${bundle}/bin/fmt-tools"}}}`), 0o644)
	paths, err := store.NewPaths(home)
	if err != nil {
		t.Fatal(err)
	}
	st := store.Open(paths, nil)
	b, err := bundle.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	digest, _ := store.ParseDigest(b.Digest)
	b.Close()
	rec, err := st.Trust(ctx, dir, &store.TrustOptions{UnsignedUnsafe: true, Digest: digest})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Enable(ctx, st, ws, "demo", ""); err != nil {
		t.Fatal(err)
	}
	for _, r := range []store.PolicyRule{{Pattern: "demo__*", Action: store.ActionAllow}} {
		if err := st.SetPolicy(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	data := []byte(`{"b":[1,2],"a":"x"}`)
	os.WriteFile(filepath.Join(ws, "data.json"), data, 0o644)

	cmd := berthCmd(home, []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}, "serve", "--workspace", ws)
	stderr, err := os.Create(filepath.Join(t.TempDir(), "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	t.Cleanup(func() {
		stderr.Close()
		if t.Failed() {
			b, _ := os.ReadFile(stderr.Name())
			t.Logf("berth serve's stderr:\n%s", b)
		}
	})
	client := mcp.NewClient(&mcp.Implementation{Name: "native-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("call %s: %v", name, err)
		}
		return res
	}
	lres, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lres.Tools {
		names = append(names, tl.Name)
		if tl.Name == "demo__fmt__format_json_in_place" && (tl.Annotations == nil || tl.Annotations.DestructiveHint == nil || !*tl.Annotations.DestructiveHint) {
			t.Errorf("annotations of %s not passed through: %+v", tl.Name, tl.Annotations)
		}
	}
	slices.Sort(names)
	if want := []string{"demo__fmt__format_json", "demo__fmt__format_json_in_place", "demo__fmt__hash_file", "demo__main__echo"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	res := call("demo__fmt__hash_file", map[string]any{"path": "data.json"})
	sum := sha256.Sum256(data)
	sc, _ := json.Marshal(res.StructuredContent)
	if res.IsError || !strings.Contains(string(sc), `"sha256":"`+hex.EncodeToString(sum[:])+`"`) {
		t.Fatalf("hash_file: %s %+v", sc, res.Content)
	}
	res = call("demo__fmt__format_json", map[string]any{"path": "data.json"})
	if res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "{\n  \"b\": [\n    1,\n    2\n  ],\n  \"a\": \"x\"\n}\n" {
		t.Fatalf("format_json: %+v", res.Content)
	}

	// The destructive tool asks despite the glob allow: this client has no
	// elicitation, so the call waits in the queue for berth approve.
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "demo__fmt__format_json_in_place", Arguments: map[string]any{"path": "data.json"}})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		done <- res
	}()
	var id string
	if !testkit.Poll(30*time.Second, 50*time.Millisecond, func() bool {
		var pending []struct {
			ID, Tool, Server, Workspace string
			Annotations                 map[string]any
		}
		json.Unmarshal([]byte(runBerth(t, home, "approvals", "--json")), &pending)
		for _, p := range pending {
			if p.Tool == "demo__fmt__format_json_in_place" && p.Server == "fmt" {
				id = p.ID
				// The queue carries the annotations as MCP's fields, and
				// the workspace that asks.
				want := map[string]any{"title": "Format JSON in place", "destructiveHint": true, "idempotentHint": true, "openWorldHint": false}
				if !reflect.DeepEqual(p.Annotations, want) || p.Workspace != ws {
					t.Errorf("approvals --json: annotations %v, workspace %q; want %v, %s", p.Annotations, p.Workspace, want, ws)
				}
			}
		}
		return id != ""
	}) {
		t.Fatal("the destructive call never reached the approval queue")
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "data.json")); string(b) != string(data) {
		t.Fatal("the destructive call ran before its approval")
	}
	var dec decisionJSON
	if err := json.Unmarshal([]byte(runBerth(t, home, "approve", id, "--json")), &dec); err != nil || dec.ID != id || !dec.Allowed || dec.Always || dec.Tool != "demo__fmt__format_json_in_place" {
		t.Fatalf("approve --json: %+v, %v", dec, err)
	}
	if res := <-done; res.IsError {
		t.Fatalf("format_json_in_place after approval: %+v", res.Content)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "data.json")); !strings.Contains(string(b), "\n  \"a\": \"x\"") {
		t.Fatalf("not formatted in place: %s", b)
	}

	// Swap the staged executable while serve runs (the running binary
	// cannot be written to): the next call fails closed.
	staged := filepath.Join(rec.Snapshot, "bin", "fmt-tools")
	os.Chmod(filepath.Dir(staged), 0o755)
	if err := os.WriteFile(staged+".new", append(exe, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(staged+".new", staged); err != nil {
		t.Fatal(err)
	}
	// serve's pool finds the drift in the background: the native tools
	// leave the catalog, and a call of one fails.
	testkit.Eventually(t, 10*time.Second, "the drifted plugin's tools to leave the list", func() bool {
		lres, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		return !slices.ContainsFunc(lres.Tools, func(tl *mcp.Tool) bool { return strings.HasPrefix(tl.Name, "demo") })
	})
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "demo__fmt__hash_file", Arguments: map[string]any{"path": "data.json"}}); err == nil && !res.IsError {
		t.Fatalf("a drifted native tool ran: %+v", res.Content)
	}
	// The same call from the CLI says why: exit 5.
	out, err := berthCmd(home, nil, "call", "demo__fmt__hash_file", "--workspace", ws, "--arg", "path=data.json", "--yes").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 5 || !strings.Contains(string(out), "changed bin/fmt-tools") || !strings.Contains(string(out), "berth verify") {
		t.Fatalf("berth call after the swap: %v\n%s", err, out)
	}
}
