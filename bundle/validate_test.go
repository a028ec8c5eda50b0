package bundle

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// openManifest writes m as the berth.json of a fresh bundle and opens it.
func openManifest(t *testing.T, m map[string]any) (*Bundle, error) {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Open(context.Background(), dir, nil)
	t.Cleanup(func() { b.Close() })
	return b, err
}

// TestMessagesQuoteBundleText: a value from the bundle reaches a message
// only quoted, so it cannot send escape sequences to the terminal that
// shows the problems.
func TestMessagesQuoteBundleText(t *testing.T) {
	const esc = "\x1b[2J"
	_, err := openManifest(t, map[string]any{
		"manifestVersion": 1, "name": "x", "version": "1.0.0", "description": "d",
		"requires": map[string]any{"berth": ">=" + esc},
		"mcpServers": map[string]any{"s": map[string]any{"stdio": map[string]any{
			"command": "${bundle}/bin/" + esc,
			"args":    []string{"${bundle}/" + esc, "${bundle}/a/../" + esc},
			"cwd":     "${bundle}/" + esc,
		}}},
	})
	var ie *InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("Open = %v", err)
	}
	if len(ie.Problems) != 10 { // 5 rules, and each string also holds a control character
		t.Errorf("problems:\n%v", err)
	}
	for _, p := range ie.Problems {
		if strings.ContainsFunc(p.Message, unicode.IsControl) {
			t.Errorf("%s [%s] prints a control character: %q", p.Path, p.Rule, p.Message)
		}
	}
}

// TestHeaderNamesIgnoreCase: two headers that differ only in case are one
// HTTP header, and which value berth sent would depend on map order.
func TestHeaderNamesIgnoreCase(t *testing.T) {
	_, err := openManifest(t, map[string]any{
		"manifestVersion": 1, "name": "x", "version": "1.0.0", "description": "d",
		"mcpServers": map[string]any{"s": map[string]any{"remote": map[string]any{
			"transport": "sse", "url": "https://mcp.example.com/sse",
			"headers": map[string]any{"X-Team": map[string]any{"fromEnv": "A"}, "x-team": map[string]any{"fromEnv": "B"}},
			"network": map[string]any{"hosts": []string{"mcp.example.com"}},
		}}},
	})
	var ie *InvalidError
	if !errors.As(err, &ie) || len(ie.Problems) != 1 || ie.Problems[0].Rule != RuleDuplicateKey || ie.Problems[0].Path != "mcpServers.s.remote.headers.x-team" {
		t.Fatalf("Open = %v", err)
	}
}

// TestWorkspacePaths: a ${workspace} command or cwd is a clean path inside
// the workspace; "${workspace}-evil/x" or "${workspace}/../x" are host
// paths, which the review would otherwise call a workspace program.
func TestWorkspacePaths(t *testing.T) {
	for _, c := range []struct {
		command, cwd string
		rules        []string
	}{
		{"${workspace}/bin/server", "${workspace}", nil},
		{"${workspace}/bin/server", "${workspace}/data", nil},
		{"${workspace}", "", []string{RuleCommandForm}},
		{"${workspace}-evil/server", "", []string{RuleCommandForm}},
		{"${workspace}/../../usr/bin/curl", "", []string{RuleCommandForm}},
		{"${workspace}/./server", "", []string{RuleCommandForm}},
		{"node", "${workspace}/..", []string{RuleVariablePlacement}},
		{"node", "${workspace}-evil", []string{RuleVariablePlacement}},
		{"node", "${workspace}/data/", []string{RuleVariablePlacement}},
	} {
		stdio := map[string]any{"command": c.command}
		if c.cwd != "" {
			stdio["cwd"] = c.cwd
		}
		_, err := openManifest(t, map[string]any{
			"manifestVersion": 1, "name": "x", "version": "1.0.0", "description": "d",
			"mcpServers": map[string]any{"s": map[string]any{"stdio": stdio}},
		})
		var got []string
		var ie *InvalidError
		if errors.As(err, &ie) {
			for _, p := range ie.Problems {
				got = append(got, p.Rule)
			}
		} else if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.rules) {
			t.Errorf("command %q cwd %q: rules %q, want %q (%v)", c.command, c.cwd, got, c.rules, err)
		}
	}
}

func TestVersionLess(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"1.9.0", "1.10.0", true}, // numeric, not string, order
		{"1.10.0", "1.9.0", false},
		{"1.0.0-rc.1", "1.0.0", true}, // a pre-release sorts before its release
		{"1.0.0", "1.0.0-rc.1", false},
		{"1.0.0-alpha.2", "1.0.0-alpha.10", true},
		{"1.0.0", "1.0.0", false},
		{"v1.0.0", "1.0.0", false}, // not strict semver: string order
		{"1.0.0", "v1.0.0", true},
	} {
		if got := VersionLess(c.a, c.b); got != c.want {
			t.Errorf("VersionLess(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
