package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A remote that declares "oauth": {} (every MCP Registry remote without a
// credential header, every Claude Code remote without credentials) may
// never ask for a sign-in. berth status must not tell the operator such a
// server needs one, nor fail for it: only a server that asked (401) and
// waits is "needs sign-in", with --json's signIn.needsSignIn true and
// exit 1.
func TestStatusSignInOnlyWhenAsked(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "no-bus"))
	f := newFakeOAuth(t) // asks for a token (401 + protected-resource metadata)
	open := mcp.NewServer(&mcp.Implementation{Name: "open", Version: "1.0.0"}, nil)
	mcp.AddTool(open, &mcp.Tool{Name: "ping"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
	})
	openSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return open }, nil))
	t.Cleanup(openSrv.Close)

	home := t.TempDir()
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	env := map[string]string{"BERTH_HOME": filepath.Join(home, "berth"), "HOME": home, "PATH": os.Getenv("PATH")}
	getenv := func(k string) string { return env[k] }
	berth := func(_ io.Writer, args ...string) (int, string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := run(context.Background(), args, getenv, strings.NewReader(""), &out, &errb)
		return code, out.String() + errb.String()
	}
	must := func(args ...string) string {
		t.Helper()
		code, out := berth(nil, args...)
		if code != 0 {
			t.Fatalf("berth %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
		return out
	}
	add := func(name, url string) {
		t.Helper()
		bdir := filepath.Join(t.TempDir(), name)
		os.MkdirAll(bdir, 0o755)
		os.WriteFile(filepath.Join(bdir, "berth.json"), []byte(fmt.Sprintf(`{"manifestVersion": 1, "name": %q, "version": "1.0.0", "description": "a hosted server",
  "mcpServers": {"api": {"remote": {"transport": "streamable-http", "url": %q, "auth": {"oauth": {}}, "network": {"hosts": ["127.0.0.1"]}}}}}`, name, url)), 0o644)
		digest := strings.Fields(must("digest", bdir))
		must("trust", "--yes", "--allow-unsigned", "--digest", digest[len(digest)-1], bdir)
		must("enable", name, "--workspace", ws)
	}

	// Only the server that works without a token: status succeeds.
	add("open-api", openSrv.URL+"/mcp")
	code, text := berth(nil, "status", "--workspace", ws)
	if code != 0 {
		t.Errorf("status with a server that works without a token: exit %d, want 0\n%s", code, text)
	}
	if strings.Contains(text, "needs sign-in") {
		t.Errorf("status says a server that never asked needs a sign-in:\n%s", text)
	}
	if !strings.Contains(text, "open-api__api  not signed in; the server has not asked for a sign-in (berth login open-api__api signs in ahead)") {
		t.Errorf("status does not say the server has not asked:\n%s", text)
	}
	sts := statusOf(t, berth, ws)
	if len(sts) != 1 || sts[0].State != "running" || sts[0].SignIn == nil || sts[0].SignIn.SignedIn || sts[0].SignIn.NeedsSignIn || sts[0].SignIn.Login != "berth login open-api__api" {
		t.Fatalf("status --json: %+v", sts)
	}
	if code, out := berth(nil, "status", "--json", "--workspace", ws); code != 0 || !strings.Contains(out, `"needsSignIn": false`) {
		t.Errorf("status --json: exit %d, want 0 and needsSignIn false\n%s", code, out)
	}

	// A server that asks (401): it waits for a sign-in, status says so
	// and exits 1 naming the command.
	add("acme-notes", f.rs.URL+"/mcp")
	code, text = berth(nil, "status", "--workspace", ws)
	if code != 1 {
		t.Errorf("status with a server waiting for a sign-in: exit %d, want 1\n%s", code, text)
	}
	for _, want := range []string{
		"acme-notes__api  needs sign-in: berth login acme-notes__api (not signed in)",
		"open-api__api    not signed in; the server has not asked",
		"it waits for a sign-in: berth login acme-notes__api",
		"acme-notes__api  needs sign-in  streamable-http",
		"1 of 2 servers wait for a sign-in and do not run until then: berth login acme-notes__api",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("status does not say %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "restart 0 of") {
		t.Errorf("status says berth restarts a server that waits for a sign-in:\n%s", text)
	}
	sts = statusOf(t, berth, ws)
	if len(sts) != 2 || sts[0].ID != "acme-notes__api" || !sts[0].SignIn.NeedsSignIn || sts[0].SignIn.Reason != "not signed in" || sts[1].SignIn.NeedsSignIn {
		t.Fatalf("status --json: %+v %+v", sts[0].SignIn, sts[1].SignIn)
	}
}
