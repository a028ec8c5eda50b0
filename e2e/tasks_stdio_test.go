//go:build unix

package e2e

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/testkit"
)

// TestTasksThroughStdio: `berth serve` over stdio (Claude Desktop's path)
// passes the tasks extension through for a 2026-07-28 client, with the
// tasks fixture as plugin "conf": server/discover advertises it, a
// task-augmented call gets a CreateTaskResult with berth's task ID,
// tasks/get and tasks/cancel reach the task, an unknown ID is -32602, and
// the task's notifications/tasks/status come down the pipe with berth's ID.
func TestTasksThroughStdio(t *testing.T) {
	w := newWorld(t)
	testkit.Program(t, w.bin, "github.com/berth-mcp/berth/internal/testkit/cmd/berth-taskserver")
	w.plugin(confPlugin, confServer, "berth-taskserver")
	w.policy(confPlugin+"__*", "allow")
	cmd := exec.Command(w.berthPath(), "serve", "--workspace", w.ws, "--approval-timeout", "5s")
	cmd.Env = w.env()
	stderr := newLineLog()
	cmd.Stderr = stderr
	cmd.SysProcAttr = dieWithParent()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	msgs := make(chan map[string]any, 256)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				msgs <- m
			}
		}
		close(msgs)
	}()
	meta := func(tasks bool) map[string]any {
		caps := map[string]any{}
		if tasks {
			caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
		}
		return map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": caps,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"}}
	}
	var notes []map[string]any
	seq := 0
	call := func(method string, params map[string]any) map[string]any {
		t.Helper()
		seq++
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": seq, "method": method, "params": params})
		if _, err := in.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
		deadline := time.After(60 * time.Second)
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					t.Fatalf("berth serve closed stdout; its log:\n%s", stderr.String())
				}
				if id, _ := m["id"].(float64); m["method"] == nil && int(id) == seq {
					return m
				}
				if m["method"] == "notifications/tasks/status" {
					notes = append(notes, m["params"].(map[string]any))
				}
			case <-deadline:
				t.Fatalf("no answer to %s; berth serve's log:\n%s", method, stderr.String())
			}
		}
	}
	code := func(m map[string]any) int {
		e, _ := m["error"].(map[string]any)
		c, _ := e["code"].(float64)
		return int(c)
	}

	d := call("server/discover", map[string]any{"_meta": meta(true)})
	r, _ := d["result"].(map[string]any)
	caps, _ := r["capabilities"].(map[string]any)
	ext, _ := caps["extensions"].(map[string]any)
	if _, ok := ext["io.modelcontextprotocol/tasks"]; !ok {
		t.Fatalf("server/discover over stdio does not advertise the tasks extension: %v", d)
	}
	tool := confPlugin + "__" + confServer + "__slow_compute"
	start := func(seconds int) string {
		t.Helper()
		m := call("tools/call", map[string]any{"name": tool, "arguments": map[string]any{"seconds": seconds, "label": "e2e"}, "_meta": meta(true)})
		res, _ := m["result"].(map[string]any)
		id, _ := res["taskId"].(string)
		if res["resultType"] != "task" || !strings.HasPrefix(id, "berth-") {
			t.Fatalf("a task-augmented call answered %v, want a CreateTaskResult with berth's task ID", m)
		}
		return id
	}
	task := func(method, id string) map[string]any {
		return call(method, map[string]any{"taskId": id, "_meta": meta(true)})
	}
	id := start(1)
	if c := code(task("tasks/get", "berth-unknown")); c != -32602 {
		t.Fatalf("tasks/get of an unknown task: code %d, want -32602", c)
	}
	testkit.Eventually(t, 30*time.Second, "the task completed", func() bool {
		g, _ := task("tasks/get", id)["result"].(map[string]any)
		if g["taskId"] != id {
			t.Fatalf("tasks/get: %v", g)
		}
		return g["status"] == "completed"
	})
	long := start(60)
	if c := code(task("tasks/cancel", long)); c != 0 {
		t.Fatalf("tasks/cancel: code %d", c)
	}
	if g, _ := task("tasks/get", long)["result"].(map[string]any); g["status"] != "cancelled" {
		t.Fatalf("a cancelled task's tasks/get: %v", g)
	}
	completed := func() bool {
		for _, n := range notes {
			if n["taskId"] != id && n["taskId"] != long {
				t.Fatalf("a status notification names %v, not berth's task ID", n["taskId"])
			}
			if n["taskId"] == id && n["status"] == "completed" {
				return true
			}
		}
		return false
	}
	deadline := time.After(20 * time.Second)
	for !completed() {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatalf("berth serve closed stdout; its log:\n%s", stderr.String())
			}
			if m["method"] == "notifications/tasks/status" {
				notes = append(notes, m["params"].(map[string]any))
			}
		case <-deadline:
			t.Fatalf("no completed status notification for task %s reached the client: %v", id, notes)
		}
	}
}
