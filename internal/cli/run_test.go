package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/store"
)

// testApp is an app for calling run functions directly: no process, no
// argument parsing, its own BERTH_HOME, and buffers for its output.
func testApp(t *testing.T) (a *app, stdout, stderr *bytes.Buffer) {
	t.Helper()
	home := filepath.Join(t.TempDir(), "berth-home")
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	getenv := func(k string) string {
		if k == "BERTH_HOME" {
			return home
		}
		return ""
	}
	return &app{stdin: strings.NewReader(""), stdout: stdout, stderr: stderr, getenv: getenv}, stdout, stderr
}

// TestRunConfigDirectly sets and reads a setting through the run
// functions of config set and config get.
func TestRunConfigDirectly(t *testing.T) {
	ctx := context.Background()
	a, stdout, _ := testApp(t)
	if err := runConfigSet(ctx, a, &configSetOptions{Key: "min-release-age", Value: "3d"}); err != nil {
		t.Fatal(err)
	}
	if got, want := stdout.String(), "min-release-age is 72h0m0s: berth install, sync and upgrade skip versions released less than 72h0m0s ago.\n"; got != want {
		t.Errorf("config set printed %q, want %q", got, want)
	}
	stdout.Reset()
	if err := runConfigGet(ctx, a, &configGetOptions{Keys: []string{"min-release-age"}, JSON: true}); err != nil {
		t.Fatal(err)
	}
	var got configJSON
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("config get --json printed %q: %v", stdout, err)
	}
	if got.MinReleaseAge != "72h0m0s" {
		t.Errorf("min-release-age = %q, want 72h0m0s", got.MinReleaseAge)
	}
	err := runConfigSet(ctx, a, &configSetOptions{Key: "max-release-age", Value: "1d"})
	if exitCode(err) != ExitUsage {
		t.Errorf("an unknown key gave %v (exit %d), want a usage error", err, exitCode(err))
	}
}

// TestRunPolicyDirectly sets, lists and removes a rule through the run
// functions of the policy subcommands.
func TestRunPolicyDirectly(t *testing.T) {
	ctx := context.Background()
	a, stdout, _ := testApp(t)
	rule := store.PolicyRule{Pattern: "acme-notes__notes__delete_*", Action: store.ActionDeny}
	if err := runPolicySet(ctx, a, &policySetOptions{Rule: rule}); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if err := runPolicyList(ctx, a, &policyListOptions{JSON: true}); err != nil {
		t.Fatal(err)
	}
	var list policyJSON
	if err := json.Unmarshal(stdout.Bytes(), &list); err != nil {
		t.Fatalf("policy list --json printed %q: %v", stdout, err)
	}
	if len(list.Rules) != 1 || list.Rules[0].Pattern != rule.Pattern || list.Rules[0].Action != rule.Action || list.Rules[0].Plugin != "acme-notes" {
		t.Errorf("policy list = %+v, want the one rule %+v of plugin acme-notes", list.Rules, rule)
	}
	if err := runPolicyUnset(ctx, a, &policyUnsetOptions{Pattern: rule.Pattern}); err != nil {
		t.Fatal(err)
	}
	if err := runPolicyUnset(ctx, a, &policyUnsetOptions{Pattern: rule.Pattern}); err == nil || exitCode(err) != ExitFailure {
		t.Errorf("removing a rule twice gave %v, want a failure (exit 1)", err)
	}
	err := runPolicySet(ctx, a, &policySetOptions{Rule: store.PolicyRule{Pattern: "acme-*", Action: store.ActionAllow}})
	if exitCode(err) != ExitUsage {
		t.Errorf("a pattern of no one plugin gave %v, want a usage error", err)
	}
}

// TestRunInstallRefusesBeforeState checks that the options install
// refuses are refused by runInstall itself, before any state is read.
func TestRunInstallRefusesBeforeState(t *testing.T) {
	ctx := context.Background()
	for _, opts := range []*installOptions{
		{Ref: "acme-notes", JSON: true},
		{Ref: "acme-notes", Digest: "sha256:zz"},
		{Ref: "acme-notes", Catalog: "Not A Name"},
		{Ref: "acme notes"},
	} {
		a, stdout, _ := testApp(t)
		err := runInstall(ctx, a, opts)
		if exitCode(err) != ExitUsage {
			t.Errorf("runInstall(%+v) = %v, want a usage error", opts, err)
		}
		if stdout.Len() > 0 {
			t.Errorf("runInstall(%+v) printed %q", opts, stdout)
		}
	}
}

// TestRunLockDirectly writes the lock of a workspace with nothing
// enabled through runLock, and reads it back through runSync --check.
func TestRunLockDirectly(t *testing.T) {
	ctx := context.Background()
	a, stdout, _ := testApp(t)
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := runLock(ctx, a, &lockOptions{Workspace: ws}); err != nil {
		t.Fatal(err)
	}
	if got, want := stdout.String(), "Wrote "+filepath.Join(ws, "berth.lock")+": 0 plugin(s).\n"; got != want {
		t.Errorf("lock printed %q, want %q", got, want)
	}
	stdout.Reset()
	if err := runSync(ctx, a, &syncOptions{Workspace: ws, Check: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := stdout.String(), ws+" is in step with its berth.lock (0 plugin(s)).\n"; got != want {
		t.Errorf("sync --check printed %q, want %q", got, want)
	}
}
