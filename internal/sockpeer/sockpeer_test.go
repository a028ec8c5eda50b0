//go:build linux

package sockpeer

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/testkit"
)

// childEnv makes the test binary a client or a listener run as another
// user: "dial NETWORK ADDR" prints what the server sent; "send NETWORK
// ADDR DATA" writes DATA, closes the connection at once and prints its
// local address; "listen
// ADDR" prints its port and holds the socket until stdin closes.
const childEnv = "BERTH_TEST_SOCKPEER_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		child(os.Args[1:])
		return
	}
	os.Exit(m.Run())
}

func child(args []string) {
	switch args[0] {
	case "dial":
		c, err := net.DialTimeout(args[1], args[2], 5*time.Second)
		if err != nil {
			fmt.Printf("dial error: %v\n", err)
			return
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		data, _ := io.ReadAll(c)
		fmt.Printf("read %q\n", data)
	case "send":
		c, err := net.DialTimeout(args[1], args[2], 5*time.Second)
		if err != nil {
			fmt.Printf("dial error: %v\n", err)
			return
		}
		if _, err := io.WriteString(c, args[3]); err != nil {
			fmt.Printf("write error: %v\n", err)
		}
		c.Close()
		fmt.Println("sent from", c.LocalAddr())
	case "listen":
		ln, err := net.Listen("tcp", args[1])
		if err != nil {
			fmt.Printf("listen error: %v\n", err)
			return
		}
		fmt.Println(ln.Addr().(*net.TCPAddr).Port)
		io.Copy(io.Discard, os.Stdin)
	}
}

// serveHello serves l: every accepted connection is sent "hello" and
// closed. Refusals go to refused.
func serveHello(t *testing.T, ln net.Listener) (*Listener, chan Refusal) {
	refused := make(chan Refusal, 4)
	l, err := Guard(ln, func(r Refusal) { refused <- r })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if pc, ok := c.(*Conn); !ok || pc.UID != os.Geteuid() {
				panic(fmt.Sprintf("accepted %T %+v", c, c))
			}
			c.Write([]byte("hello"))
			c.Close()
		}
	}()
	return l, refused
}

func dialSelf(t *testing.T, network, addr string) string {
	t.Helper()
	c, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	data, _ := io.ReadAll(c)
	return string(data)
}

func checkNobodyRefused(t *testing.T, network, addr string, refused chan Refusal) {
	t.Helper()
	out, err := testkit.AsNobody(t, []string{childEnv + "=1"}, "dial", network, addr).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.Contains(string(out), "hello") || !strings.HasPrefix(string(out), `read ""`) {
		t.Errorf("user nobody got %s; want the connection closed unread", out)
	}
	select {
	case r := <-refused:
		if r.UID != 65534 || r.Err != nil {
			t.Errorf("refusal %+v, want uid 65534", r)
		}
	case <-time.After(5 * time.Second):
		t.Error("no refusal reported")
	}
}

func TestUnixPeer(t *testing.T) {
	dir, err := os.MkdirTemp("", "berth-sockpeer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	path := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o777) // only the peer check keeps another user out
	l, refused := serveHello(t, ln)
	if l.Method() != PeerCred || Describe(l) != PeerCred {
		t.Fatalf("method %v", l.Method())
	}
	if got := dialSelf(t, "unix", path); got != "hello" {
		t.Fatalf("the owner read %q", got)
	}
	checkNobodyRefused(t, "unix", path, refused)
}

func TestLoopbackTCPPeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l, refused := serveHello(t, ln)
	if l.Method() != SockDiag {
		t.Fatalf("method %v", l.Method())
	}
	for range 3 {
		if got := dialSelf(t, "tcp", ln.Addr().String()); got != "hello" {
			t.Fatalf("the owner read %q", got)
		}
	}
	checkNobodyRefused(t, "tcp", ln.Addr().String(), refused)
}

func TestLoopbackTCP6Peer(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skip("no IPv6 loopback:", err)
	}
	_, refused := serveHello(t, ln)
	if got := dialSelf(t, "tcp", ln.Addr().String()); got != "hello" {
		t.Fatalf("the owner read %q", got)
	}
	checkNobodyRefused(t, "tcp", ln.Addr().String(), refused)
}

// TestLoopbackTCPClosedClient: another user's client that writes its
// request and closes the connection at once, before berth accepts it, has
// left a socket with no owner (an orphan, or a time-wait socket in
// FIN_WAIT2, which sock_diag reports as uid 0: root's). Its connection is
// refused, unread, even when berth runs as root.
func TestLoopbackTCPClosedClient(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(addr, func(t *testing.T) {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Skip("cannot listen:", err)
			}
			refused := make(chan Refusal, 4)
			l, err := Guard(ln, func(r Refusal) { refused <- r })
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			// The client is done, and its socket closed, before the
			// connection is accepted.
			out, err := testkit.AsNobody(t, []string{childEnv + "=1"}, "send", "tcp", ln.Addr().String(), "GET /secret HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").CombinedOutput()
			from, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "sent from ")
			if err != nil || !ok {
				t.Fatalf("%v: %s", err, out)
			}
			// Wait for the client's socket to become what the kernel
			// makes of a closed one once its FIN is acknowledged: a
			// time-wait socket in FIN_WAIT2, which sock_diag reports as
			// uid 0. Where it stays an orphan, the check must refuse
			// that too.
			src, _ := net.ResolveTCPAddr("tcp", from)
			id, _ := tcpID(src, ln.Addr().(*net.TCPAddr))
			var r diagReply
			for range 100 {
				if r, err = lookup(id); err != nil || r.state == tcpFinWait2 {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Logf("the client's socket: %+v %v", r, err)
			accepted := make(chan string, 1)
			go func() {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				data, _ := io.ReadAll(c)
				c.Close()
				accepted <- fmt.Sprintf("%+v read %q", c, data)
			}()
			select {
			case r := <-refused:
				t.Logf("refused: %+v", r)
				if r.UID == os.Geteuid() && r.Err == nil {
					t.Errorf("refusal %+v names berth's own user", r)
				}
			case a := <-accepted:
				t.Fatalf("the connection of a closed client of user nobody was accepted: %s", a)
			case <-time.After(5 * time.Second):
				t.Fatal("no refusal reported")
			}
			select {
			case a := <-accepted:
				t.Fatalf("the connection of a closed client of user nobody was accepted: %s", a)
			case <-time.After(200 * time.Millisecond):
			}
		})
	}
}

// TestLoopbackTCPHalfClosedClient: a client of berth's own user that
// writes its request and shuts down its writing side (as HTTP/1.0 clients
// and nc -N do) still holds its socket, and is let in.
func TestLoopbackTCPHalfClosedClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := Guard(ln, func(r Refusal) { t.Errorf("refused %+v", r) })
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "request")
	c.(*net.TCPConn).CloseWrite()
	id, _ := tcpID(c.LocalAddr().(*net.TCPAddr), ln.Addr().(*net.TCPAddr))
	for range 100 {
		if r, err := lookup(id); err != nil || r.state == tcpFinWait2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	sc, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	sc.SetDeadline(time.Now().Add(5 * time.Second))
	data, _ := io.ReadAll(sc)
	sc.Write([]byte("answer"))
	sc.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	got, _ := io.ReadAll(c)
	if string(data) != "request" || string(got) != "answer" {
		t.Fatalf("server read %q, client read %q", data, got)
	}
}

func TestGuardRefusesNonLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := Guard(ln, nil); err == nil {
		t.Fatal("a wildcard listener was guarded")
	}
}

func TestListenerOwner(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a := ln.Addr().(*net.TCPAddr)
	if uid, err := ListenerOwner(a); err != nil || uid != os.Geteuid() {
		t.Fatalf("own listener: %d %v", uid, err)
	}
	ln.Close()
	if uid, err := ListenerOwner(a); err == nil {
		t.Fatalf("a closed listener has owner %d", uid)
	}

	cmd := testkit.AsNobody(t, []string{childEnv + "=1"}, "listen", "127.0.0.1:0")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var port int
	if _, err := fmt.Sscan(line, &port); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	if uid, err := ListenerOwner(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}); err != nil || uid != 65534 {
		t.Fatalf("nobody's listener: %d %v", uid, err)
	}
}

// reply builds a netlink message of typ with body for seq.
func reply(typ uint16, seq uint32, body []byte) []byte {
	b := make([]byte, nlmsgHdrLen, nlmsgHdrLen+len(body)+3)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(nlmsgHdrLen+len(body)))
	ne.PutUint16(b[4:], typ)
	ne.PutUint32(b[8:], seq)
	b = append(b, body...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func TestParseReply(t *testing.T) {
	id, _ := tcpID(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8931})
	msg := make([]byte, diagMsgLen)
	msg[0], msg[1] = afInet, 1
	binary.BigEndian.PutUint16(msg[4:], 40000)
	binary.BigEndian.PutUint16(msg[6:], 8931)
	copy(msg[8:], []byte{127, 0, 0, 1})
	copy(msg[24:], []byte{127, 0, 0, 1})
	binary.NativeEndian.PutUint32(msg[64:], 1000)
	binary.NativeEndian.PutUint32(msg[68:], 4242)

	r, err := parseReply(append(reply(nlmsgError, 6, make([]byte, 20)), reply(sockDiagByFamily, 7, msg)...), 7)
	if err != nil || r.uid != 1000 || r.check(id) != nil {
		t.Fatalf("%+v %v %v", r, err, r.check(id))
	}
	other := id
	other.sport++
	if r.check(other) == nil {
		t.Error("a reply about another socket passed")
	}
	// A dual-stack client's socket is reported as IPv6: with its
	// addresses mapped, or unset, it passes; with others it does not.
	for _, tc := range []struct {
		src  []byte
		pass bool
	}{{net.IPv4(127, 0, 0, 1).To16(), true}, {make([]byte, 16), true}, {net.IPv4(127, 0, 0, 2).To16(), false}, {net.IPv6loopback, false}} {
		m6 := append([]byte(nil), msg...)
		m6[0] = afInet6
		copy(m6[8:24], tc.src)
		copy(m6[24:40], net.IPv4(127, 0, 0, 1).To16())
		r, err := parseReply(reply(sockDiagByFamily, 7, m6), 7)
		if err != nil || (r.check(id) == nil) != tc.pass {
			t.Errorf("IPv6 reply from %v: %v, check %v, want pass %v", net.IP(tc.src), err, r.check(id), tc.pass)
		}
	}
	// Only a socket that a process holds (an inode) and that is
	// connected passes: a client's socket shut down for writing does, a
	// closed one (a time-wait socket in FIN_WAIT2 is reported as uid 0,
	// inode 0; an orphan in FIN_WAIT1 keeps its uid, inode 0) does not.
	for _, tc := range []struct {
		state uint8
		inode uint32
		pass  bool
	}{
		{tcpEstablished, 4242, true}, {tcpFinWait1, 4242, true}, {tcpFinWait2, 4242, true}, {tcpCloseWait, 4242, true},
		{tcpEstablished, 0, false}, {tcpFinWait1, 0, false}, {tcpFinWait2, 0, false}, {tcpTimeWait, 0, false}, {tcpTimeWait, 4242, false},
		{2, 4242, false}, {7, 4242, false}, {tcpListen, 4242, false}, {12, 0, false},
	} {
		m := append([]byte(nil), msg...)
		m[1] = tc.state
		binary.NativeEndian.PutUint32(m[68:], tc.inode)
		r, err := parseReply(reply(sockDiagByFamily, 7, m), 7)
		if err != nil || r.inode != tc.inode || (r.check(id) == nil) != tc.pass {
			t.Errorf("state %s inode %d: %v, check %v, want pass %v", stateName(tc.state), tc.inode, err, r.check(id), tc.pass)
		}
	}
	e := make([]byte, 20)
	code := -int32(syscall.ENOENT)
	binary.NativeEndian.PutUint32(e, uint32(code))
	if _, err := parseReply(reply(nlmsgError, 7, e), 7); err == nil || !strings.Contains(err.Error(), syscall.ENOENT.Error()) {
		t.Errorf("error reply: %v", err)
	}
	for _, b := range [][]byte{nil, reply(sockDiagByFamily, 7, msg[:40]), reply(nlmsgDone, 7, nil), reply(sockDiagByFamily, 7, msg)[:30]} {
		if _, err := parseReply(b, 7); err == nil {
			t.Errorf("%x parsed", b)
		}
	}
	// The request is what the kernel reads.
	req := encodeRequest(id, 9)
	if len(req) != nlmsgHdrLen+diagReqLen || binary.NativeEndian.Uint32(req) != uint32(len(req)) || req[16] != afInet || req[17] != ipprotoTCP {
		t.Errorf("request %x", req)
	}
}

func FuzzParseReply(f *testing.F) {
	msg := make([]byte, diagMsgLen)
	f.Add(reply(sockDiagByFamily, 1, msg))
	f.Add(reply(nlmsgError, 1, make([]byte, 20)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		parseReply(b, 1)
	})
}

// TestMappedIPv6Client: a client whose socket is IPv6 (dual-stack, as
// Java's are) connecting to 127.0.0.1 through ::ffff:127.0.0.1 is named
// too: the kernel reports its socket as IPv6 with mapped addresses.
func TestMappedIPv6Client(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, refused := serveHello(t, ln)
	fd, err := syscall.Socket(syscall.AF_INET6, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Skip("no IPv6 sockets:", err)
	}
	sa := &syscall.SockaddrInet6{Port: ln.Addr().(*net.TCPAddr).Port}
	copy(sa.Addr[:], net.IPv4(127, 0, 0, 1).To16())
	if err := syscall.Connect(fd, sa); err != nil {
		syscall.Close(fd)
		t.Skip("cannot connect to a mapped address:", err)
	}
	f := os.NewFile(uintptr(fd), "mapped")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	data, _ := io.ReadAll(c)
	if string(data) != "hello" {
		select {
		case r := <-refused:
			t.Fatalf("the owner's mapped-IPv6 connection was refused: %+v", r)
		default:
			t.Fatalf("read %q", data)
		}
	}
}
