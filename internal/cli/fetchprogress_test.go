//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/internal/testkit"
)

// berth trust of a plugin with a fetched server, off a terminal: a line
// says what is fetched while it is, and the review names the file that
// supplies the npm settings.
func TestTrustFetchProgressAndSettings(t *testing.T) {
	bin := testkit.PeersBin(t)
	reg := testkit.NewNPMRegistry(t, testkit.NPMPackage{Name: "@acme/hello-mcp", Version: "1.0.0",
		Bin: map[string]string{"hello-mcp": "bin/server.js"}, Files: map[string]string{"bin/server.js": testkit.MCPServerJS("")}})
	home := t.TempDir()
	t.Cleanup(func() { makeWritable(home) })
	user := t.TempDir()
	// The operator's ~/.npmrc names the registry; berth's fetchers/npmrc
	// is left empty.
	if err := os.WriteFile(filepath.Join(user, ".npmrc"), []byte("registry="+reg.URL()+"\nstrict-ssl=false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "hello")
	os.MkdirAll(dir, 0o755)
	m := `{"manifestVersion": 1, "name": "hello", "version": "1.0.0", "description": "a fetched server",
  "mcpServers": {"main": {"stdio": {"command": "npx", "args": ["-y", "@acme/hello-mcp@1.0.0"]}}}}`
	if err := os.WriteFile(filepath.Join(dir, "berth.json"), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + user, "NPM_CONFIG_USERCONFIG=", "NODE_EXTRA_CA_CERTS=", "HTTPS_PROXY=", "https_proxy="}
	out, err := berthCmd(home, env, "digest", dir).Output()
	if err != nil {
		t.Fatal(err)
	}
	cmd := berthCmd(home, env, "trust", "--yes", "--allow-unsigned", "--digest", strings.TrimSpace(string(out)), dir)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("trust: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "fetching npm:@acme/hello-mcp@1.0.0 …\n") {
		t.Errorf("stderr does not say what is fetched:\n%s", stderr.String())
	}
	if !regexp.MustCompile(`(?m)^ +npm settings: registry from ` + regexp.QuoteMeta(filepath.Join(user, ".npmrc")) + `; not used: strict-ssl$`).MatchString(stdout.String()) {
		t.Errorf("the review does not name the file of the npm settings:\n%s", stdout.String())
	}
	if !strings.Contains(stdout.String(), "(from "+reg.URL()+")") {
		t.Errorf("not resolved from the operator's registry:\n%s", stdout.String())
	}
}
