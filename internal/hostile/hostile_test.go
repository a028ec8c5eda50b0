//go:build linux

package hostile

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for berth-hostile where an
// attack runs its own program again (exec-written, userns).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == EuidMode {
		os.Exit(Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// TestAttacksWorkUnconfined runs every attack with nothing in its way,
// from the test process itself: each must get what it tries for, so that
// its failure under berth is the sandbox's doing and not a broken attack.
func TestAttacksWorkUnconfined(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	secret := filepath.Join(dir, "id_ed25519")
	os.WriteFile(secret, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n"), 0o600)
	var log Log
	tcp := ListenTCP(t, "127.0.0.1:0", &log)
	udp := ListenUDP(t, "127.0.0.1:0", &log)

	victim := exec.Command("sleep", "30")
	victim.Env = []string{"PLANTED=canary-4f1c"}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })
	pid := fmt.Sprint(victim.Process.Pid)
	time.Sleep(50 * time.Millisecond) // let it exec sleep

	cases := []struct{ attack, arg, want string }{
		{Read, secret, "OPENSSH"},
		{Read, dir, "id_ed25519"},
		{Write, filepath.Join(dir, "planted"), "wrote"},
		{ExecWritten, dir, "euid="},
		{TCP, tcp, "greetings"},
		{UDP, udp, "ack"},
		{Kill, pid, "signalled"},
		{Environ, pid, "PLANTED=canary-4f1c"},
	}
	if os.Geteuid() == 0 {
		cases = append(cases, struct{ attack, arg, want string }{Ptrace, pid, "attached"})
	}
	for _, c := range cases {
		r := Try(ctx, c.attack, c.arg)
		if !r.OK || !strings.Contains(r.Got, c.want) {
			t.Errorf("%s %s unconfined = %+v, want it to get %q", c.attack, c.arg, r, c.want)
		}
	}
}

// TestNetNSAttacksWorkUnconfined: the test's own network namespace is
// reachable from the host's by TCP, UDP and DNS, and its log sees them.
func TestNetNSAttacksWorkUnconfined(t *testing.T) {
	n := NewNetNS(t)
	ctx := context.Background()
	for _, c := range []struct{ attack, arg, want string }{
		{TCP, n.TCP, "greetings"},
		{UDP, n.UDP, "ack"},
		{DNS, n.DNS, "no such host"},
	} {
		r := Try(ctx, c.attack, c.arg)
		if !r.OK || !strings.Contains(r.Got, c.want) {
			t.Errorf("%s %s unconfined = %+v, want it to get %q", c.attack, c.arg, r, c.want)
		}
	}
	if got := n.Log.Got(); len(got) < 3 {
		t.Errorf("the namespace's listeners got %q, want a TCP connection, a datagram and a DNS query", got)
	}
	if r := Try(ctx, UserNS, ""); !r.OK {
		t.Errorf("a new user namespace unconfined: %+v", r)
	}
}

// TestProxyAttacks: proxy-connect and proxy-get speak HTTP CONNECT and
// plain HTTP to the proxy the environment names.
func TestProxyAttacks(t *testing.T) {
	var log Log
	tcp := ListenTCP(t, "127.0.0.1:0", &log)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				n, _ := c.Read(buf)
				req := string(buf[:n])
				if strings.HasPrefix(req, "CONNECT "+tcp+" ") {
					fmt.Fprint(c, "HTTP/1.1 200 OK\r\n\r\n")
					up, err := net.Dial("tcp", tcp)
					if err != nil {
						return
					}
					defer up.Close()
					b := make([]byte, 512)
					m, _ := up.Read(b)
					c.Write(b[:m])
					return
				}
				fmt.Fprint(c, "HTTP/1.1 403 Forbidden\r\nContent-Length: 9\r\nConnection: close\r\n\r\nforbidden")
			}()
		}
	}()
	t.Setenv("HTTPS_PROXY", "http://"+ln.Addr().String())
	ctx := context.Background()
	if r := Try(ctx, ProxyConnect, tcp); !r.OK || !strings.Contains(r.Got, "greetings") {
		t.Errorf("proxy-connect = %+v", r)
	}
	if r := Try(ctx, ProxyConnect, "127.0.0.1:1"); r.OK || !strings.Contains(r.Error, "403") {
		t.Errorf("proxy-connect refused = %+v", r)
	}
	if r := Try(ctx, ProxyGet, "http://example.test/"); r.OK || !strings.Contains(r.Error, "403") {
		t.Errorf("proxy-get refused = %+v", r)
	}
}
