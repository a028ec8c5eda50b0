//go:build unix

// The official MCP conformance suite's client scenarios against berth's
// remote-server client: e2e/internal/conformanceclient connects
// pool.DialRemote (the pool's guard and, for the auth scenarios, the
// sign-in of package signin with a real loopback redirect) to the URL the
// suite gives. Both suite versions; docs/conformance.md ("Client") lists
// every scenario's result and the reason of each expected failure.

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/peers"
	"github.com/berth-mcp/berth/internal/testkit"
)

// clientMustPass are the client scenarios issue 21 requires, by suite:
// each must have run and passed, check by check.
var clientMustPass = map[string][]string{
	"conformance": {
		"auth/basic-cimd", "auth/pre-registration", "auth/resource-mismatch",
		"auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
		"auth/offline-access-scope", "auth/offline-access-not-supported",
		"auth/2025-03-26-oauth-endpoint-fallback",
		"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
		"auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
	},
	"conformance-next": {
		"auth/basic-cimd", "auth/pre-registration", "auth/resource-mismatch",
		"auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
		"auth/offline-access-scope", "auth/offline-access-not-supported",
		"auth/iss-supported", "auth/iss-not-advertised", "auth/iss-supported-missing", "auth/iss-wrong-issuer", "auth/iss-unexpected", "auth/iss-normalized",
		"auth/metadata-issuer-mismatch", "auth/authorization-server-migration",
		"auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
		"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
		"auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
	},
}

// clientOtherGrants are the scenarios of other grant types, the only ones
// a baseline may list beside a scenario bug named in docs/conformance.md.
var clientOtherGrants = regexp.MustCompile(`^auth/(dpop.*|client-credentials-.*|enterprise-managed-authorization|wif.*|cross-app-access-.*)$`)

var clientBaselineRe = regexp.MustCompile(`(?m)^\s*-\s+([A-Za-z0-9_./-]+)\s*$`)

// clientBaseline are the scenario names a client baseline lists.
func clientBaseline(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, m := range clientBaselineRe.FindAllStringSubmatch(string(data), -1) {
		names[m[1]] = true
	}
	return names
}

var clientResultRe = regexp.MustCompile(`^(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)

// runConformanceClient runs `<suite> client --suite all --command CLIENT
// -o OUT --expected-failures BASELINE ARGS...` and reads every scenario's
// checks.json (auth scenarios sit in OUT/auth/).
func runConformanceClient(ctx context.Context, t *testing.T, suite, client, baseline string, args ...string) *confRun {
	t.Helper()
	out := t.TempDir()
	cmd := peers.Command(ctx, t, suite, append([]string{"client", "--suite", "all", "--command", client, "-o", out, "--expected-failures", baseline}, args...)...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish: %v\n%s", suite, ctx.Err(), buf.String())
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("%s: %v", suite, err)
	}
	r := &confRun{code: cmd.ProcessState.ExitCode(), output: buf.String(), scenarios: map[string][]confCheck{}}
	for _, sub := range []string{"", "auth"} {
		dirs, _ := os.ReadDir(filepath.Join(out, sub))
		for _, d := range dirs {
			m := clientResultRe.FindStringSubmatch(d.Name())
			if m == nil || !d.IsDir() {
				continue
			}
			name := m[1]
			if sub != "" {
				name = sub + "/" + name
			}
			data, err := os.ReadFile(filepath.Join(out, sub, d.Name(), "checks.json"))
			if err != nil {
				t.Fatalf("scenario %s: %v", name, err)
			}
			var checks []confCheck
			if err := json.Unmarshal(data, &checks); err != nil {
				t.Fatalf("scenario %s: %v", name, err)
			}
			r.scenarios[name] = append(r.scenarios[name], checks...)
		}
	}
	if len(r.scenarios) == 0 {
		t.Fatalf("%s wrote no results (exit %d):\n%s", suite, r.code, r.output)
	}
	return r
}

// TestConformanceClient runs every client scenario of both suite versions
// (for 0.2.0-alpha.12 also with --spec-version 2025-11-25 and
// 2026-07-28) through berth's remote-server client.
func TestConformanceClient(t *testing.T) {
	peers.Require(t)
	start := time.Now()
	client := testkit.Program(t, t.TempDir(), "github.com/berth-mcp/berth/e2e/internal/conformanceclient")
	for _, run := range []struct {
		name, suite, baseline string
		args                  []string
	}{
		{"0.1.16", "conformance", "client-legacy.yml", nil},
		{"0.1.16/2025-11-25", "conformance", "client-legacy.yml", []string{"--spec-version", "2025-11-25"}},
		{"0.2/all", "conformance-next", "client-next.yml", nil},
		{"0.2/2025-11-25", "conformance-next", "client-next.yml", []string{"--spec-version", "2025-11-25"}},
		{"0.2/2026-07-28", "conformance-next", "client-next.yml", []string{"--spec-version", "2026-07-28"}},
	} {
		t.Run(run.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			baseline := baselinePath(t, run.baseline)
			expected := clientBaseline(t, baseline)
			for name := range expected {
				if !clientOtherGrants.MatchString(name) && name != "auth/2025-03-26-oauth-metadata-backcompat" {
					t.Errorf("the baseline %s lists %s, which is not of another grant type", run.baseline, name)
				}
			}
			r := runConformanceClient(ctx, t, run.suite, client, baseline, run.args...)
			t.Logf("conformance client results:\n%s", r.summary())
			if r.code != 0 {
				t.Errorf("%s exited %d against its baseline %s:\n%s", run.suite, r.code, run.baseline, tail(r.output, 60))
			}
			for name := range r.scenarios {
				if expected[name] {
					continue
				}
				for _, c := range r.failed(name, nil) {
					t.Errorf("%s: %s %s: %s", name, c.Status, c.ID, c.ErrorMessage)
				}
			}
			if run.args == nil {
				for _, name := range clientMustPass[run.suite] {
					if _, ok := r.scenarios[name]; !ok {
						t.Errorf("%s did not run %s", run.suite, name)
					} else if expected[name] && name != "auth/2025-03-26-oauth-metadata-backcompat" {
						t.Errorf("%s must pass but is in the baseline", name)
					}
				}
				// The core scenarios run through the same client.
				for _, name := range []string{"initialize", "tools_call"} {
					if _, ok := r.scenarios[name]; !ok {
						t.Errorf("%s did not run the core scenario %s", run.suite, name)
					}
				}
			}
		})
	}
	t.Logf("TestConformanceClient took %s", time.Since(start).Round(time.Second))
}
