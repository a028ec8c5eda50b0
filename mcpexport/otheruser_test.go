//go:build linux

package mcpexport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/sockpeer"
	"github.com/berth-mcp/berth/internal/testkit"
)

// otherUserEnv makes the test binary act as another local user's
// program: it calls berth at URL (over the Unix socket SOCKET when one
// is given) with the token in TOKENCOPY, if any, reads the token file,
// and prints what happened.
const otherUserEnv = "BERTH_TEST_OTHER_USER"

type otherUserReport struct {
	UID        int    `json:"uid"`
	Status     int    `json:"status"`
	Err        string `json:"err"`
	Auth       string `json:"wwwAuthenticate"`
	ReadErr    string `json:"readErr"`
	ReadTokenN int    `json:"readTokenBytes"`
}

// otherUserMain: URL TOKENFILE [TOKENCOPY [SOCKET]].
func otherUserMain() {
	url, tokenPath := os.Args[1], os.Args[2]
	rep := otherUserReport{UID: os.Getuid()}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if len(os.Args) > 3 && os.Args[3] != "" {
		tok, _ := os.ReadFile(os.Args[3])
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	client := http.DefaultClient
	if len(os.Args) > 4 {
		client = unixClient(os.Args[4])
	}
	if res, err := client.Do(req); err == nil {
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		rep.Status, rep.Auth = res.StatusCode, res.Header.Get("WWW-Authenticate")
	} else {
		rep.Err = err.Error()
	}
	if data, err := os.ReadFile(tokenPath); err != nil {
		rep.ReadErr = err.Error()
	} else {
		rep.ReadTokenN = len(data)
	}
	json.NewEncoder(os.Stdout).Encode(rep)
}

// unixClient is an HTTP client that reaches every URL through the Unix
// socket path.
func unixClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
}

// runAsNobody runs otherUserMain as user nobody with args.
func runAsNobody(t *testing.T, args ...string) otherUserReport {
	t.Helper()
	out, err := testkit.AsNobody(t, []string{otherUserEnv + "=1"}, args...).Output()
	if err != nil {
		t.Fatalf("running as nobody: %v\n%s", err, out)
	}
	var rep otherUserReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.UID == 0 {
		t.Fatal("the program did not run as another user")
	}
	return rep
}

// worldDir is a directory every user can traverse, removed when t ends.
func worldDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "berth-otheruser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	return dir
}

// TestAnotherUserIsRefused runs a program as user nobody against a
// loopback listener that uses the default token file. The kernel names
// the user of each connection (sock_diag), so nobody's connection is
// closed before its request is read: without the token, and with it
// too (a copy it can read, as if it had caught the token). It cannot
// read the token file even where the directories on the way let it
// through (mode 0755): the file is 0600.
func TestAnotherUserIsRefused(t *testing.T) {
	testkit.NeedRoot(t, "to run a program as user nobody")
	e := newEnv(t, nil)
	dir := worldDir(t)
	tokenPath := filepath.Join(dir, "serve.token")
	token, created, err := LoadOrCreateToken(tokenPath)
	if err != nil || !created {
		t.Fatal(created, err)
	}
	leaked := filepath.Join(dir, "leaked.token")
	if err := os.WriteFile(leaked, []byte(token), 0o644); err != nil {
		t.Fatal(err)
	}
	var logged syncBuffer
	o := &HTTPOptions{Token: token, Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	url := "http://" + serveEnv(t, e, o) + "/mcp"

	for _, tokenArg := range []string{"", leaked} {
		rep := runAsNobody(t, url, tokenPath, tokenArg)
		if rep.Status != 0 || rep.Err == "" {
			t.Errorf("another user (token file %q) got %d %q; want the connection closed unread", tokenArg, rep.Status, rep.Err)
		}
		if rep.ReadTokenN != 0 || !strings.Contains(rep.ReadErr, "permission denied") {
			t.Errorf("another user read the token file: %+v", rep)
		}
	}
	testkit.Eventually(t, 5*time.Second, "the refusal in the log", func() bool {
		return strings.Count(logged.String(), "refused a connection of another user") == 2 && strings.Contains(logged.String(), "uid=65534")
	})
	// The owner, with the token, gets in.
	if code, body := post(t, e.srv.Handler(o), "/mcp", map[string]string{"Authorization": "Bearer " + token}); code != http.StatusOK {
		t.Errorf("the owner with the token: %d %s", code, body)
	}
}

// TestUnixSocketListener serves Streamable HTTP on a Unix-domain socket:
// the owner's go-sdk client calls a tool without the token (the kernel
// names the peer); a wrong token is refused; user nobody, even with the
// directory and socket opened to everyone, is refused by SO_PEERCRED.
func TestUnixSocketListener(t *testing.T) {
	e := newEnv(t, nil)
	dir := filepath.Join(worldDir(t), "run")
	sock := filepath.Join(dir, "serve.sock")
	var logged syncBuffer
	o := &HTTPOptions{Token: testToken, Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	ln, err := Listen(UnixPrefix+sock, o)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket directory: %v %v", fi, err)
	}
	if PeerCheck(ln) != sockpeer.PeerCred {
		t.Fatalf("peer check %v", PeerCheck(ln))
	}
	serveOn(t, ln, e.srv.Handler(o), o)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "unix", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://localhost/mcp", HTTPClient: unixClient(sock)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		p := nextPending(t, e.srv.queue)
		if p == nil {
			return
		}
		if !p.Authenticated || p.Transport != TransportHTTP {
			t.Errorf("pending %+v: want authenticated streamable-http", p)
		}
		e.srv.queue.Decide(p.ID, true, false, "test")
	}()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: echoTool, Arguments: map[string]any{"text": "unix"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "echo: unix" {
		t.Fatalf("%+v %v", res, err)
	}
	cs.Close()

	// A token, if sent, must be the right one.
	for authz, want := range map[string]int{"Bearer wrong": http.StatusUnauthorized, "Bearer " + testToken: http.StatusOK} {
		req, _ := http.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", authz)
		res, err := unixClient(sock).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("%q: %d, want %d", authz, res.StatusCode, want)
		}
	}

	testkit.NeedRoot(t, "to run a program as user nobody")
	// Only the peer check keeps nobody out now.
	os.Chmod(dir, 0o755)
	os.Chmod(sock, 0o777)
	rep := runAsNobody(t, "http://localhost/mcp", filepath.Join(dir, "none"), "", sock)
	if rep.Status != 0 || rep.Err == "" {
		t.Errorf("another user on the socket got %d %q; want the connection closed unread", rep.Status, rep.Err)
	}
	testkit.Eventually(t, 5*time.Second, "the refusal in the log", func() bool {
		return strings.Contains(logged.String(), "refused a connection of another user") && strings.Contains(logged.String(), "uid=65534")
	})
}

// TestUnixSocketDirectory: the socket's directory must be the user's
// alone; a stale socket of the user's is replaced, anything else at the
// path is refused.
func TestUnixSocketDirectory(t *testing.T) {
	o := &HTTPOptions{Token: testToken}
	open := worldDir(t) // 0755
	if _, err := Listen(UnixPrefix+filepath.Join(open, "s.sock"), o); err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Fatalf("a socket in a 0755 directory: %v", err)
	}
	dir := filepath.Join(open, "private")
	os.Mkdir(dir, 0o700)
	link := filepath.Join(open, "link")
	os.Symlink(dir, link)
	if _, err := Listen(UnixPrefix+filepath.Join(link, "s.sock"), o); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("a socket in a linked directory: %v", err)
	}
	if err := os.Chown(dir, 65534, 65534); err == nil {
		if _, err := Listen(UnixPrefix+filepath.Join(dir, "s.sock"), o); err == nil || !strings.Contains(err.Error(), "belongs to user") {
			t.Fatalf("a socket in another user's directory: %v", err)
		}
		os.Chown(dir, os.Getuid(), os.Getgid())
	}
	if _, err := Listen(UnixPrefix+filepath.Join(dir, "s.sock"), &HTTPOptions{}); err == nil {
		t.Fatal("a Unix socket without a token or UnsafeNoToken")
	}

	// A file at the path is not replaced.
	file := filepath.Join(dir, "file.sock")
	os.WriteFile(file, []byte("keep"), 0o600)
	if _, err := Listen(UnixPrefix+file, o); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("a regular file at the path: %v", err)
	}
	// A live socket is not replaced; a stale one is.
	sock := filepath.Join(dir, "s.sock")
	ln, err := Listen(UnixPrefix+sock, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(UnixPrefix+sock, o); err == nil || !strings.Contains(err.Error(), "already listens") {
		t.Fatalf("a live socket: %v", err)
	}
	ln.(*sockpeer.Listener).Listener.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Lstat(sock); err != nil {
		t.Fatal(err)
	}
	ln, err = Listen(UnixPrefix+sock, o)
	if err != nil {
		t.Fatalf("a stale socket: %v", err)
	}
	ln.Close()
}

// otherUserSendEnv makes the test binary act as another local user's
// client that sends a request and closes at once: ADDR REQUEST.
const otherUserSendEnv = "BERTH_TEST_OTHER_USER_SEND"

func otherUserSend() {
	c, err := net.DialTimeout("tcp", os.Args[1], 5*time.Second)
	if err != nil {
		fmt.Println("dial error:", err)
		return
	}
	io.WriteString(c, os.Args[2])
	c.Close()
	fmt.Println("sent")
}

// TestAnotherUserWhoClosesAtOnceIsRefused: another user's client that
// writes a whole request, token and all, and closes its socket before
// berth accepts the connection leaves a socket the kernel reports as
// root's (a time-wait socket in FIN_WAIT2: uid 0, no inode). berth, run
// as root here, refuses it as a connection whose user is unknown: the
// handler never runs.
func TestAnotherUserWhoClosesAtOnceIsRefused(t *testing.T) {
	testkit.NeedRoot(t, "to run a program as user nobody")
	token := strings.Repeat("k", MinTokenLen)
	var logged syncBuffer
	o := &HTTPOptions{Token: token, Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	ln, err := Listen("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if PeerCheck(ln) != sockpeer.SockDiag {
		t.Skip("sock_diag is not available here")
	}
	req := "POST /mcp HTTP/1.1\r\nHost: " + ln.Addr().String() + "\r\nAuthorization: Bearer " + token + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: " + fmt.Sprint(len(initBody)) + "\r\n\r\n" + initBody
	out, err := testkit.AsNobody(t, []string{otherUserSendEnv + "=1"}, ln.Addr().String(), req).CombinedOutput()
	if err != nil || string(out) != "sent\n" {
		t.Fatalf("%v: %s", err, out)
	}
	// Let the kernel acknowledge the client's FIN, so its socket is
	// what a closed client's becomes.
	time.Sleep(300 * time.Millisecond)
	var ran atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran.Add(1)
		io.WriteString(w, "served")
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeHTTP(ctx, ln, h, o) }()
	defer func() {
		cancel()
		<-done
	}()
	testkit.Eventually(t, 5*time.Second, "the refusal in the log", func() bool {
		return strings.Contains(logged.String(), "refused a connection whose user could not be identified") || ran.Load() != 0
	})
	time.Sleep(200 * time.Millisecond)
	if n := ran.Load(); n != 0 {
		t.Fatalf("the request of a closed client of user nobody was served (%d times); log:\n%s", n, logged.String())
	}
	if !strings.Contains(logged.String(), "already closed by its program") {
		t.Errorf("the refusal does not say why:\n%s", logged.String())
	}
}
