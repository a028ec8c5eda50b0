package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// launcherMain is Main on Linux. The launcher runs with an environment of
// launcherEnv only; its descriptors are the spec pipe (read, closed before
// the exec), the status pipe (write, close-on-exec: EOF at the exec, an
// error message otherwise) and the bridge socket (-1 unless NetworkHosts).
func launcherMain() {
	v, ok := os.LookupEnv(launcherEnv)
	if !ok {
		return
	}
	specFD, statusFD, bridgeFD, err := parseMarker(v)
	if err != nil {
		fmt.Fprintln(os.Stderr, "berth sandbox launcher:", err)
		os.Exit(126)
	}
	unix.CloseOnExec(statusFD)
	unix.CloseOnExec(specFD)
	if bridgeFD >= 0 {
		unix.CloseOnExec(bridgeFD)
	}
	status := os.NewFile(uintptr(statusFD), "sandbox-status")
	err = launch(specFD, bridgeFD)
	// launch returns only when the server could not be started confined.
	if _, werr := fmt.Fprintf(status, "sandbox: %v\n", err); werr != nil {
		fmt.Fprintln(os.Stderr, "berth sandbox launcher:", err)
	}
	os.Exit(126)
}

// launch confines this process and execs the server; it returns only on
// failure. Everything runs on one locked OS thread: Landlock is enforced
// on the calling thread, which then execs, so no other thread matters.
func launch(specFD, bridgeFD int) error {
	runtime.LockOSThread() // never unlocked: this thread execs or exits
	f := os.NewFile(uintptr(specFD), "sandbox-spec")
	body, err := io.ReadAll(io.LimitReader(f, 16<<20))
	f.Close()
	if err != nil {
		return fmt.Errorf("reading the launch from berth: %w", err)
	}
	var spec launchSpec
	if err := json.Unmarshal(body, &spec); err != nil {
		return fmt.Errorf("decoding the launch from berth: %w", err)
	}
	if spec.Path == "" || len(spec.Args) == 0 {
		return errors.New("the launch names no program")
	}
	p := &spec.Policy
	env := withoutEnv(spec.Env, launcherEnv)
	proxyPort := 0
	if spec.NetNS {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("bringing up loopback in the server's network namespace: %w", err)
		}
		if p.Network == NetworkHosts {
			if bridgeFD < 0 {
				return errors.New("network hosts without a bridge to berth")
			}
			proxyPort, err = bridgeListener(bridgeFD)
			if err != nil {
				return fmt.Errorf("opening the egress bridge: %w", err)
			}
			env = proxyEnv(env, proxyPort)
		}
	}
	if bridgeFD >= 0 {
		unix.Close(bridgeFD)
	}
	if err := dropCapabilities(); err != nil {
		return fmt.Errorf("dropping capabilities: %w (berth must not run with file capabilities)", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	if spec.ABI > 0 {
		if err := restrictLandlock(p, spec.ABI, spec.NetNS, proxyPort); err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	}
	if spec.Seccomp {
		if err := loadSeccomp(p, spec.ABI, spec.NetNS); err != nil {
			return fmt.Errorf("seccomp: %w", err)
		}
	}
	err = syscall.Exec(spec.Path, spec.Args, env)
	return fmt.Errorf("starting %s: %w (the program must be under one of the policy's exec paths or the base set: /usr, /bin, /sbin, /lib*)", spec.Path, err)
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

// loopbackUp sets IFF_UP on lo (the new network namespace starts with it
// down).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// bridgeListener listens on 127.0.0.1:0 in the namespace (plain TCP, not
// Multipath TCP, which Landlock's TCP rules do not see) and sends the
// listening socket to berth over the bridge; berth accepts the server's
// connections from the host side. It returns the port.
func bridgeListener(bridgeFD int) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return 0, err
	}
	if err := unix.Listen(fd, 128); err != nil {
		return 0, err
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return 0, err
	}
	in, ok := sa.(*unix.SockaddrInet4)
	if !ok || in.Port == 0 {
		return 0, fmt.Errorf("unexpected listener address %v", sa)
	}
	if err := unix.Sendmsg(bridgeFD, []byte{'L'}, unix.UnixRights(fd), nil, 0); err != nil {
		return 0, err
	}
	return in.Port, nil
}

// dropCapabilities clears the ambient and inheritable sets, empties the
// bounding set where this process may (it can as root, and in its own user
// namespace as root), and clears the effective and permitted sets, so the
// server starts with none even when berth runs as root.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	for c := 0; c <= 63; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break // past the last capability this kernel has
		}
		if errors.Is(err, unix.EPERM) {
			if os.Geteuid() == 0 {
				return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
			}
			break // a non-root process without CAP_SETPCAP: no_new_privs keeps exec from granting any
		}
		if err != nil {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clearing capabilities: %w", err)
	}
	return nil
}

// Landlock access rights per kind of path.
const (
	rightsExecDir  = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	rightsExecFile = ll.AccessFSExecute | ll.AccessFSReadFile
	rightsReadDir  = ll.AccessFSReadFile | ll.AccessFSReadDir
	rightsReadFile = ll.AccessFSReadFile
	rightsWriteDir = ll.AccessFSReadFile | ll.AccessFSReadDir | ll.AccessFSWriteFile |
		ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeDir | ll.AccessFSMakeReg |
		ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeSym | ll.AccessFSTruncate
	rightsWriteFile = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate
)

// The base set every confined server gets (docs/sandbox.md §Enforcement).
var (
	// baseExec: the system's programs and shared libraries.
	baseExec = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}
	// baseRead: configuration (the loader cache, certificates, name
	// service, time zone), /proc (a process's own state; other processes'
	// private files stay behind Landlock's ptrace rule) and the /sys files
	// runtimes size themselves from.
	baseRead = []string{"/etc", "/proc", "/sys/devices/system/cpu", "/sys/fs/cgroup", "/sys/kernel/mm/transparent_hugepage"}
	// baseDevices: read and written, never listed.
	baseDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}
)

// restrictLandlock enforces p on this thread (Landlock ABI up to maxABI;
// the kernel's own is abi).
func restrictLandlock(p *Policy, abi int, netns bool, proxyPort int) error {
	var rules []landlock.Rule
	add := func(path string, dir, file uint64, base bool) error {
		st, err := os.Stat(path)
		if err != nil {
			if base && errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("policy path %s: %w", path, err)
		}
		rights := file
		if st.IsDir() {
			rights = dir
		}
		rules = append(rules, landlock.PathAccess(landlock.AccessFSSet(rights), path))
		return nil
	}
	writeDir := uint64(rightsWriteDir)
	if abi >= 2 {
		writeDir |= ll.AccessFSRefer // renames within and between write paths
	}
	if p.UnixSockets {
		writeDir |= ll.AccessFSResolveUnix // its own sockets (ABI 9; dropped below)
	}
	type set struct {
		paths     []string
		dir, file uint64
		base      bool
	}
	for _, s := range []set{
		{baseExec, rightsExecDir, rightsExecFile, true},
		{baseRead, rightsReadDir, rightsReadFile, true},
		{baseDevices, rightsWriteFile, rightsWriteFile, true},
		{p.Exec, rightsExecDir, rightsExecFile, false},
		{p.Read, rightsReadDir, rightsReadFile, false},
		{p.Write, writeDir, rightsWriteFile, false},
	} {
		for _, path := range s.paths {
			if err := add(path, s.dir, s.file, s.base); err != nil {
				return err
			}
		}
	}
	cfg := landlock.Config{
		HandledAccessFS: landlock.V9.HandledAccessFS,
		Scoped:          landlock.V9.Scoped,
	}
	if netns {
		// Inside the namespace: no TCP bind at all; connect only to the
		// bridged proxy (network hosts) or nowhere (network none).
		cfg.HandledAccessNet = landlock.V9.HandledAccessNet
		if proxyPort > 0 {
			rules = append(rules, landlock.ConnectTCP(uint16(proxyPort)))
		}
	}
	cfg = cfg.BestEffort().EnableLoggingForSubprocesses()
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return err
	}
	if fd < 0 {
		return errors.New("the kernel enforces nothing of the ruleset (Landlock disabled since berth probed it?)")
	}
	defer unix.Close(fd)
	if got, err := ll.LandlockGetABIVersion(); err != nil || got < abi {
		return fmt.Errorf("the kernel's Landlock ABI is %d, berth reported %d", got, abi)
	}
	return ll.LandlockRestrictSelf(fd, flags)
}
