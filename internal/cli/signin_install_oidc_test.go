//go:build unix

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/oidctest"
)

// The "done when", as an operator and Claude Desktop go through it:
// a curator publishes, in a signed (TUF) catalog served over HTTP on
// loopback, a hosted-style plugin whose remote server declares auth.oauth
// against a real authorization server (internal/oidctest: oidc-provider in
// front of a TypeScript SDK MCP server that requires its tokens). The
// operator adds the catalog, berth install --enable shows the review (which
// says whom it signs in to, where, and where the token goes) and installs
// it, berth connect claude-desktop writes Claude Desktop's configuration,
// one berth login --no-browser signs in (the test consents over HTTP as the
// human would), and a go-sdk client that starts the very command Claude
// Desktop's configuration names lists the tool on stdio and calls it, and
// the signed-in subject answers.
func TestSignInFromInstallOIDC(t *testing.T) {
	start := time.Now()
	srv := oidctest.Start(t, oidctest.Config{Resources: []oidctest.Resource{{Name: "a"}}})
	resource := srv.Resources["a"]

	// The curator: a catalog, a signing key, the plugin signed and added.
	cur := newOIDCHome(t)
	repo, keys := filepath.Join(cur.root, "repo"), filepath.Join(cur.root, "keys")
	bundleDir := filepath.Join(cur.root, "hosted")
	if err := os.MkdirAll(bundleDir, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Sprintf(`{"manifestVersion": 1, "name": "hosted", "version": "1.0.0", "description": "a hosted MCP server behind a sign-in", "mcpServers": {"api": %s}}`,
		remoteJSON(resource, fmt.Sprintf(`{"issuer": %q}`, srv.Issuer)))
	if err := os.WriteFile(filepath.Join(bundleDir, "berth.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	cur.must(t, "catalog", "init", repo, "--keys", keys, "--name", "acme")
	cur.must(t, "keygen", "--out", filepath.Join(cur.root, "acme"))
	cur.must(t, "sign", bundleDir, "--key", filepath.Join(cur.root, "acme.key"))
	cur.must(t, "signers", "add-key", "acme", filepath.Join(cur.root, "acme.pub"))
	cur.must(t, "catalog", "add", repo, bundleDir, "--keys", keys)

	// The catalog on a loopback HTTP server, as a curator's web host.
	var requests atomic.Int64
	files := http.FileServer(http.Dir(repo))
	cat := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(cat.Close)

	// The operator: the catalog pinned by its root, then install.
	h := newOIDCHome(t)
	berthPath, err := exec.LookPath("berth")
	if err != nil {
		t.Fatal(err)
	}
	// connect writes the running berth's path into Claude Desktop's
	// configuration; the tests' berth is this test binary under the name
	// berth, which only that name runs as berth.
	h.env = append(h.env, testExecutableEnv+"="+berthPath, testProcEnv+"="+filepath.Join(h.root, "noproc"))
	out := h.must(t, "marketplace", "add", "acme", cat.URL+"/", "--root", filepath.Join(repo, "1.root.json"))
	if !strings.Contains(out, "Added catalog acme from "+cat.URL) {
		t.Errorf("berth marketplace add says:\n%s", out)
	}
	if requests.Load() == 0 {
		t.Fatal("berth marketplace add made no request to the catalog's server")
	}
	out = h.must(t, "install", "hosted", "--enable", "--workspace", h.ws, "--yes")
	t.Logf("berth install:\n%s", out)
	review := strings.Join(strings.Fields(out), " ") // the review wraps lines
	for _, want := range []string{
		"signs in to " + resource + " at " + srv.Issuer,
		"the token is kept in berth's secret store and sent only to " + strings.TrimSuffix(resource, "/mcp"),
		"The review matches what catalog acme says about hosted 1.0.0",
		"Installed hosted@1.0.0 from catalog acme",
		"Enabled hosted@1.0.0 in",
	} {
		if !strings.Contains(review, want) {
			t.Errorf("berth install does not say %q:\n%s", want, out)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	h.must(t, "policy", "set", "hosted__*", "allow")

	// Claude Desktop's configuration: the entry berth connect writes.
	out = h.must(t, "connect", "claude-desktop", "--workspace", h.ws)
	if !strings.Contains(out, `Added server "berth"`) {
		t.Errorf("berth connect claude-desktop says:\n%s", out)
	}
	cfgPath := filepath.Join(h.home, "config", "Claude", "claude_desktop_config.json")
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatalf("Claude Desktop's configuration after berth connect: %v\n%s", err, out)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("%s: %v", cfgPath, err)
	}
	entry, ok := cfg.MCPServers["berth"]
	if !ok || entry.Command != berthPath || !slices.Equal(entry.Args, []string{"serve", "--workspace", h.ws}) {
		t.Fatalf("%s has no berth entry that runs berth serve --workspace %s:\n%s", cfgPath, h.ws, data)
	}
	for k, v := range entry.Env {
		if strings.Contains(strings.ToLower(k+v), "token") || strings.Contains(v, srv.Issuer) {
			t.Errorf("Claude Desktop's configuration carries %s=%s", k, v)
		}
	}
	desktop := func() *exec.Cmd {
		cmd := exec.Command(entry.Command, entry.Args...)
		cmd.Env = append(os.Environ(), h.env...)
		for k, v := range entry.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		return cmd
	}

	// Installed but not signed in: the call says what to run.
	s := h.serveCmd(t, desktop())
	if text, isErr := s.call(t, "hosted__api__whoami"); !isErr || !strings.Contains(text, "berth login hosted__api") {
		t.Fatalf("a call before the sign-in answered (error %v): %s\nwant an error naming berth login hosted__api", isErr, text)
	}
	s.close(t)

	// One berth login.
	out = h.login(t, srv, "hosted__api", "alice")
	if !strings.Contains(out, srv.Issuer) {
		t.Errorf("berth login does not name the authorization server %s:\n%s", srv.Issuer, out)
	}
	if n := srv.Count(oidctest.IsToken("authorization_code")); n != 1 {
		t.Fatalf("%d authorization_code grants after one berth login; want 1", n)
	}

	// Claude Desktop starts the entry's command, lists the tools, calls one.
	s = h.serveCmd(t, desktop())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var names []string
	for tool, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list through berth serve: %v", err)
		}
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "hosted__api__whoami") {
		t.Fatalf("berth serve lists %v; want hosted__api__whoami", names)
	}
	text, isErr := s.call(t, "hosted__api__whoami")
	if isErr || !strings.Contains(text, `"sub":"alice"`) || !strings.Contains(text, resource) {
		t.Fatalf("whoami after berth install and one berth login answered (error %v): %s\nwant the subject alice and the resource %s", isErr, text, resource)
	}
	s.close(t)
	srv.Wait(t, 10*time.Second, 1, "a call with a token", oidctest.IsCall("a"))
	if n := srv.Count(oidctest.IsToken("authorization_code")); n != 1 {
		t.Errorf("%d authorization_code grants in all; want the one of berth login", n)
	}
	t.Logf("from the catalog to the tool call: %s (the provider's start included)", time.Since(start).Round(time.Millisecond))
}

// serveCmd connects a go-sdk client to cmd (a berth serve) over its stdio.
func (h *oidcHome) serveCmd(t *testing.T, cmd *exec.Cmd) *oidcServe {
	t.Helper()
	s := &oidcServe{h: h, cmd: cmd}
	s.cmd.Stderr = &s.stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "claude-ai", Version: "0.1.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: s.cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect to %s: %v\n%s", cmd, err, s.stderr.String())
	}
	s.cs = cs
	t.Cleanup(func() { s.close(t) })
	return s
}
