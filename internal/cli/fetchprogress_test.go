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

// berth trust of a plugin with a fetched server, off a terminal, from a
// registry over TLS with a CA and a token of the operator's ~/.npmrc:
// a line says what is fetched while it is, the review names the file that
// supplies the npm settings (and the key berth does not use), and the
// server, started from the staged tree, has neither the token nor the
// variable it came from in its environment.
func TestTrustFetchOperatorSettings(t *testing.T) {
	const token = "s3cret-npm-token-0815"
	bin := testkit.PeersBin(t)
	reg := testkit.NewNPMRegistryTLS(t, token,
		testkit.NPMPackage{Name: "envdump", Version: "1.0.0", Files: map[string]string{"index.js": `module.exports = JSON.stringify(process.env);`}},
		testkit.NPMPackage{Name: "@acme/hello-mcp", Version: "1.0.0", Dependencies: map[string]string{"envdump": "1.0.0"},
			Bin: map[string]string{"hello-mcp": "bin/server.js"}, Files: map[string]string{"bin/server.js": testkit.MCPServerJS("envdump")}})
	home := t.TempDir()
	t.Cleanup(func() { makeWritable(home) })
	user := t.TempDir()
	ca := filepath.Join(user, "corp-ca.pem")
	if err := os.WriteFile(ca, reg.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimSuffix(strings.TrimPrefix(reg.URL(), "https://"), "/")
	rc := "registry=" + reg.URL() + "\n//" + host + "/:_authToken=${NPM_TOKEN}\ncafile=" + ca + "\nstrict-ssl=false\n"
	if err := os.WriteFile(filepath.Join(user, ".npmrc"), []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "hello")
	os.MkdirAll(dir, 0o755)
	m := `{"manifestVersion": 1, "name": "hello", "version": "1.0.0", "description": "a fetched server",
  "mcpServers": {"main": {"stdio": {"command": "npx", "args": ["-y", "@acme/hello-mcp@1.0.0"]}}}}`
	if err := os.WriteFile(filepath.Join(dir, "berth.json"), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + user, "NPM_TOKEN=" + token,
		"NPM_CONFIG_USERCONFIG=", "NODE_EXTRA_CA_CERTS=", "HTTPS_PROXY=", "https_proxy="}
	run := func(args ...string) (string, string) {
		t.Helper()
		cmd := berthCmd(home, env, args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("berth %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	digest, _ := run("digest", dir)
	stdout, stderr := run("trust", "--yes", "--allow-unsigned", "--digest", strings.TrimSpace(digest), dir)
	if !strings.Contains(stderr, "fetching npm:@acme/hello-mcp@1.0.0 …\n") {
		t.Errorf("stderr does not say what is fetched:\n%s", stderr)
	}
	want := `(?m)^ +npm settings: registry, //` + regexp.QuoteMeta(host) + `/:_authToken, cafile from ` + regexp.QuoteMeta(filepath.Join(user, ".npmrc")) + `; not used: strict-ssl$`
	if !regexp.MustCompile(want).MatchString(stdout) {
		t.Errorf("the review does not name the file of the npm settings:\n%s", stdout)
	}
	if !strings.Contains(stdout, "(from "+reg.URL()+")") || strings.Contains(stdout+stderr, token) {
		t.Errorf("not resolved from the operator's registry, or the token shown:\n%s%s", stdout, stderr)
	}
	reg.Close()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	run("enable", "hello", "--workspace", ws)
	out, _ := run("call", "hello__main__hello", "--workspace", ws, "--yes")
	if !strings.Contains(out, `"PATH"`) {
		t.Fatalf("the server did not show its environment:\n%s", out)
	}
	if strings.Contains(out, token) || strings.Contains(out, "NPM_TOKEN") || strings.Contains(strings.ToLower(out), "npm_config_userconfig") {
		t.Errorf("the server's environment holds the registry token or npm's configuration:\n%s", out)
	}
}
