//go:build unix

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
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
