//go:build unix

// Package peers locates the pinned third-party MCP peers that berth's tests
// and benchmarks run against, and builds commands that run them.
//
// The peers are npm packages pinned in testdata/peers/package.json and
// package-lock.json: @modelcontextprotocol/server-everything,
// @modelcontextprotocol/server-filesystem (run from node_modules/.bin by the
// confinement tests of package pool), the inspector
// CLI, two versions of the conformance suite, the TypeScript SDK,
// supergateway, mcp-proxy, npm (for its npx), oidc-provider (the
// authorization server of internal/oidctest), and a Node.js 22 binary
// installed from the npm registry. scripts/install-peers installs them. Every command built by
// [Command] runs under that Node.js 22, with a minimal environment, so tests
// do not depend on the host's node.
//
// Tests call [Require] (or [Command], which calls it). When the peers are
// missing or out of date the test is skipped, or fails if
// BERTH_REQUIRE_PEERS=1 is set (as in CI).
package peers

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	// modulePath is the module whose root holds testdata/peers.
	modulePath = "github.com/berth-mcp/berth"
	// requireEnv set to "1" turns a missing installation from a skip into a failure.
	requireEnv = "BERTH_REQUIRE_PEERS"
	// installHint is the command that installs the peers.
	installHint = "scripts/install-peers"
)

// errNotInstalled reports that the peers are not installed, or that the
// installation does not match package-lock.json.
var errNotInstalled = errors.New("not installed or out of date")

// stampFile is written by scripts/install-peers after a successful install.
// It holds the hex sha256 of package.json followed by package-lock.json.
const stampFile = "node_modules/.berth-peers-stamp"

// node22Rel is the node binary installed by the npm package node@22.
const node22Rel = "node_modules/node/bin/node"

// entryScript returns the entry script of a peer accepted by [Command],
// relative to [Dir]. "node" is handled by the caller.
func entryScript(name string) (string, bool) {
	switch name {
	case "server-everything":
		// stdio by default; "sse" or "streamableHttp" as first argument, with PORT in the env.
		return "node_modules/@modelcontextprotocol/server-everything/dist/index.js", true
	case "inspector":
		// The inspector launcher; callers pass "--cli" first.
		return "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js", true
	case "conformance":
		return "node_modules/@modelcontextprotocol/conformance/dist/index.js", true
	case "conformance-next":
		return "node_modules/conformance-next/dist/index.js", true
	case "supergateway":
		return "node_modules/supergateway/dist/index.js", true
	case "mcp-proxy":
		return "node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs", true
	case "npx":
		// npm's own npx, to test what berth does around runtime fetches.
		return "node_modules/npm/bin/npx-cli.js", true
	}
	return "", false
}

// names lists the peer names accepted by [Command], for error messages.
const names = "node, server-everything, inspector, conformance, conformance-next, supergateway, mcp-proxy, npx"

// scriptNames are the names that [entryScript] knows.
func scriptNames() []string {
	return []string{"server-everything", "inspector", "conformance", "conformance-next", "supergateway", "mcp-proxy", "npx"}
}

// Dir returns the absolute path of testdata/peers. It finds the module root
// by walking up from the working directory to the go.mod that declares
// github.com/berth-mcp/berth. It does not check that the peers are installed.
func Dir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("peers: %w", err)
	}
	for d := wd; ; {
		if isModuleRoot(d) {
			dir := filepath.Join(d, "testdata", "peers")
			if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
				return "", fmt.Errorf("peers: %w", err)
			}
			return dir, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("peers: no go.mod for module %s found above %s", modulePath, wd)
		}
		d = parent
	}
}

// isModuleRoot reports whether dir/go.mod declares modulePath.
func isModuleRoot(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		rest, ok := strings.CutPrefix(line, "module")
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		rest, _, _ = strings.Cut(rest, "//")
		rest = strings.TrimSpace(rest)
		if unq, err := strconv.Unquote(rest); err == nil {
			rest = unq
		}
		return rest == modulePath
	}
	return false
}

// Node22 returns the absolute path of the pinned Node.js 22 binary. It
// returns an error when the binary is missing.
func Node22() (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	node := filepath.Join(dir, node22Rel)
	if err := checkExecutable(node); err != nil {
		return "", fmt.Errorf("%w: %v", errNotInstalled, err)
	}
	return node, nil
}

func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// checkInstalled verifies that the install stamp matches package.json and
// package-lock.json and that node and every entry script are present.
func checkInstalled(dir string) error {
	want, err := lockDigest(dir)
	if err != nil {
		return fmt.Errorf("%w: %v", errNotInstalled, err)
	}
	got, err := os.ReadFile(filepath.Join(dir, stampFile))
	if err != nil {
		return fmt.Errorf("%w: %v", errNotInstalled, err)
	}
	if strings.TrimSpace(string(got)) != want {
		return fmt.Errorf("%w: node_modules was installed from a different package-lock.json", errNotInstalled)
	}
	if err := checkExecutable(filepath.Join(dir, node22Rel)); err != nil {
		return fmt.Errorf("%w: %v", errNotInstalled, err)
	}
	for _, name := range scriptNames() {
		rel, _ := entryScript(name)
		if _, err := os.Stat(filepath.Join(dir, rel)); err != nil {
			return fmt.Errorf("%w: %v", errNotInstalled, err)
		}
	}
	return nil
}

// lockDigest is the hex sha256 of package.json followed by
// package-lock.json, as computed by scripts/install-peers.
func lockDigest(dir string) (string, error) {
	h := sha256.New()
	for _, name := range []string{"package.json", "package-lock.json"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Require returns [Dir] if the peers are installed and match the lock file.
// Otherwise it skips the test, or fails it when BERTH_REQUIRE_PEERS=1; both
// messages say to run scripts/install-peers.
func Require(t testing.TB) string {
	t.Helper()
	dir, err := Dir()
	if err == nil {
		err = checkInstalled(dir)
	}
	if err != nil {
		Unavailable(t, fmt.Sprintf("MCP test peers unavailable (%v); run %s", err, installHint))
	}
	return dir
}

// Unavailable is the rule for a real peer a test cannot get (the npm
// peers, a registry daemon, a tool built from the module proxy): it
// skips the test with msg, or fails it when BERTH_REQUIRE_PEERS=1, as CI
// sets it.
func Unavailable(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv(requireEnv) == "1" {
		t.Fatalf("%s (%s=1)", msg, requireEnv)
		return
	}
	// The prefix lets the summary of make test count these skips.
	t.Skipf("real-peer: %s, or set %s=1 to make this a failure", msg, requireEnv)
}

// Command returns a command that runs the named peer under the pinned
// Node.js 22 with the given arguments. It calls [Require] first, and fails
// the test for an unknown name. Names:
//
//   - "node": node itself. cmd.Dir is testdata/peers, so -e and
//     --input-type=module scripts can import the pinned packages, for
//     example '@modelcontextprotocol/sdk/client/index.js'.
//   - "server-everything": stdio by default; pass "sse" or "streamableHttp"
//     and set PORT in cmd.Env for HTTP (it listens on all interfaces; paths
//     /sse + /message, or /mcp).
//   - "inspector": the inspector launcher; pass "--cli" first.
//   - "conformance" (0.1.16), "conformance-next" (0.2.0-alpha.12).
//   - "supergateway", "mcp-proxy".
//   - "npx": npm's npx (npm 11), for tests of runtime fetches.
//
// For every name but "node", cmd.Dir is a fresh t.TempDir(), so files a peer
// writes to its working directory (conformance's ./results) stay out of the
// checkout. Callers may change cmd.Dir.
//
// cmd.Env is minimal: PATH (node 22's directory first, then
// testdata/peers/node_modules/.bin, then the host's PATH), HOME (a fresh
// t.TempDir()), TMPDIR and NO_COLOR=1. Append to it, e.g. "PORT=...".
//
// The command runs in its own process group. When ctx is done, or when the
// test ends, the whole group is killed with SIGKILL, so grandchildren (the
// stdio server under the inspector, supergateway or mcp-proxy) do not
// outlive the test. WaitDelay is 5s.
func Command(ctx context.Context, t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	dir := Require(t)
	node := filepath.Join(dir, node22Rel)

	var cmd *exec.Cmd
	if name == "node" {
		cmd = exec.CommandContext(ctx, node, args...)
		cmd.Dir = dir
	} else {
		rel, ok := entryScript(name)
		if !ok {
			t.Fatalf("peers.Command: unknown peer %q (known: %s)", name, names)
		}
		cmd = exec.CommandContext(ctx, node, append([]string{filepath.Join(dir, rel)}, args...)...)
		cmd.Dir = t.TempDir()
	}

	hostPath := os.Getenv("PATH")
	if hostPath == "" {
		hostPath = "/usr/local/bin:/usr/bin:/bin"
	}
	tmp := os.Getenv("TMPDIR")
	if tmp == "" {
		tmp = os.TempDir()
	}
	cmd.Env = []string{
		"PATH=" + strings.Join([]string{
			filepath.Dir(node),
			filepath.Join(dir, "node_modules", ".bin"),
			hostPath,
		}, string(os.PathListSeparator)),
		"HOME=" + t.TempDir(),
		"TMPDIR=" + tmp,
		"NO_COLOR=1",
	}

	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = 5 * time.Second
	t.Cleanup(func() { _ = killGroup(cmd) })
	return cmd
}

// killGroup sends SIGKILL to the process group led by cmd's process.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}
