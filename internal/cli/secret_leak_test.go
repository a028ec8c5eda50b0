package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/keyringtest"
)

// A secret stored with berth secret set reaches the server that declares
// it and nothing else: no output of any berth command, no log, no audit
// entry, no client configuration file, no backup, no file of $BERTH_HOME
// but the store's own values file (for the file backend). Run for the
// file backend always, and for the keychain where a Secret Service runs.
func TestSecretValueLeaksNowhere(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the test server runs under sh")
	}
	bin := t.TempDir()
	buildPrograms(t, bin, "github.com/berth-mcp/berth/pool/internal/testserver/berth-testserver")
	t.Run("file", func(t *testing.T) {
		t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "no-bus"))
		leakTest(t, bin, "file")
	})
	t.Run("keychain", func(t *testing.T) {
		svc := keyringtest.Start(t)
		for _, kv := range svc.Env {
			if k, v, _ := strings.Cut(kv, "="); k == "DBUS_SESSION_BUS_ADDRESS" {
				t.Setenv(k, v)
			}
		}
		leakTest(t, bin, "keychain")
	})
}

func leakTest(t *testing.T, bin, backend string) {
	const value = "s3cr3t-LEAK-canary-7f0c2d"
	home, ws := t.TempDir(), t.TempDir()
	ws, _ = filepath.EvalSymlinks(ws)
	berthHome := filepath.Join(home, "berth")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	env := map[string]string{"BERTH_HOME": berthHome, "HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config"),
		"PATH": os.Getenv("PATH"), "BERTH_TEST_EXECUTABLE": "/opt/berth/bin/berth", "BERTH_TEST_PROC": t.TempDir()}
	getenv := func(k string) string { return env[k] }
	var outputs bytes.Buffer
	berth := func(stdin string, args ...string) int {
		t.Helper()
		var out, errb bytes.Buffer
		code := run(context.Background(), args, getenv, strings.NewReader(stdin), &out, &errb)
		outputs.Write(out.Bytes())
		outputs.Write(errb.Bytes())
		return code
	}
	bdir := filepath.Join(t.TempDir(), "leak")
	os.MkdirAll(bdir, 0o755)
	os.WriteFile(filepath.Join(bdir, "berth.json"), []byte(`{"manifestVersion": 1, "name": "leak", "version": "1.0.0", "description": "a test plugin",
  "mcpServers": {
    "main": {"stdio": {"command": "berth-testserver", "args": ["-tools", "env,echo,fail"], "env": {"TOKEN": {"fromEnv": "LEAK_TOKEN"}}}},
    "other": {"stdio": {"command": "berth-testserver", "args": ["-tools", "env"]}}
  }}`), 0o644)

	// The secret is set before the plugin is trusted, so it is bound to
	// it by name (set without --plugin would bind no plugin yet).
	if c := berth(value+"\n", "secret", "set", "LEAK_TOKEN", "--store", backend, "--plugin", "leak"); c != 0 {
		t.Fatalf("secret set: exit %d\n%s", c, outputs.String())
	}
	var digest bytes.Buffer
	run(context.Background(), []string{"digest", bdir}, getenv, strings.NewReader(""), &digest, io.Discard)
	d := strings.Fields(digest.String())
	steps := [][]string{
		{"trust", "--yes", "--allow-unsigned", "--digest", d[len(d)-1], bdir},
		{"enable", "leak", "--workspace", ws},
		{"policy", "set", "leak__main__*", "allow"},
		{"policy", "set", "leak__other__env", "allow"},
		{"secret", "list"}, {"secret", "list", "--json"},
		{"review", bdir}, {"review", "--json", bdir},
		{"status", "--workspace", ws}, {"status", "--workspace", ws, "--json"},
		{"tools", "--workspace", ws}, {"tools", "--workspace", ws, "--json"},
		{"call", "leak__main__echo", "--arg", "text=hello", "--workspace", ws},
		{"call", "leak__main__fail", "--workspace", ws},
		{"logs", "leak__main"}, {"logs", "leak__main", "--json"},
		{"connect", "claude-code", "--workspace", ws}, {"connect", "vscode", "--workspace", ws, "--json"},
		{"connect", "cursor", "--user", "--workspace", ws},
		{"disconnect", "claude-code", "--workspace", ws},
	}
	for _, s := range steps {
		berth("", s...)
	}

	// berth serve over stdio: a real MCP client calls tools, so the audit
	// log has entries; the env tool shows the value reached the server
	// that declared it, and only that one.
	// (serve speaks on the process's own stdio: run the berth that
	// testscript.Main put on PATH.)
	exe, err := exec.LookPath("berth")
	if err != nil {
		t.Fatal(err)
	}
	var serveErr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(exe, "serve", "--workspace", ws)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = &serveErr
	client := mcp.NewClient(&mcp.Implementation{Name: "leak-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to berth serve: %v\n%s", err, serveErr.String())
	}
	callText := func(name string, args map[string]any) string {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("call %s: %v\n%s", name, err, serveErr.String())
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	callText("leak__main__echo", map[string]any{"text": "x"})
	if got := callText("leak__main__env", map[string]any{}); !strings.Contains(got, "TOKEN="+value) {
		t.Fatalf("the declaring server did not get the value from the %s store:\n%s", backend, got)
	}
	if got := callText("leak__other__env", map[string]any{}); strings.Contains(got, value) {
		t.Fatalf("a server that does not declare LEAK_TOKEN got its value:\n%s", got)
	}
	cs.Close()
	cmd.Wait()
	outputs.Write(serveErr.Bytes())

	if strings.Contains(outputs.String(), value) {
		t.Fatalf("the value reached the output of a berth command:\n%s", outputs.String())
	}
	audit, err := os.ReadFile(filepath.Join(berthHome, "audit.log"))
	if err != nil || !bytes.Contains(audit, []byte("leak__main__env")) {
		t.Fatalf("the audit log lacks the calls (%v):\n%s", err, audit)
	}
	// Every file berth wrote: its state root (the values file of the file
	// backend aside), the workspace's client files, the user's.
	values := filepath.Join(berthHome, "secrets", "values.json")
	var checked int
	for _, root := range []string{berthHome, ws, home} {
		filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
			if err != nil || de.IsDir() || p == values {
				return nil
			}
			data, err := os.ReadFile(p)
			if err == nil && bytes.Contains(data, []byte(value)) {
				t.Errorf("%s holds the secret value", p)
			}
			checked++
			return nil
		})
	}
	for _, p := range []string{filepath.Join(ws, ".vscode", "mcp.json"), filepath.Join(home, ".cursor", "mcp.json"), filepath.Join(berthHome, "logs", "leak__main.log")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was not written, so the test proves nothing about it: %v", p, err)
		}
	}
	data, _ := os.ReadFile(values)
	if got := bytes.Contains(data, []byte(value)); got != (backend == "file") {
		t.Errorf("values.json holds the value: %v; want %v for the %s backend", got, backend == "file", backend)
	}
	var rep secretListJSON
	var out bytes.Buffer
	run(context.Background(), []string{"secret", "list", "--json"}, getenv, strings.NewReader(""), &out, io.Discard)
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Secrets) != 1 || string(rep.Secrets[0].Backend) != backend {
		t.Fatalf("secret list --json: %v %s", err, out.String())
	}
	t.Logf("%d files checked", checked)
}
