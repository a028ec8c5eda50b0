//go:build unix

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/peers"
	"github.com/berth-mcp/berth/internal/testkit"
)

// The tasks extension's scenarios of conformance 0.2.0-alpha.12
// (io.modelcontextprotocol/tasks, SEP-2663). tasks-status-notifications is
// pending in this pre-release: the suite reports it SKIPPED (its harness
// awaits a rewrite against subscriptions/listen).
var tasksScenarios = []string{
	"tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields",
	"tasks-request-state-removal", "tasks-mrtr-input", "tasks-request-headers",
	"tasks-dispatch-and-envelope", "tasks-status-notifications",
	"tasks-required-task-error", "tasks-mrtr-composition",
}

// TestConformanceTasks runs the tasks-* scenarios against `berth serve
// --http --stateless` with the tasks fixture (internal/testkit/taskserver)
// enabled as plugin "conf" over stdio, the suite reaching its tools by
// their upstream names (fixtureNames). Every check must pass (SKIPPED and
// INFO are not failures).
func TestConformanceTasks(t *testing.T) {
	peers.Require(t)
	w := newWorld(t)
	testkit.Program(t, w.bin, "github.com/berth-mcp/berth/internal/testkit/cmd/berth-taskserver")
	w.plugin(confPlugin, confServer, "berth-taskserver")
	w.policy(confPlugin+"__*", "allow")
	s := w.serve(1, "--http", "127.0.0.1:0", "--stateless", "--approval-timeout", "5s")
	url := fixtureNames(t, withToken(t, s))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, name := range tasksScenarios {
		t.Run(name, func(t *testing.T) {
			checks := runScenario(ctx, t, url, name)
			if len(checks) == 0 {
				t.Fatalf("scenario %s reported no checks", name)
			}
			for _, c := range checks {
				t.Logf("%-8s %s %s", c.Status, c.ID, c.ErrorMessage)
				if c.Status == "FAILURE" || c.Status == "WARNING" {
					t.Errorf("%s: %s %s: %s", name, c.Status, c.ID, c.ErrorMessage)
				}
			}
			if name != "tasks-status-notifications" && !slices.ContainsFunc(checks, func(c confCheck) bool { return c.Status == "SUCCESS" }) {
				t.Errorf("%s: no check passed", name)
			}
		})
	}
	if t.Failed() {
		t.Logf("berth serve's log:\n%s", s.log.String())
		logs, _ := filepath.Glob(filepath.Join(w.paths.Logs(), "*.log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			t.Logf("%s:\n%s", l, b)
		}
	}
}

// runScenario runs one scenario of conformance-next against url and
// returns its checks.
func runScenario(ctx context.Context, t *testing.T, url, scenario string) []confCheck {
	t.Helper()
	out := t.TempDir()
	cmd := peers.Command(ctx, t, "conformance-next", "server", "--url", url, "-o", out, "--scenario", scenario)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	_ = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("conformance-next did not finish: %v\n%s", ctx.Err(), buf.String())
	}
	dirs, _ := os.ReadDir(out)
	var checks []confCheck
	for _, d := range dirs {
		m := resultDirRe.FindStringSubmatch(d.Name())
		if m == nil || m[1] != scenario {
			continue
		}
		data, err := os.ReadFile(filepath.Join(out, d.Name(), "checks.json"))
		if err != nil {
			t.Fatalf("%v; conformance-next said:\n%s", err, tail(buf.String(), 40))
		}
		var cs []confCheck
		if err := json.Unmarshal(data, &cs); err != nil {
			t.Fatal(err)
		}
		checks = append(checks, cs...)
	}
	if len(checks) == 0 {
		t.Logf("conformance-next output:\n%s", tail(buf.String(), 40))
	}
	return checks
}

// taskPost sends one 2026-07-28 request to a stateless berth, declaring
// the tasks extension, and returns its result or error.
func taskPost(t *testing.T, url, method, name string, params map[string]any) (result, rpcErr map[string]any) {
	t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "tasks-e2e", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
		var msg struct {
			Result map[string]any `json:"result"`
			Error  map[string]any `json:"error"`
		}
		if json.Unmarshal([]byte(line), &msg) == nil && (msg.Result != nil || msg.Error != nil) {
			return msg.Result, msg.Error
		}
	}
	t.Fatalf("%s: no response in %q", method, data)
	return nil, nil
}

// A task's input requests (tasks/get) get what a call's get: the
// elicitation is marked with its origin; when the plugin's elicitation
// policy denies it, berth does not pass it on and the task is cancelled,
// with why.
func TestTaskInputRequestsUnderPolicy(t *testing.T) {
	w := newWorld(t)
	testkit.Program(t, w.bin, "github.com/berth-mcp/berth/internal/testkit/cmd/berth-taskserver")
	w.plugin(confPlugin, confServer, "berth-taskserver")
	w.policy(confPlugin+"__*", "allow")
	s := w.serve(1, "--http", "127.0.0.1:0", "--stateless", "--approval-timeout", "5s")
	url := withToken(t, s)
	start := func() string {
		res, e := taskPost(t, url, "tools/call", confPrefix+"confirm_delete", map[string]any{"name": confPrefix + "confirm_delete", "arguments": map[string]any{"filename": "a.txt"}})
		id, _ := res["taskId"].(string)
		if e != nil || res["resultType"] != "task" || !strings.HasPrefix(id, "berth-") {
			t.Fatalf("tools/call: %v %v", res, e)
		}
		return id
	}
	waitInput := func(id string) map[string]any {
		var got map[string]any
		testkit.Eventually(t, 10*time.Second, "the task to ask", func() bool {
			got, _ = taskPost(t, url, "tasks/get", id, map[string]any{"taskId": id})
			return got["status"] != "working"
		})
		return got
	}
	id := start()
	got := waitInput(id)
	msg := fmt.Sprint(got["inputRequests"])
	if got["status"] != "input_required" || !strings.Contains(msg, "[plugin conf, server srv] Delete a.txt?") || !strings.Contains(msg, "dev.berth/origin") {
		t.Fatalf("tasks/get: %v, want the elicitation marked with its origin", got)
	}
	taskPost(t, url, "tasks/cancel", id, map[string]any{"taskId": id})

	w.policy(confPlugin+"__elicitation", "deny")
	id = start()
	got = waitInput(id)
	if got["status"] != "cancelled" || got["inputRequests"] != nil || !strings.Contains(fmt.Sprint(got["statusMessage"]), "policy denies elicitation") {
		t.Fatalf("tasks/get under an elicitation deny: %v, want cancelled with why", got)
	}
}

// A task runs on a call its view allowed: when the profile it was
// created through stops offering its tool, the task is cancelled at its
// next request, as a deny cancels it.
func TestTaskEndsWhenItsToolLeavesTheView(t *testing.T) {
	w := newWorld(t)
	testkit.Program(t, w.bin, "github.com/berth-mcp/berth/internal/testkit/cmd/berth-taskserver")
	w.plugin(confPlugin, confServer, "berth-taskserver")
	w.policy(confPlugin+"__*", "allow")
	ctx := context.Background()
	if out, err := w.berth(ctx, "profile", "create", "p", "--workspace", w.ws, "--tool", confPrefix+"slow_compute"); err != nil {
		t.Fatal(out, err)
	}
	s := w.serve(1, "--http", "127.0.0.1:0", "--stateless", "--approval-timeout", "5s")
	url := strings.TrimSuffix(withToken(t, s), "/mcp") + "/profiles/p/mcp"
	res, e := taskPost(t, url, "tools/call", confPrefix+"slow_compute", map[string]any{"name": confPrefix + "slow_compute", "arguments": map[string]any{"seconds": 60}})
	id, _ := res["taskId"].(string)
	if e != nil || res["resultType"] != "task" || !strings.HasPrefix(id, "berth-") {
		t.Fatalf("tools/call: %v %v", res, e)
	}
	if got, e := taskPost(t, url, "tasks/get", id, map[string]any{"taskId": id}); e != nil || got["status"] != "working" {
		t.Fatalf("tasks/get: %v %v", got, e)
	}
	if out, err := w.berth(ctx, "profile", "create", "p", "--workspace", w.ws, "--replace", "--tool", confPrefix+"greet"); err != nil {
		t.Fatal(out, err)
	}
	var got map[string]any
	testkit.Eventually(t, 10*time.Second, "the task to be cancelled", func() bool {
		got, _ = taskPost(t, url, "tasks/get", id, map[string]any{"taskId": id})
		return got["status"] == "cancelled"
	})
	if !strings.Contains(fmt.Sprint(got["statusMessage"]), "no longer offers") {
		t.Fatalf("tasks/get after the profile dropped the tool: %v", got)
	}
}
