package sandbox

import (
	"encoding/binary"
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

	"github.com/berth-mcp/berth/sandbox/internal/launcher"
)

// startTimeout bounds the wait for the launcher to exec the server.
const startTimeout = 30 * time.Second

func wrap(cmd *exec.Cmd, p *Policy, o *Options) (*Launch, error) {
	s := Probe()
	e, err := enforcement(p, s, o)
	if err != nil {
		return nil, err
	}
	netns := e.NetworkNamespace
	mntns := e.MountNamespace
	bridge := netns && p.Network == NetworkHosts
	env := withoutEnv(cmd.Environ(), launcherEnv)
	if bridge {
		env = proxyEnv(env, launcher.BridgePort)
	}
	var flags uint32
	if netns {
		flags |= launcher.FlagNetNS
	}
	if bridge {
		flags |= launcher.FlagBridge
	}
	if mntns {
		flags |= launcher.FlagMountNS
	}
	l := &Launch{Enforcement: e, cmd: cmd}
	fail := func(err error) (*Launch, error) {
		l.closeAll()
		return nil, err
	}
	var ruleset *os.File
	var llFlags uint32
	if e.LandlockABI > 0 {
		fd, fl, err := landlockRuleset(p, e.LandlockABI, netns, bridge)
		if err != nil {
			return nil, fmt.Errorf("sandbox: Landlock ruleset: %w", err)
		}
		ruleset = os.NewFile(uintptr(fd), "sandbox-ruleset")
		l.closeAfterStart = append(l.closeAfterStart, ruleset)
		llFlags = fl
		flags |= launcher.FlagLandlock
	}
	var prog []byte
	if e.Seccomp {
		prog, err = seccompProgram(p, e.LandlockABI, netns)
		if err != nil {
			return fail(fmt.Errorf("sandbox: seccomp program: %w", err))
		}
		flags |= launcher.FlagSeccomp
	}
	var readOnly []string
	if mntns {
		readOnly = p.ReadOnly
	}
	body := encodeSpec(flags, llFlags, cmd.Path, cmd.Args, env, prog, readOnly)

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
	next := 3 + len(cmd.ExtraFiles)
	files := []*os.File{specR, statusW}
	fds := []int{next, next + 1, -1, -1}
	next += 2
	if bridge {
		pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			specW.Close()
			return fail(fmt.Errorf("sandbox: a socket pair for the egress bridge: %w", err))
		}
		l.bridge = os.NewFile(uintptr(pair[0]), "sandbox-bridge")
		child := os.NewFile(uintptr(pair[1]), "sandbox-bridge-child")
		l.closeAfterStart = append(l.closeAfterStart, child)
		files = append(files, child)
		fds[2] = next
		next++
	}
	if ruleset != nil {
		files = append(files, ruleset)
		fds[3] = next
	}
	go func() {
		// The pipe may be smaller than the spec; Started closes the read
		// end if the launcher never reads it, which ends this write.
		_, _ = specW.Write(body)
		specW.Close()
	}()

	cmd.ExtraFiles = append(cmd.ExtraFiles, files...)
	cmd.Env = []string{fmt.Sprintf("%s=%d,%d,%d,%d", launcherEnv, fds[0], fds[1], fds[2], fds[3])}
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
	if netns || mntns {
		nsAttr(attr, netns, mntns)
	}
	cmd.SysProcAttr = attr
	return l, nil
}

// encodeSpec is the launcher's wire format (package launcher's doc).
func encodeSpec(flags, llFlags uint32, path string, argv, env []string, prog []byte, readOnly []string) []byte {
	var b []byte
	u32 := func(v uint32) { b = binary.LittleEndian.AppendUint32(b, v) }
	str := func(s string) { u32(uint32(len(s))); b = append(b, s...) }
	strs := func(ss []string) {
		u32(uint32(len(ss)))
		for _, s := range ss {
			str(s)
		}
	}
	u32(flags)
	u32(llFlags)
	str(path)
	strs(argv)
	strs(env)
	str(string(prog))
	strs(readOnly)
	return b
}

// proxyEnv points every proxy variable at the bridged egress proxy.
func proxyEnv(env []string, port int) []string {
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	names := []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"}
	for _, n := range append(names, "NO_PROXY", "no_proxy") {
		env = withoutEnv(env, n)
	}
	for _, n := range names {
		env = append(env, n+"="+url)
	}
	return env
}

// nsAttr makes the child a new user namespace, mapped to the caller's own
// uid and gid, and a new network namespace (netns: with CAP_NET_ADMIN
// there so the launcher can bring loopback up) and mount namespace (mntns:
// with CAP_SYS_ADMIN there for the read-only binds); the launcher drops
// both before the exec.
func nsAttr(attr *syscall.SysProcAttr, netns, mntns bool) {
	attr.Cloneflags |= syscall.CLONE_NEWUSER
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	if netns {
		attr.Cloneflags |= syscall.CLONE_NEWNET
		attr.AmbientCaps = append(attr.AmbientCaps, unix.CAP_NET_ADMIN)
	}
	if mntns {
		attr.Cloneflags |= syscall.CLONE_NEWNS
		attr.AmbientCaps = append(attr.AmbientCaps, unix.CAP_SYS_ADMIN)
	}
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

// probeNamespaces really creates a user, network and mount namespace once,
// the way Wrap will: it forks a child with the same clone flags, id maps and
// ambient capability and has it exec a path that does not exist, so no
// program runs. ENOENT means everything before the exec worked.
func probeNamespaces() error {
	attr := &syscall.SysProcAttr{}
	nsAttr(attr, true, true)
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

// launcherMain is Main on Linux: the launcher itself runs in the init of
// package launcher, before berth's other packages initialise, and never
// returns into main; this reference keeps it linked in.
func launcherMain() { _ = launcher.Active() }
