package sandbox

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runPython runs /usr/bin/python3 -c script (args after it) under p (nil:
// unconfined) and returns its output and whether it printed "ok" last.
func runPython(t *testing.T, p *Policy, script string, args ...string) (string, bool) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("needs /usr/bin/python3")
	}
	return runCmd(t, exec.Command("/usr/bin/python3", append([]string{"-c", script}, args...)...), p)
}

// memfdExec copies a file the server wrote (argv[1]) into a memfd and
// executes it: code that was never reviewed, and that Landlock's execute
// right on the write paths was meant to keep from running.
const memfdExec = `
import os, sys
data = open(sys.argv[1], 'rb').read()
fd = os.memfd_create('x', 0)
os.write(fd, data)
os.execv('/proc/self/fd/%d' % fd, ['dropped', 'true'])
`

// TestAttack22MemfdExec: the workspace and the server's cache and temp are
// "never executable" (TestExecFromWritePath), but a server copies what it
// wrote there into memfd_create's anonymous file and executes that
// (execve of /proc/self/fd/N, or execveat with AT_EMPTY_PATH): Landlock
// does not see a memfd as a path under any rule. The launcher's seccomp
// filter allows memfd_create (and execveat) for every server.
func TestAttack22MemfdExec(t *testing.T) {
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
	if out, ok := runPython(t, nil, memfdExec, dropped); !ok {
		t.Fatalf("unconfined memfd exec failed, so the test proves nothing: %s", out)
	}
	// control: the dropped file itself is refused
	if out, ok := run(t, w.policy(), "exec", dropped, "true"); ok {
		t.Fatalf("exec of the dropped file worked: %s", out)
	}
	if out, ok := runPython(t, w.policy(), memfdExec, dropped); ok {
		t.Fatalf("confined server executed a file it wrote to its workspace through memfd_create: %s", out)
	}
}

// vsockSocket creates an AF_VSOCK stream socket and connects nowhere.
const vsockSocket = `
import socket
s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
print('ok')
`

// TestAttack22VsockEscapesNetworkNamespace: a server with network "none"
// (or "hosts") runs in a network namespace of its own, but AF_VSOCK is not
// namespaced on this kernel (no net.vsock sysctls): from inside such a
// namespace a vsock connect to CID 2 reaches the hypervisor host (on this
// machine, "unshare -Urn" then connect((2, 1)) is answered with a reset
// from the host). The seccomp filter refuses AF_PACKET and raw sockets but
// no other family that escapes the namespace (AF_VSOCK; AF_BLUETOOTH and
// others fail on their own outside the initial namespace). The test never
// connects: creating the socket is the hole.
func TestAttack22VsockEscapesNetworkNamespace(t *testing.T) {
	needLandlock(t, 4)
	needNamespaces(t)
	if out, ok := runPython(t, nil, vsockSocket); !ok {
		t.Skipf("this kernel has no AF_VSOCK: %s", out)
	}
	w := newWorld(t)
	p := w.policy()
	p.Network = NetworkNone
	if out, ok := runPython(t, p, vsockSocket); ok {
		t.Fatalf("a server with network none created an AF_VSOCK socket, which its network namespace does not contain: %s", out)
	}
}

// readInheritedFD reads from descriptor argv[1], which the server never
// opened: Landlock checks paths at open, not descriptors it is handed.
const readInheritedFD = `
import os, sys
print(os.pread(int(sys.argv[1]), 64, 0).decode())
print('ok')
`

// TestAttack22InheritedDescriptors: berth's own descriptors that are not
// close-on-exec (inherited from whatever started berth: an MCP client, a
// shell, a service manager; here one the test opens like that) pass
// through the launcher into the server. The launcher marks only its four
// descriptors close-on-exec and never closes the rest (close_range(3, ~0)
// but the server's ExtraFiles), so a confined server reads a secret
// through a descriptor it was never given (seen on this machine: the
// harness's fds 10 and 251 reach the server).
func TestAttack22InheritedDescriptors(t *testing.T) {
	needLandlock(t, 1)
	w := newWorld(t)
	secret := filepath.Join(w.secret, "id_ed25519")
	opened, err := syscall.Open(secret, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(opened)
	// a descriptor above the ones exec.Cmd and the launcher place, not
	// close-on-exec, as an inherited one is
	const fd = 300
	if err := syscall.Dup2(opened, fd); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	arg := strconv.Itoa(fd)
	if out, ok := runPython(t, nil, readInheritedFD, arg); !ok || !strings.Contains(out, "PRIVATE KEY") {
		t.Fatalf("unconfined read of the inherited descriptor failed, so the test proves nothing: %s", out)
	}
	if out, ok := runPython(t, w.policy(), readInheritedFD, arg); ok || strings.Contains(out, "PRIVATE KEY") {
		t.Fatalf("a confined server read %s through berth's inherited descriptor %d: %s", secret, fd, out)
	}
}

// dgramToPath sends a datagram to the pathname Unix socket argv[1] from
// one end of a socketpair: socket(AF_UNIX) is what the seccomp filter
// refuses, socketpair is allowed, and an AF_UNIX datagram socket, even a
// connected one, sends to any address sendto names.
const dgramToPath = `
import socket, sys
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
a.sendto(b'from the sandbox', sys.argv[1])
print('ok')
`

// TestAttack22UnixDatagramThroughSocketpair: below Landlock ABI 9 a server
// without Unix sockets must not reach pathname sockets (the session bus,
// journald, syslog, sd_notify, any datagram service of the operator's).
// The seccomp filter refuses socket(AF_UNIX, ...) but not socketpair, and
// sendto on an AF_UNIX datagram socket of a pair reaches any pathname
// datagram socket the operator can write (/dev/log, journald's socket: log
// injection as the operator; a user service's datagram socket).
func TestAttack22UnixDatagramThroughSocketpair(t *testing.T) {
	needLandlock(t, 1)
	if Probe().LandlockABI >= unixABI {
		t.Skip("Landlock governs pathname Unix sockets here")
	}
	w := newWorld(t)
	path := filepath.Join(w.secret, "service.sock")
	srv, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	got := make(chan string, 4)
	go func() {
		buf := make([]byte, 64)
		for {
			n, _, err := srv.ReadFromUnix(buf)
			if err != nil {
				return
			}
			got <- string(buf[:n])
		}
	}()
	if out, ok := runPython(t, nil, dgramToPath, path); !ok {
		t.Fatalf("unconfined send failed, so the test proves nothing: %s", out)
	}
	<-got
	out, _ := runPython(t, w.policy(), dgramToPath, path)
	select {
	case m := <-got:
		t.Fatalf("a confined server without Unix sockets sent %q to the pathname socket %s (%s)", m, path, out)
	case <-time.After(500 * time.Millisecond):
	}
}
