//go:build unix

package peers

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDir(t *testing.T) {
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(dir) || filepath.Base(dir) != "peers" || filepath.Base(filepath.Dir(dir)) != "testdata" {
		t.Fatalf("Dir() = %q, want an absolute path ending in testdata/peers", dir)
	}
	for _, f := range []string{"package.json", "package-lock.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestIsModuleRoot(t *testing.T) {
	for _, tc := range []struct {
		gomod string
		want  bool
	}{
		{"module github.com/berth-mcp/berth\n\ngo 1.26\n", true},
		{"// comment\nmodule \"github.com/berth-mcp/berth\" // quoted\n", true},
		{"module github.com/berth-mcp/berth/sub\n", false},
		{"module github.com/other/berth\n", false},
		{"modulex github.com/berth-mcp/berth\n", false},
	} {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, "go.mod"), []byte(tc.gomod), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := isModuleRoot(d); got != tc.want {
			t.Errorf("isModuleRoot(%q) = %v, want %v", tc.gomod, got, tc.want)
		}
	}
	if isModuleRoot(t.TempDir()) {
		t.Error("isModuleRoot(dir without go.mod) = true")
	}
}

func TestNode22(t *testing.T) {
	Require(t)
	node, err := Node22()
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(node) {
		t.Errorf("Node22() = %q, want an absolute path", node)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := Command(ctx, t, "node", "--version").Output()
	if err != nil {
		t.Fatalf("node --version: %v", err)
	}
	if v := strings.TrimSpace(string(out)); !strings.HasPrefix(v, "v22.") {
		t.Fatalf("node --version = %q, want v22.*", v)
	}

	// A child that runs "node" by name must get node 22 too.
	out, err = Command(ctx, t, "node", "-e",
		`console.log(require("child_process").execFileSync("node", ["--version"]).toString().trim())`).Output()
	if err != nil {
		t.Fatalf("node via PATH: %v", err)
	}
	if v := strings.TrimSpace(string(out)); !strings.HasPrefix(v, "v22.") {
		t.Fatalf("node found on PATH = %q, want v22.*", v)
	}
}

// TestVersions checks that each CLI starts under node 22 and is the pinned version.
func TestVersions(t *testing.T) {
	Require(t)
	for name, want := range map[string]string{
		"inspector":        "2.12.0",
		"conformance":      "0.1.16",
		"conformance-next": "0.2.0-alpha.12",
		"supergateway":     "4.0.0",
		"mcp-proxy":        "6.7.19",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := Command(ctx, t, name, "--version")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s --version: %v\nstderr: %s", name, err, stderr.Bytes())
			}
			if got := strings.TrimSpace(string(out)); got != want {
				t.Fatalf("%s --version = %q, want %q", name, got, want)
			}
		})
	}
}

func TestServerEverythingStdio(t *testing.T) {
	Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cmd := Command(ctx, t, "server-everything", "stdio")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"berth-peers-test","version":"0"}}}` + "\n"
	if _, err := io.WriteString(stdin, initialize); err != nil {
		t.Fatal(err)
	}

	type reply struct {
		line []byte
		err  error
	}
	ch := make(chan reply, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadBytes('\n')
		ch <- reply{line, err}
	}()
	var r reply
	select {
	case r = <-ch:
	case <-ctx.Done():
		t.Fatalf("no response from server-everything: %v\nstderr: %s", ctx.Err(), stderr.Bytes())
	}
	if r.err != nil {
		t.Fatalf("reading response: %v\nstderr: %s", r.err, stderr.Bytes())
	}

	var resp struct {
		ID     int `json:"id"`
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
			ServerInfo      struct {
				Name string `json:"name"`
			} `json:"serverInfo"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(r.line, &resp); err != nil {
		t.Fatalf("decoding %q: %v", r.line, err)
	}
	if resp.ID != 1 || resp.Error != nil {
		t.Fatalf("unexpected response: %s", r.line)
	}
	if got, want := resp.Result.ServerInfo.Name, "mcp-servers/everything"; got != want {
		t.Errorf("serverInfo.name = %q, want %q", got, want)
	}
	if got, want := resp.Result.ProtocolVersion, "2025-11-25"; got != want {
		t.Errorf("protocolVersion = %q, want %q", got, want)
	}

	// Closing stdin ends the stdio server.
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Logf("server-everything exited: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("server-everything did not exit after stdin was closed\nstderr: %s", stderr.Bytes())
		cancel()
		<-done
	}
}

func TestCheckInstalled(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("package.json", "{}\n", 0o644)
	write("package-lock.json", "{\"lockfileVersion\":3}\n", 0o644)
	if err := checkInstalled(dir); !errors.Is(err, errNotInstalled) {
		t.Fatalf("empty install: err = %v, want errNotInstalled", err)
	}

	write(node22Rel, "#!/bin/sh\n", 0o755)
	for _, name := range scriptNames() {
		rel, _ := entryScript(name)
		write(rel, "", 0o644)
	}
	write(stampFile, "0000\n", 0o644)
	if err := checkInstalled(dir); !errors.Is(err, errNotInstalled) {
		t.Fatalf("stale stamp: err = %v, want errNotInstalled", err)
	}

	// The digest must match scripts/install-peers: sha256 of package.json then package-lock.json.
	sum := sha256.Sum256([]byte("{}\n{\"lockfileVersion\":3}\n"))
	write(stampFile, hex.EncodeToString(sum[:])+"\n", 0o644)
	if err := checkInstalled(dir); err != nil {
		t.Fatalf("complete install: %v", err)
	}

	if err := os.Remove(filepath.Join(dir, "node_modules/supergateway/dist/index.js")); err != nil {
		t.Fatal(err)
	}
	if err := checkInstalled(dir); !errors.Is(err, errNotInstalled) {
		t.Fatalf("missing entry script: err = %v, want errNotInstalled", err)
	}
}
