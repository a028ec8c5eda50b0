package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	seccomp "github.com/elastic/go-seccomp-bpf"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// launchSpec is what berth tells the launcher, as JSON on an inherited
// pipe (never argv, never the environment).
type launchSpec struct {
	// Path, Args and Env are the server's program, argv and environment.
	Path string   `json:"path"`
	Args []string `json:"args"`
	Env  []string `json:"env"`
	// Policy is the server's authority.
	Policy Policy `json:"policy"`
	// NetNS is set when the launcher runs in its own user and network
	// namespace (Policy.Network none or hosts on a host with namespaces).
	NetNS bool `json:"netns"`
	// ABI is the Landlock ABI berth reported in the Enforcement; the
	// launcher refuses to run with less.
	ABI int `json:"abi"`
	// Seccomp is whether berth reported seccomp in the Enforcement.
	Seccomp bool `json:"seccomp"`
}

// startTimeout bounds the wait for the launcher to exec the server.
const startTimeout = 30 * time.Second

func wrap(cmd *exec.Cmd, p *Policy, o *Options) (*Launch, error) {
	s := Probe()
	e, err := enforcement(p, s, o)
	if err != nil {
		return nil, err
	}
	spec := launchSpec{
		Path:    cmd.Path,
		Args:    append([]string(nil), cmd.Args...),
		Env:     cmd.Environ(),
		Policy:  *p,
		NetNS:   e.NetworkNamespace,
		ABI:     e.LandlockABI,
		Seccomp: e.Seccomp,
	}
	body, err := json.Marshal(&spec)
	if err != nil {
		return nil, fmt.Errorf("sandbox: encoding the launch: %w", err)
	}
	l := &Launch{Enforcement: e, cmd: cmd}
	fail := func(err error) (*Launch, error) {
		l.closeAll()
		return nil, err
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return fail(fmt.Errorf("sandbox: a pipe for the launcher: %w", err))
	}
	l.closeAfterStart = append(l.closeAfterStart, specR)
	statusR, statusW, err := os.Pipe()
	if err != nil {
		specW.Close()
		return fail(fmt.Errorf("sandbox: a pipe for the launcher: %w", err))
	}
	l.status = statusR
	l.closeAfterStart = append(l.closeAfterStart, statusW)
	first := 3 + len(cmd.ExtraFiles)
	files := []*os.File{specR, statusW}
	bridgeFD := -1
	if e.NetworkNamespace && p.Network == NetworkHosts {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			specW.Close()
			return fail(fmt.Errorf("sandbox: a socket pair for the egress bridge: %w", err))
		}
		l.bridge = os.NewFile(uintptr(fds[0]), "sandbox-bridge")
		child := os.NewFile(uintptr(fds[1]), "sandbox-bridge-child")
		l.closeAfterStart = append(l.closeAfterStart, child)
		files = append(files, child)
		bridgeFD = first + 2
	}
	go func() {
		// The pipe may be smaller than the spec; Started closes the read
		// end if the launcher never reads it, which ends this write.
		_, _ = specW.Write(body)
		specW.Close()
	}()

	cmd.ExtraFiles = append(cmd.ExtraFiles, files...)
	cmd.Env = []string{fmt.Sprintf("%s=%d,%d,%d", launcherEnv, first, first+1, bridgeFD)}
	cmd.Path = o.Launcher
	if cmd.Path == "" {
		cmd.Path = "/proc/self/exe"
	}
	cmd.Args = []string{"berth-sandbox"}
	attr := &syscall.SysProcAttr{}
	if cmd.SysProcAttr != nil {
		a := *cmd.SysProcAttr
		attr = &a
	}
	if e.NetworkNamespace {
		nsAttr(attr)
	}
	cmd.SysProcAttr = attr
	return l, nil
}

// nsAttr makes the child a new user and network namespace, mapped to the
// caller's own uid and gid, with CAP_NET_ADMIN there so the launcher can
// bring loopback up (it drops it before the exec).
func nsAttr(attr *syscall.SysProcAttr) {
	attr.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	attr.AmbientCaps = []uintptr{unix.CAP_NET_ADMIN}
}

func (l *Launch) closeAll() {
	for _, f := range l.closeAfterStart {
		f.Close()
	}
	l.closeAfterStart = nil
	if l.status != nil {
		l.status.Close()
	}
	if l.bridge != nil {
		l.bridge.Close()
	}
}

func (l *Launch) started(startErr error) (net.Listener, error) {
	if l.done {
		panic("sandbox: Launch.Started called twice")
	}
	l.done = true
	for _, f := range l.closeAfterStart {
		f.Close()
	}
	l.closeAfterStart = nil
	defer l.closeAll()
	if startErr != nil {
		return nil, startErr
	}
	kill := func() {
		if l.cmd.Process != nil {
			_ = l.cmd.Process.Kill()
		}
	}
	_ = l.status.SetReadDeadline(time.Now().Add(startTimeout))
	msg, err := io.ReadAll(io.LimitReader(l.status, 64<<10))
	if err != nil {
		kill()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, fmt.Errorf("sandbox: the launcher did not start the server within %v; it was stopped", startTimeout)
		}
		return nil, fmt.Errorf("sandbox: reading the launcher's status: %w", err)
	}
	if len(msg) > 0 {
		// The launcher exits by itself after reporting.
		return nil, errors.New(strings.TrimSpace(string(msg)))
	}
	if l.bridge == nil {
		return nil, nil
	}
	ln, err := receiveListener(l.bridge)
	if err != nil {
		kill()
		return nil, fmt.Errorf("sandbox: receiving the egress listener from the launcher: %w", err)
	}
	return ln, nil
}

// receiveListener reads the listening socket the launcher sent over the
// bridge socket pair.
func receiveListener(bridge *os.File) (net.Listener, error) {
	// The launcher sends the listener before it execs, and its end is
	// close-on-exec: by the status pipe's EOF the message is there or the
	// socket reads EOF, so this blocking read does not wait.
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4*2))
	n, oobn, _, _, err := unix.Recvmsg(int(bridge.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if n == 0 || oobn == 0 {
		return nil, errors.New("the launcher sent no listener")
	}
	cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, c := range cmsgs {
		r, err := unix.ParseUnixRights(&c)
		if err != nil {
			return nil, err
		}
		fds = append(fds, r...)
	}
	if len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("the launcher sent %d descriptors, want 1", len(fds))
	}
	f := os.NewFile(uintptr(fds[0]), "sandbox-egress")
	defer f.Close()
	return net.FileListener(f)
}

func probe() *Support {
	s := &Support{OS: "linux"}
	if v, err := ll.LandlockGetABIVersion(); err == nil && v > 0 {
		s.LandlockABI = v
	} else {
		s.Notes = append(s.Notes, "Landlock: not available in this kernel (CONFIG_SECURITY_LANDLOCK, lsm= boot parameter)")
	}
	s.Seccomp = seccomp.Supported()
	if !s.Seccomp {
		s.Notes = append(s.Notes, "seccomp: filters not available in this kernel")
	}
	if err := probeNamespaces(); err != nil {
		s.Notes = append(s.Notes, "user and network namespaces: "+err.Error())
	} else {
		s.UserNamespaces = true
	}
	return s
}

// probeNamespaces really creates a user and network namespace once, the way
// Wrap will: it forks a child with the same clone flags, id maps and
// ambient capability and has it exec a path that does not exist, so no
// program runs. ENOENT means everything before the exec worked.
func probeNamespaces() error {
	attr := &syscall.SysProcAttr{}
	nsAttr(attr)
	pid, err := syscall.ForkExec("/nonexistent/berth-sandbox-probe", []string{"probe"}, &syscall.ProcAttr{Sys: attr})
	if err == nil {
		// Something exists at that path: it ran; reap it and call it a yes.
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
		return nil
	}
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	return fmt.Errorf("cannot be created here (%v)", err)
}

// parseMarker reads the launcher's descriptor numbers from launcherEnv.
func parseMarker(v string) (spec, status, bridge int, err error) {
	parts := strings.Split(v, ",")
	if len(parts) != 3 {
		return 0, 0, 0, fmt.Errorf("%s=%q: want three descriptor numbers", launcherEnv, v)
	}
	var n [3]int
	for i, s := range parts {
		n[i], err = strconv.Atoi(s)
		if err != nil || n[i] < -1 || (i < 2 && n[i] < 3) {
			return 0, 0, 0, fmt.Errorf("%s=%q: bad descriptor %q", launcherEnv, v, s)
		}
	}
	return n[0], n[1], n[2], nil
}
