//go:build linux

package hostile

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/berth-mcp/berth/internal/testkit"
)

// Package is the import path of berth-hostile, for testkit.GoBuild.
const Package = "github.com/berth-mcp/berth/internal/hostile/berth-hostile"

// Log records what the test's listeners received, so that a test can say
// that an attack which reported failure really reached nothing. It is
// safe for concurrent use.
type Log struct {
	mu  sync.Mutex
	got []string
}

func (l *Log) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, fmt.Sprintf(format, args...))
}

// Got returns what the listeners received so far.
func (l *Log) Got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

// Reset forgets what was received.
func (l *Log) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = nil
}

// ListenTCP listens on addr (host:port, port 0 for any) and greets every
// connection with a line naming the listener, recorded in log. It closes
// with the test.
func ListenTCP(t testing.TB, addr string, log *Log) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return serveTCP(t, ln, log)
}

func serveTCP(t testing.TB, ln net.Listener, log *Log) string {
	t.Cleanup(func() { ln.Close() })
	a := ln.Addr().String()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			log.add("tcp %s from %s", a, c.RemoteAddr())
			fmt.Fprintf(c, "greetings from the test's listener %s\n", a)
			c.Close()
		}
	}()
	return a
}

// ListenHTTP serves plain HTTP on addr: every request gets "the declared
// API at <addr>", recorded in log.
func ListenHTTP(t testing.TB, addr string, log *Log) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	a := ln.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add("http %s %s %s from %s", a, r.Method, r.URL, r.RemoteAddr)
		fmt.Fprintf(w, "the declared API at %s\n", a)
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return a
}

// ListenUDP listens on addr and answers every datagram with "ack",
// recording it in log.
func ListenUDP(t testing.TB, addr string, log *Log) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return serveUDP(t, pc, log, false)
}

// serveUDP answers every datagram: "ack", or as a DNS server that knows
// no name (the query sent back with QR set and NXDOMAIN).
func serveUDP(t testing.TB, pc net.PacketConn, log *Log, dns bool) string {
	t.Cleanup(func() { pc.Close() })
	a := pc.LocalAddr().String()
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			msg := buf[:n]
			if !dns {
				log.add("udp %s from %s: %q", a, from, msg)
				pc.WriteTo([]byte("ack"), from)
				continue
			}
			log.add("dns %s from %s: %q", a, from, msg)
			if n < 12 {
				continue
			}
			resp := slices.Clone(msg)
			resp[2] |= 0x80              // QR: a response
			resp[3] = resp[3]&0xf0 | 0x3 // RCODE: NXDOMAIN
			pc.WriteTo(resp, from)
		}
	}()
	return a
}

// NetNS is a network namespace the test made, joined to the host's by a
// veth pair: Peer is its address, reachable from the host's namespace (and
// so by an unconfined server) through the host end at Host. TCP, UDP and
// DNS are listeners inside it; Log is what they received.
type NetNS struct {
	Name       string
	Host, Peer string
	TCP        string // Peer:port, greets
	UDP        string // Peer:port, answers "ack"
	DNS        string // Peer:53, answers NXDOMAIN
	Log        Log
}

// NewNetNS makes a network namespace with `ip netns` and a veth pair, and
// starts the listeners inside it; all is removed when the test ends. It
// needs root and the ip command, and skips the test without them (fails
// it under BERTH_REQUIRE_ROOT).
func NewNetNS(t testing.TB) *NetNS {
	t.Helper()
	testkit.NeedRoot(t, "to make a network namespace with ip netns")
	ipCmd, err := exec.LookPath("ip")
	if err != nil {
		if os.Getenv(testkit.RequireRootEnv) != "" {
			t.Fatalf("needs the ip command (iproute2): %v; %s is set, which makes this a failure", err, testkit.RequireRootEnv)
		}
		t.Skipf("needs the ip command (iproute2): %v", err)
	}
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ipCmd, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	id := rand.IntN(1_000_000)
	n := &NetNS{Name: fmt.Sprintf("berth-hostile-%d", id)}
	// A /30 in 10.239.0.0/16 that no other namespace of the host uses.
	var sub int
	for sub = rand.IntN(16384); ; sub = (sub + 1) % 16384 {
		host := fmt.Sprintf("10.239.%d.%d", sub/64, sub%64*4+1)
		if !addressInUse(host) {
			n.Host, n.Peer = host, fmt.Sprintf("10.239.%d.%d", sub/64, sub%64*4+2)
			break
		}
	}
	veth := fmt.Sprintf("bh%d", id)
	ip("netns", "add", n.Name)
	t.Cleanup(func() { exec.Command(ipCmd, "netns", "del", n.Name).Run() })
	ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", n.Name)
	t.Cleanup(func() { exec.Command(ipCmd, "link", "del", veth).Run() })
	ip("addr", "add", n.Host+"/30", "dev", veth)
	ip("link", "set", veth, "up")
	ip("-n", n.Name, "addr", "add", n.Peer+"/30", "dev", "eth0")
	ip("-n", n.Name, "link", "set", "eth0", "up")
	ip("-n", n.Name, "link", "set", "lo", "up")

	err = inNetNS(n.Name, func() error {
		ln, err := net.Listen("tcp", net.JoinHostPort(n.Peer, "0"))
		if err != nil {
			return err
		}
		n.TCP = serveTCP(t, ln, &n.Log)
		pc, err := net.ListenPacket("udp", net.JoinHostPort(n.Peer, "0"))
		if err != nil {
			return err
		}
		n.UDP = serveUDP(t, pc, &n.Log, false)
		pc, err = net.ListenPacket("udp", net.JoinHostPort(n.Peer, "53"))
		if err != nil {
			return err
		}
		n.DNS = serveUDP(t, pc, &n.Log, true)
		return nil
	})
	if err != nil {
		t.Fatalf("listening in the network namespace %s: %v", n.Name, err)
	}
	// The host's side reaches it: what a server with the host's network
	// would do.
	c, err := net.Dial("tcp", n.TCP)
	if err != nil {
		t.Fatalf("the test's own network namespace %s is not reachable from the host: %v", n.Name, err)
	}
	c.Close()
	// The listener logs the probe on its own goroutine: wait for it
	// before forgetting it.
	if !testkit.Within(5*time.Second, func() bool { return len(n.Log.Got()) > 0 }) {
		t.Fatalf("the listener in %s did not see the test's own connection", n.Name)
	}
	n.Log.Reset()
	return n
}

func addressInUse(a string) bool {
	ifs, _ := net.InterfaceAddrs()
	for _, x := range ifs {
		if ipn, ok := x.(*net.IPNet); ok && ipn.IP.String() == a {
			return true
		}
	}
	return false
}

// inNetNS runs f on a thread that joined the named network namespace:
// the sockets f opens belong to it. The thread returns to the test's
// namespace after, or is thrown away if it cannot.
func inNetNS(name string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- err
			return
		}
		defer self.Close()
		target, err := os.Open(filepath.Join("/run/netns", name))
		if err != nil {
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns: %w", err)
			return
		}
		ferr := f()
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err == nil {
			runtime.UnlockOSThread() // else the locked thread ends with the goroutine
		}
		errc <- ferr
	}()
	return <-errc
}

// StartBus starts a private D-Bus session bus (dbus-daemon) for the test
// and returns its address, or "" and why not when dbus-daemon is missing.
func StartBus(t testing.TB) (addr, why string) {
	t.Helper()
	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		return "", "dbus-daemon is not on PATH (the Debian package dbus)"
	}
	dir, err := os.MkdirTemp("", "berth-bus-") // short: a socket path is short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "bus")
	cmd := exec.Command(daemon, "--session", "--nofork", "--nopidfile", "--address=unix:path="+sock)
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting dbus-daemon: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if !testkit.Within(10*time.Second, func() bool {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		t.Fatalf("dbus-daemon did not listen on %s within 10s", sock)
	}
	return "unix:path=" + sock, ""
}
