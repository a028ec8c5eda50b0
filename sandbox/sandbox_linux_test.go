package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/testkit"
	"golang.org/x/sys/unix"
)

// probeDir holds the hostile test program sandbox/internal/probe, built once.
var probeDir string

func TestMain(m *testing.M) {
	Main()
	os.Exit(testMain(m))
}

// probeEnv hands the built probe to this test binary run as another user.
const probeEnv = "BERTH_SANDBOX_TEST_PROBE"

func testMain(m *testing.M) int {
	if dir := os.Getenv(probeEnv); dir != "" {
		probeDir = dir
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "berth-sandbox-probe-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := testkit.GoBuild(dir, "github.com/berth-mcp/berth/sandbox/internal/probe"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	probeDir = dir
	return m.Run()
}

func probePath() string { return filepath.Join(probeDir, "probe") }

// world is one test's files: a workspace the policy may write, a secret
// beside it, and the probe's own directory as the exec path.
type world struct {
	ws, secret, bundle string
}

func newWorld(t *testing.T) *world {
	root := t.TempDir()
	w := &world{ws: filepath.Join(root, "ws"), secret: filepath.Join(root, "secret"), bundle: filepath.Join(root, "bundle")}
	for _, d := range []string{w.ws, w.secret, w.bundle} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(w.secret, "id_ed25519"), []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) policy() *Policy {
	return &Policy{Exec: []string{probeDir, w.bundle}, Write: []string{w.ws}, Network: NetworkOpen}
}

// run starts the probe with args under p (nil: unconfined) and returns its
// output and whether it said ok.
func run(t *testing.T, p *Policy, args ...string) (string, bool) {
	t.Helper()
	return runCmd(t, exec.Command(probePath(), args...), p)
}

// runCmd runs cmd under p (nil: unconfined, the control that shows an
// attack works without the sandbox) and returns its output and whether it
// ended with "ok".
func runCmd(t *testing.T, cmd *exec.Cmd, p *Policy) (string, bool) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if p != nil {
		l, err := Wrap(cmd, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := l.Started(cmd.Start())
		if err != nil {
			_ = cmd.Wait()
			t.Fatalf("start: %v", err)
		}
		if ln != nil {
			defer ln.Close()
		}
	} else if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	s := strings.TrimSpace(out.String())
	return s, err == nil && strings.HasSuffix(s, "ok")
}

// attack runs the probe unconfined (it must succeed: the attack is real
// here) and then under p (it must fail).
func attack(t *testing.T, p *Policy, args ...string) string {
	t.Helper()
	if out, ok := run(t, nil, args...); !ok {
		t.Fatalf("unconfined %v failed, so the test proves nothing: %s", args, out)
	}
	out, ok := run(t, p, args...)
	if ok {
		t.Fatalf("confined %v worked: %s", args, out)
	}
	return out
}

func needLandlock(t *testing.T, abi int) {
	t.Helper()
	if got := Probe().LandlockABI; got < abi {
		t.Skipf("needs Landlock ABI %d, the kernel has %d", abi, got)
	}
}

func needNamespaces(t *testing.T) {
	t.Helper()
	if !Probe().UserNamespaces {
		t.Skip("needs user and network namespaces")
	}
}

func TestReadOutsideAllowedPaths(t *testing.T) {
	needLandlock(t, 1)
	w := newWorld(t)
	out := attack(t, w.policy(), "read", filepath.Join(w.secret, "id_ed25519"))
	if !strings.Contains(out, "permission denied") {
		t.Errorf("want permission denied, got %s", out)
	}
	attack(t, w.policy(), "list", filepath.Dir(w.ws))
	// what the policy allows still works
	if out, ok := run(t, w.policy(), "read", "/etc/hostname"); !ok {
		t.Errorf("reading the base set: %s", out)
	}
}

func TestReadPath(t *testing.T) {
	needLandlock(t, 1)
	w := newWorld(t)
	p := w.policy()
	p.Read = []string{w.secret}
	if out, ok := run(t, p, "read", filepath.Join(w.secret, "id_ed25519")); !ok {
		t.Errorf("reading a read path: %s", out)
	}
	attack(t, p, "write", filepath.Join(w.secret, "planted"))
}

func TestWriteIntoExecPath(t *testing.T) {
	needLandlock(t, 1)
	w := newWorld(t)
	attack(t, w.policy(), "write", filepath.Join(w.bundle, "planted"))
	if out, ok := run(t, w.policy(), "write", filepath.Join(w.ws, "fine")); !ok {
		t.Errorf("writing the workspace: %s", out)
	}
}

func TestExecFromWritePath(t *testing.T) {
	needLandlock(t, 1)
	w := newWorld(t)
	data, err := os.ReadFile(probePath())
	if err != nil {
		t.Fatal(err)
	}
	dropped := filepath.Join(w.ws, "dropped")
	if err := os.WriteFile(dropped, data, 0o755); err != nil {
		t.Fatal(err)
	}
	attack(t, w.policy(), "exec", dropped, "true")
}

func TestDevicesOfTheBaseSet(t *testing.T) {
	needLandlock(t, 1)
	w := newWorld(t)
	for _, a := range [][]string{{"write", "/dev/null"}, {"read-some", "/dev/zero"}, {"read-some", "/dev/urandom"}} {
		if out, ok := run(t, w.policy(), a...); !ok {
			t.Errorf("%v: %s", a, out)
		}
	}
}

func TestAbstractUnixSocketOutside(t *testing.T) {
	needLandlock(t, 6)
	w := newWorld(t)
	name := fmt.Sprintf("berth-sandbox-test-%d", os.Getpid())
	ln, err := net.Listen("unix", "@"+name)
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
			c.Close()
		}
	}()
	p := w.policy()
	p.UnixSockets = true // so that only Landlock's scope stands in the way
	attack(t, p, "connect", "abstract:"+name)
}

func TestSignalOutside(t *testing.T) {
	needLandlock(t, 6)
	w := newWorld(t)
	attack(t, w.policy(), "kill", fmt.Sprint(os.Getpid()))
}

func TestReadParentEnviron(t *testing.T) {
	needLandlock(t, 1)
	w := newWorld(t)
	attack(t, w.policy(), "read", fmt.Sprintf("/proc/%d/environ", os.Getpid()))
}

func TestPtrace(t *testing.T) {
	w := newWorld(t)
	// its own child is in its own sandbox: only seccomp refuses this
	attack(t, w.policy(), "ptrace-child")
	// berth itself: Landlock's ptrace rule and seccomp (no unconfined
	// control: it would stop this test)
	if out, ok := run(t, w.policy(), "ptrace", fmt.Sprint(os.Getpid())); ok {
		t.Errorf("ptrace of berth worked: %s", out)
	}
}

func TestNewUserNamespace(t *testing.T) {
	needNamespaces(t)
	w := newWorld(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("needs unshare(1)")
	}
	attack(t, w.policy(), "exec", unshare, "--user", "true")
	attack(t, w.policy(), "clone-newuser")
}

func TestUnixSocket(t *testing.T) {
	w := newWorld(t)
	p := w.policy()
	if Probe().LandlockABI >= unixABI {
		t.Skip("Landlock ABI 9 guards pathname sockets; seccomp leaves socket(AF_UNIX) alone")
	}
	attack(t, p, "unixsocket")
	attack(t, p, "unixsocket-hi")
	p.UnixSockets = true
	if out, ok := run(t, p, "unixsocket"); !ok {
		t.Errorf("with UnixSockets: %s", out)
	}
}

func TestRawSocket(t *testing.T) {
	testkit.NeedRoot(t, "a raw socket needs CAP_NET_RAW")
	w := newWorld(t)
	attack(t, w.policy(), "rawsocket")
}

func TestCapabilitiesDropped(t *testing.T) {
	w := newWorld(t)
	for _, mode := range []string{NetworkOpen, NetworkNone} {
		p := w.policy()
		p.Network = mode
		out, _ := run(t, p, "caps")
		for _, l := range strings.Split(out, "\n") {
			k, v, _ := strings.Cut(l, ":")
			// A user without root has no bounding set to drop: with
			// no_new_privs, exec grants nothing from it.
			if k == "CapBnd" && os.Geteuid() != 0 {
				continue
			}
			if strings.Trim(v, "\t 0") != "" {
				t.Errorf("network %s: %s", mode, l)
			}
		}
	}
}

// hostListener is a listener in the test's (host) network namespace.
func hostListener(t *testing.T) string {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

func TestNetworkNone(t *testing.T) {
	needNamespaces(t)
	w := newWorld(t)
	p := w.policy()
	p.Network = NetworkNone
	// TCP: Landlock refuses the connect (permission denied); without it
	// nothing listens in the namespace (connection refused)
	attack(t, p, "connect", "tcp:"+hostListener(t))
	// UDP, which Landlock ABI < 10 does not see: the namespace alone. No
	// route out at all (a documentation address, never reached)...
	if out, ok := run(t, p, "udp", "192.0.2.1:53"); ok || !strings.Contains(out, "unreachable") {
		t.Errorf("UDP: want network is unreachable, got %s", out)
	}
	// ...and the host's loopback is not the namespace's.
	addr, got := hostUDP(t)
	if out, ok := run(t, nil, "udp", addr); !ok || !receives(got) {
		t.Fatalf("unconfined UDP did not arrive (%s), so the test proves nothing", out)
	}
	run(t, p, "udp", addr)
	if receives(got) {
		t.Error("a datagram from the sandbox reached the host's loopback")
	}
}

func TestNetworkNoneNoBind(t *testing.T) {
	needNamespaces(t)
	needLandlock(t, 4)
	w := newWorld(t)
	p := w.policy()
	p.Network = NetworkNone
	attack(t, p, "listen")
}

func TestNetworkHostsBridge(t *testing.T) {
	needNamespaces(t)
	w := newWorld(t)
	p := w.policy()
	p.Network = NetworkHosts
	p.Hosts = []string{"api.example.com:443"}
	cmd := exec.Command(probePath(), "proxy")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	l, err := Wrap(cmd, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Enforcement.NetworkNamespace || len(l.Enforcement.ProxyHosts) != 1 {
		t.Errorf("enforcement %+v", l.Enforcement)
	}
	ln, err := l.Started(cmd.Start())
	if err != nil {
		t.Fatal(err)
	}
	if ln == nil {
		t.Fatal("no egress listener")
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		got <- line
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	select {
	case line := <-got:
		if line != "hello from inside\n" {
			t.Errorf("the proxy read %q", line)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing reached the egress listener")
	}
	// and nothing else: a host listener is not in the namespace
	if out, ok := run(t, p, "connect", "tcp:"+hostListener(t)); ok {
		t.Errorf("connected past the proxy: %s", out)
	}
}

func TestSetupErrorReported(t *testing.T) {
	w := newWorld(t)
	data, err := os.ReadFile(probePath())
	if err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(w.bundle, "gone")
	if err := os.WriteFile(gone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gone, "true")
	l, err := Wrap(cmd, w.policy(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// removed between Wrap and the launcher's exec
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	_, err = l.Started(cmd.Start())
	werr := cmd.Wait()
	if err == nil || !strings.Contains(err.Error(), gone) || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("Started: %v, want an error naming %s", err, gone)
	}
	if werr == nil {
		t.Error("the launcher exited 0 after a setup error")
	}
}

func TestWrapRefuses(t *testing.T) {
	w := newWorld(t)
	for name, p := range map[string]*Policy{
		"relative": {Exec: []string{"bin"}, Network: NetworkOpen},
		"missing":  {Read: []string{filepath.Join(w.ws, "nope")}, Network: NetworkOpen},
		"overlap":  {Exec: []string{w.ws}, Write: []string{filepath.Join(w.ws)}, Network: NetworkOpen},
		"nested":   {Exec: []string{filepath.Dir(w.ws)}, Write: []string{w.ws}, Network: NetworkOpen},
		"network":  {Network: "wide"},
		"hosts":    {Network: NetworkNone, Hosts: []string{"a:1"}},
	} {
		if _, err := Wrap(exec.Command(probePath()), p, nil); err == nil {
			t.Errorf("%s: Wrap accepted %+v", name, p)
		}
	}
}

// hostUDP listens for datagrams on the host's loopback.
func hostUDP(t *testing.T) (string, chan string) {
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	got := make(chan string, 10)
	go func() {
		buf := make([]byte, 100)
		for {
			n, _, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			got <- string(buf[:n])
		}
	}()
	return c.LocalAddr().String(), got
}

func receives(got chan string) bool {
	select {
	case <-got:
		return true
	case <-time.After(500 * time.Millisecond):
		return false
	}
}

// TestAsNobody runs the attacks that differ for a user without root (no
// capabilities to drop, a user namespace of its own for the network) as
// user nobody.
func TestAsNobody(t *testing.T) {
	if os.Getenv(probeEnv) != "" {
		t.Skip("already another user")
	}
	tests := "^(TestReadOutsideAllowedPaths|TestWriteIntoExecPath|TestExecFromWritePath|TestSignalOutside|TestReadParentEnviron|TestPtrace|TestNewUserNamespace|TestUnixSocket|TestCapabilitiesDropped|TestNetworkNone|TestNetworkNoneNoBind|TestNetworkHostsBridge|TestTerminalInjection)$"
	cmd := testkit.AsNobody(t, []string{probeEnv + "=" + probeDir, "PATH=" + os.Getenv("PATH")}, "-test.run="+tests, "-test.v", "-test.count=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Errorf("as nobody, tests were skipped:\n%s", out)
	}
	if n := strings.Count(string(out), "--- PASS"); n < 13 {
		t.Errorf("as nobody, %d tests passed, want 13:\n%s", n, out)
	}
}

// TestRuntimesStart is the benign side: real runtimes start and work under
// the base set and a workspace, in every network mode.
func TestRuntimesStart(t *testing.T) {
	w := newWorld(t)
	progs := map[string][]string{
		"node":    {"-e", "require('fs').writeFileSync(process.argv[1] + '/n.txt', 'x'); require('crypto').randomBytes(8); require('https'); console.log('ok')", w.ws},
		"python3": {"-c", "import sys, json, ssl, os; open(sys.argv[1] + '/p.txt', 'w').write('x'); os.urandom(8); print('ok')", w.ws},
		"sh":      {"-c", "echo hi > \"$0/s.txt\" && cat /dev/null && echo ok", w.ws},
	}
	for name, args := range progs {
		path, err := exec.LookPath(name)
		if err != nil {
			t.Logf("%s not installed", name)
			continue
		}
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{NetworkOpen, NetworkNone, NetworkHosts} {
			p := w.policy()
			p.Network = mode
			// the runtime prefix, as the pool resolves it (pyenv's python
			// lives under $HOME)
			if prefix := filepath.Dir(filepath.Dir(real)); !strings.HasPrefix(prefix, "/usr") {
				p.Exec = append(p.Exec, prefix)
			}
			cmd := exec.Command(real, args...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			l, err := Wrap(cmd, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			ln, err := l.Started(cmd.Start())
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if ln != nil {
				ln.Close()
			}
			if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), "ok") {
				t.Errorf("%s under network %s: %v\n%s", name, mode, err, out.String())
			}
		}
	}
}

func TestTerminalInjection(t *testing.T) {
	w := newWorld(t)
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	try := func(p *Policy) (string, bool) {
		cmd := exec.Command(probePath(), "tiocsti")
		var out bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, &out, &out
		// its controlling terminal: no capability needed, only the rule
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		if p != nil {
			l, err := Wrap(cmd, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Started(cmd.Start()); err != nil {
				t.Fatal(err)
			}
		} else if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		return out.String(), err == nil
	}
	if out, ok := try(nil); !ok {
		t.Skipf("TIOCSTI refused even unconfined (dev.tty.legacy_tiocsti=0?): %s", out)
	}
	if out, ok := try(w.policy()); ok {
		t.Errorf("confined TIOCSTI worked: %s", out)
	}
}
