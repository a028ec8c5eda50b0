package launcher

import (
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Env is the variable that makes a process a launcher: "spec,status,bridge,
// ruleset" descriptor numbers (-1 for none).
const Env = "BERTH_SANDBOX_LAUNCHER"

// Flags of the spec.
const (
	FlagNetNS    = 1 << iota // bring up lo: it is in a new network namespace
	FlagBridge               // listen on BridgePort and send the socket to berth
	FlagLandlock             // enforce the ruleset descriptor
	FlagSeccomp              // load the seccomp program
	FlagMountNS              // bind the read-only paths read-only: it is in a new mount namespace
)

// BridgePort is the loopback port of the egress bridge inside a server's
// network namespace (each namespace is new and empty, so any port is free).
const BridgePort = 3128

func init() {
	v, ok := syscall.Getenv(Env)
	if !ok {
		return
	}
	runtime.LockOSThread() // never unlocked: this thread execs or exits
	fds, ok := parseFDs(v)
	if !ok {
		_, _ = unix.Write(2, []byte("berth sandbox launcher: bad "+Env+"\n"))
		unix.Exit(126)
	}
	// Every descriptor from the spec's up is the launcher's own or one
	// berth inherited without close-on-exec (an MCP client's pipe, a
	// shell's redirect): none may reach the server. Below it are the
	// server's stdio and the caller's ExtraFiles.
	if msg := closeFrom(fds[0]); msg != "" {
		_, _ = unix.Write(2, []byte("berth sandbox launcher: "+msg+"\n"))
		unix.Exit(126)
	}
	msg := launch(fds[0], fds[2], fds[3])
	// launch returns only when the server could not be started confined.
	if _, err := unix.Write(fds[1], []byte("sandbox: "+msg+"\n")); err != nil {
		_, _ = unix.Write(2, []byte("berth sandbox launcher: "+msg+"\n"))
	}
	unix.Exit(126)
}

// closeFrom marks every descriptor from low up close-on-exec
// (close_range with CLOSE_RANGE_CLOEXEC, Linux 5.11; else each descriptor
// listed in /proc/self/fd), so they close at the server's exec and the
// launcher keeps its own until then.
func closeFrom(low int) string {
	_, _, e := unix.Syscall(unix.SYS_CLOSE_RANGE, uintptr(low), ^uintptr(0), unix.CLOSE_RANGE_CLOEXEC)
	if e == 0 {
		return ""
	}
	dir, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "listing open descriptors (close_range: " + e.Error() + "; /proc/self/fd: " + err.Error() + ")"
	}
	defer unix.Close(dir)
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(dir, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "listing open descriptors: " + err.Error()
		}
		if n == 0 {
			return ""
		}
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(b[16]) | int(b[17])<<8
			if reclen < 19 || reclen > len(b) {
				return "listing open descriptors: malformed directory entry"
			}
			fd, ok := 0, false
			for _, c := range b[19:reclen] {
				if c == 0 {
					break
				}
				if c < '0' || c > '9' || fd > 1<<24 {
					ok = false
					break
				}
				fd, ok = fd*10+int(c-'0'), true
			}
			if ok && fd >= low && fd != dir {
				unix.CloseOnExec(fd)
			}
			b = b[reclen:]
		}
	}
}

// Active reports whether this process is a launcher (then init never
// returned, so Active is only ever false; it exists so a caller can refer
// to the package).
func Active() bool { return false }

func parseFDs(v string) ([4]int, bool) {
	var out [4]int
	i := 0
	n, neg, digits := 0, false, 0
	for j := 0; j <= len(v); j++ {
		if j == len(v) || v[j] == ',' {
			if i >= 4 || digits == 0 || (neg && n != 1) {
				return out, false
			}
			if neg && i < 2 {
				return out, false
			}
			if neg {
				n = -1
			} else if n < 3 && i < 2 {
				return out, false
			}
			out[i] = n
			i, n, neg, digits = i+1, 0, false, 0
			continue
		}
		c := v[j]
		switch {
		case c == '-' && digits == 0 && !neg:
			neg = true
		case c >= '0' && c <= '9' && n < 1<<20:
			n = n*10 + int(c-'0')
			digits++
		default:
			return out, false
		}
	}
	return out, i == 4
}

// reader decodes the spec.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) u32() uint32 {
	if len(r.b) < 4 {
		r.bad = true
		return 0
	}
	v := uint32(r.b[0]) | uint32(r.b[1])<<8 | uint32(r.b[2])<<16 | uint32(r.b[3])<<24
	r.b = r.b[4:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.u32()
	if r.bad || uint32(len(r.b)) < n {
		r.bad = true
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) strings() []string {
	n := r.u32()
	if n > 1<<20 {
		r.bad = true
		return nil
	}
	var out []string
	for i := uint32(0); i < n && !r.bad; i++ {
		out = append(out, string(r.bytes()))
	}
	return out
}

func readAll(fd int) ([]byte, syscall.Errno) {
	var out []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err.(syscall.Errno)
		}
		if n == 0 {
			return out, 0
		}
		out = append(out, buf[:n]...)
		if len(out) > 16<<20 {
			return nil, unix.E2BIG
		}
	}
}

func errMsg(what string, err error) string { return what + ": " + err.Error() }

// launch applies the restrictions in order and execs the server; it
// returns the failure.
func launch(specFD, bridgeFD, rulesetFD int) string {
	body, errno := readAll(specFD)
	unix.Close(specFD)
	if errno != 0 {
		return errMsg("reading the launch from berth", errno)
	}
	r := &reader{b: body}
	flags := r.u32()
	llFlags := r.u32()
	path := string(r.bytes())
	argv := r.strings()
	env := r.strings()
	prog := r.bytes()
	readOnly := r.strings()
	if r.bad || path == "" || len(argv) == 0 {
		return "the launch from berth is malformed"
	}
	if flags&FlagNetNS != 0 {
		if err := loopbackUp(); err != nil {
			return errMsg("bringing up loopback in the server's network namespace", err)
		}
	}
	if flags&FlagMountNS != 0 {
		if msg := readOnlyBinds(readOnly); msg != "" {
			return msg
		}
	} else if len(readOnly) > 0 {
		return "read-only paths without a mount namespace"
	}
	if flags&FlagBridge != 0 {
		if bridgeFD < 0 {
			return "network hosts without a bridge to berth"
		}
		if err := bridgeListener(bridgeFD); err != nil {
			return errMsg("opening the egress bridge", err)
		}
	}
	if bridgeFD >= 0 {
		unix.Close(bridgeFD)
	}
	if msg := dropCapabilities(); msg != "" {
		return "dropping capabilities: " + msg + " (berth must not run with file capabilities)"
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return errMsg("setting no_new_privs", err)
	}
	if flags&FlagLandlock != 0 {
		if rulesetFD < 0 {
			return "Landlock required without a ruleset"
		}
		if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rulesetFD), uintptr(llFlags), 0); e != 0 {
			return errMsg("landlock_restrict_self", e)
		}
	}
	if rulesetFD >= 0 {
		unix.Close(rulesetFD)
	}
	if flags&FlagSeccomp != 0 {
		if len(prog) == 0 || len(prog)%8 != 0 || len(prog)/8 > 4096 {
			return "seccomp: malformed program from berth"
		}
		filter := make([]unix.SockFilter, len(prog)/8)
		for i := range filter {
			b := prog[i*8:]
			filter[i] = unix.SockFilter{
				Code: uint16(b[0]) | uint16(b[1])<<8,
				Jt:   b[2],
				Jf:   b[3],
				K:    uint32(b[4]) | uint32(b[5])<<8 | uint32(b[6])<<16 | uint32(b[7])<<24,
			}
		}
		fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
		if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); e != 0 {
			return errMsg("seccomp", e)
		}
		runtime.KeepAlive(filter)
	}
	err := syscall.Exec(path, argv, env)
	return "starting " + path + ": " + err.Error() + " (the program must be under one of the policy's exec paths or the base set: /usr, /bin, /sbin, /lib*)"
}

// readOnlyBinds makes the whole mount tree private (nothing done here
// propagates back to the host's namespace) and binds each path read-only
// over itself, with the mounts below it. It runs before Landlock, which
// forbids mount changes.
func readOnlyBinds(paths []string) string {
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return errMsg("making the server's mount namespace private", err)
	}
	for _, p := range paths {
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return errMsg("binding read-only path "+p, err)
		}
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		err := unix.MountSetattr(unix.AT_FDCWD, p, unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW, &attr)
		if err == unix.ENOSYS {
			// before Linux 5.12: remount the bind (top mount only) read-only,
			// keeping the flags the kernel locks for a user namespace
			var st unix.Statfs_t
			if err = unix.Statfs(p, &st); err == nil {
				var keep uintptr
				for _, f := range [][2]uintptr{{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
					{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME}} {
					if uintptr(st.Flags)&f[0] != 0 {
						keep |= f[1]
					}
				}
				err = unix.Mount("none", p, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|keep, "")
			}
		}
		if err != nil {
			return errMsg("making "+p+" read-only", err)
		}
	}
	return ""
}

// loopbackUp sets IFF_UP on lo (a new network namespace starts with it
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

// bridgeListener listens on 127.0.0.1:BridgePort in the namespace (plain
// TCP, not Multipath TCP, which Landlock's TCP rules do not see) and sends
// the listening socket to berth over the bridge; berth accepts the
// server's connections from the host side.
func bridgeListener(bridgeFD int) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: BridgePort}); err != nil {
		return err
	}
	if err := unix.Listen(fd, 128); err != nil {
		return err
	}
	return unix.Sendmsg(bridgeFD, []byte{'L'}, unix.UnixRights(fd), nil, 0)
}

// dropCapabilities clears the ambient and inheritable sets, empties the
// bounding set where this process may (as root, and as root of its own
// user namespace), and clears the effective and permitted sets.
func dropCapabilities() string {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return "clearing ambient capabilities: " + err.Error()
	}
	for c := 0; c <= 63; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if err == unix.EINVAL {
			break // past the last capability this kernel has
		}
		if err == unix.EPERM {
			if unix.Geteuid() == 0 {
				return "dropping a capability from the bounding set: " + err.Error()
			}
			break // without root: no_new_privs keeps exec from granting any
		}
		if err != nil {
			return "dropping a capability from the bounding set: " + err.Error()
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return "clearing capabilities: " + err.Error()
	}
	return ""
}
