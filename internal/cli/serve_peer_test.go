//go:build linux

package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/mcpexport"
)

// nobodyListens starts a listener of user nobody and returns its port.
func nobodyListens(t *testing.T) int {
	t.Helper()
	cmd := testkit.AsNobody(t, []string{otherUserListenEnv + "=1"})
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var port int
	if _, serr := fmt.Sscan(line, &port); err != nil || serr != nil {
		t.Fatalf("nobody's listener: %q %v %v", line, err, serr)
	}
	return port
}

// TestServePortTakenByAnotherUser: when another user's program listens
// on the port of berth serve, serve says so (the address, the user, that
// the token may have leaked), replaces the default token with a new one,
// and exits 1. A --token-file is left for the operator to replace.
func TestServePortTakenByAnotherUser(t *testing.T) {
	needRoot(t)
	port := nobodyListens(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	home := t.TempDir()
	tokenPath := filepath.Join(home, "serve.token")
	old, _, err := mcpexport.LoadOrCreateToken(tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	out, err := berthCmd(home, nil, "serve", "--workspace", t.TempDir(), "--http", addr).CombinedOutput()
	if code := exitOf(err); code != 1 {
		t.Fatalf("exit %d (%v), want 1:\n%s", code, err, out)
	}
	for _, want := range []string{
		addr + " is taken by another user's program (user nobody (uid 65534))",
		"has sent it the bearer token",
		"berth replaced the token in " + tokenPath,
		"clients must read the file again",
		"--http unix:PATH",
		"THE TOKEN MAY HAVE LEAKED",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	now, err := mcpexport.ReadTokenFile(tokenPath)
	if err != nil || now == old {
		t.Errorf("the token was not replaced: %v", err)
	}

	// A token file of the operator's own is not rewritten.
	own := filepath.Join(t.TempDir(), "token")
	os.WriteFile(own, []byte(old+"\n"), 0o600)
	out, err = berthCmd(home, nil, "serve", "--workspace", t.TempDir(), "--http", addr, "--token-file", own).CombinedOutput()
	if code := exitOf(err); code != 1 || !strings.Contains(string(out), "treat the token in "+own+" as leaked and replace it") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if data, _ := os.ReadFile(own); string(data) != old+"\n" {
		t.Error("the operator's token file was rewritten")
	}
}

func exitOf(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(interface{ ExitCode() int }); ok {
		return ee.ExitCode()
	}
	return -1
}

// TestServeUnixSocket: berth serve --http unix:PATH makes the socket's
// directory (0700), says in its start log that the OS names the peer, and
// answers its owner without a token.
func TestServeUnixSocket(t *testing.T) {
	home := t.TempDir()
	sock := filepath.Join(t.TempDir(), "run", "serve.sock")
	cmd := berthCmd(home, nil, "serve", "--workspace", t.TempDir(), "--http", "unix:"+sock)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	lines := bufio.NewScanner(stderr)
	var listening string
	for lines.Scan() {
		if strings.Contains(lines.Text(), "berth serve: listening") {
			listening = lines.Text()
			break
		}
	}
	go io.Copy(io.Discard, stderr)
	for _, want := range []string{"url=http://localhost/mcp", "socket=" + sock, `peer_check="SO_PEERCRED: the OS names each peer; other users are refused"`, "no token needed on this socket"} {
		if !strings.Contains(listening, want) {
			t.Errorf("start log lacks %q: %s", want, listening)
		}
	}
	if fi, err := os.Stat(filepath.Dir(sock)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("socket directory: %v %v", fi, err)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	req, _ := http.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "serverInfo") {
		t.Fatalf("initialize over the socket without a token: %d %s", res.StatusCode, body)
	}
}

// TestMarketplaceServeRefusesAnotherUser: another user who holds the
// start URL, token and all, is refused before anything is read (the
// kernel names the connection's user), and serve says so.
func TestMarketplaceServeRefusesAnotherUser(t *testing.T) {
	needRoot(t)
	url, _, stderr, cancel, done := startMarketplaceServe(t, "marketplace", "serve")
	out, err := testkit.AsNobody(t, []string{otherUserGetEnv + "=1"}, url).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "error:") {
		t.Errorf("user nobody with the start URL: %v %s", err, out)
	}
	testkit.Eventually(t, 5*time.Second, "the refusal on stderr", func() bool {
		return strings.Contains(stderr.String(), "berth: refused a connection to the marketplace page from another user (nobody (uid 65534))")
	})
	cancel()
	<-done
}

// boundNotListening binds a TCP socket to 127.0.0.1 and a free port
// without listening, and returns the port: a port in use whose owner
// sock_diag does not find (it looks up listening sockets), as on systems
// without sock_diag for every port.
func boundNotListening(t *testing.T) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return sa.(*syscall.SockaddrInet4).Port
}

// TestServePortInUseOwnerUnknown: when the port of berth serve is in use
// and berth cannot tell by whom, it may be another user's program that
// has the token, so serve says so, replaces the default token and exits
// 1; a --token-file is left, loudly, for the operator to replace. A port
// held by a listener of the operator's own leaves the token as it is.
func TestServePortInUseOwnerUnknown(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", boundNotListening(t))
	home := t.TempDir()
	tokenPath := filepath.Join(home, "serve.token")
	old, _, err := mcpexport.LoadOrCreateToken(tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	out, err := berthCmd(home, nil, "serve", "--workspace", t.TempDir(), "--http", addr).CombinedOutput()
	if code := exitOf(err); code != 1 {
		t.Fatalf("exit %d (%v), want 1:\n%s", code, err, out)
	}
	for _, want := range []string{
		addr + " is in use, and berth cannot tell by whom (sock_diag found no socket listening on " + addr,
		"if another user's program listens there, a client that connected to it while berth serve was not listening has sent it the bearer token",
		"berth replaced the token in " + tokenPath,
		"clients must read the file again",
		"if it is a berth serve of yours, it still uses the old token",
		"THIS ADDRESS IS IN USE AND BERTH CANNOT TELL BY WHOM; THE TOKEN MAY HAVE LEAKED, SO BERTH REPLACED IT",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	now, err := mcpexport.ReadTokenFile(tokenPath)
	if err != nil || now == old {
		t.Errorf("the token was not replaced: %v", err)
	}

	own := filepath.Join(t.TempDir(), "token")
	os.WriteFile(own, []byte(old+"\n"), 0o600)
	out, err = berthCmd(home, nil, "serve", "--workspace", t.TempDir(), "--http", addr, "--token-file", own).CombinedOutput()
	if code := exitOf(err); code != 1 || !strings.Contains(string(out), "treat the token in "+own+" as leaked and replace it") || !strings.Contains(string(out), "BERTH DOES NOT REPLACE IT: REPLACE IT YOURSELF") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if data, _ := os.ReadFile(own); string(data) != old+"\n" {
		t.Error("the operator's token file was rewritten")
	}

	// The operator's own listener: the bind's error, the token kept.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	out, err = berthCmd(home, nil, "serve", "--workspace", t.TempDir(), "--http", ln.Addr().String()).CombinedOutput()
	if code := exitOf(err); code != 1 || !strings.Contains(string(out), "address already in use") || strings.Contains(string(out), "TOKEN") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if again, err := mcpexport.ReadTokenFile(tokenPath); err != nil || again != now {
		t.Errorf("the token changed for a port of the operator's own: %v", err)
	}
}
