//go:build unix

package fetched

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkStart compares a server's start from its staged tree (what
// berth does now) with npx fetching it at start (what it did), against a
// loopback registry with npx's cache warm: the time to the answer of one
// tools/call.
//
//	go test ./fetched -run '^$' -bench Start -benchtime 10x
func BenchmarkStart(b *testing.B) {
	e := newNPMEnvB(b)
	dir := b.TempDir()
	l, err := resolveForBench(b, e, dir)
	if err != nil {
		b.Fatal(err)
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hello"}}` + "\n"
	runOnce := func(b *testing.B, cmd *exec.Cmd) {
		cmd.Stdin = strings.NewReader(call)
		out, err := cmd.Output()
		if err != nil || !strings.Contains(string(out), "hello from dep") {
			b.Fatalf("%v: %s", err, out)
		}
	}
	b.Run("staged", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command(filepath.Join(dir, filepath.FromSlash(l.Program)))
			cmd.Env = e.opts.Env
			runOnce(b, cmd)
		}
	})
	cache := b.TempDir()
	b.Run("npx", func(b *testing.B) {
		for b.Loop() {
			run := b.TempDir()
			os.WriteFile(filepath.Join(run, "package.json"), []byte("{}\n"), 0o600)
			cmd := exec.Command(filepath.Join(e.bin, "npx"), "-y", "@acme/hello-mcp@1.0.0")
			cmd.Dir = run
			cmd.Env = append(append([]string{}, e.opts.Env...), "npm_config_userconfig="+filepath.Join(e.fetchers, NPMUserConfig), "npm_config_cache="+cache, "npm_config_update_notifier=false")
			runOnce(b, cmd)
		}
	})
}
