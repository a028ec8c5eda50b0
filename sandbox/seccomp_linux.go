package sandbox

import (
	"encoding/binary"
	"fmt"
	"runtime"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls are refused with EPERM whatever their arguments; each is
// justified in docs/sandbox.md §Enforcement.
var deniedSyscalls = []string{
	// other processes' memory and registers
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
	// the mount table, and file handles that bypass path checks
	"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsmount",
	"fsconfig", "fspick", "mount_setattr", "open_by_handle_at",
	// kernel programs, keyrings, namespaces
	"bpf", "keyctl", "add_key", "request_key", "unshare", "setns",
	// io_uring runs socket, connect and open outside seccomp's view
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	// kernel and machine control
	"perf_event_open", "kexec_load", "kexec_file_load", "init_module", "finit_module",
	"delete_module", "userfaultfd", "iopl", "ioperm", "acct", "swapon", "swapoff", "reboot",
}

// Values the argument rules compare with.
const (
	cloneNewMask = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
		unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET
	readImpliesExec = 0x0400000
	ipprotoMPTCP    = 262
	// above32 matches an int argument with any of its upper 32 bits set:
	// the kernel ignores them, so an Equal rule on the low half alone
	// could be dodged with them.
	above32 = 0xffffffff
	// mfdNoexecSeal is MFD_NOEXEC_SEAL (Linux 6.3): a memfd that can
	// never be made executable.
	mfdNoexecSeal = 0x8
)

// allowedFamilies are the only socket families a server may create: the
// ones a network namespace holds (and Landlock's TCP rules see), and
// netlink, which runtimes use to list interfaces. AF_VSOCK, AF_BLUETOOTH,
// AF_CAN and the rest are refused with EPERM; AF_UNIX is listed but refused separately below ABI 9
// unless the policy allows Unix sockets.
var allowedFamilies = []uint64{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}

// seccompPolicy is the filter for p: default allow, the listed calls
// refused.
func seccompPolicy(p *Policy, abi int, netns bool) seccomp.Policy {
	eperm := seccomp.ActionErrno | seccomp.Action(unix.EPERM)
	enosys := seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)
	cond := func(name string, cs ...seccomp.Condition) seccomp.NameWithConditions {
		return seccomp.NameWithConditions{Name: name, Conditions: cs}
	}
	arg := func(n uint32, op seccomp.Operation, v uint64) seccomp.Condition {
		return seccomp.Condition{Argument: n, Operation: op, Value: v}
	}
	conds := []seccomp.NameWithConditions{
		// clone with any CLONE_NEW* flag (BitsSet reads the low half, where
		// the kernel reads the flags)
		cond("clone", arg(0, seccomp.BitsSet, cloneNewMask)),
		// personality(READ_IMPLIES_EXEC), except the query 0xffffffff
		cond("personality", arg(0, seccomp.BitsSet, readImpliesExec), arg(0, seccomp.NotEqual, 0xffffffff)),
		// socket(): packet sockets, raw and SOCK_PACKET types with any
		// SOCK_NONBLOCK/SOCK_CLOEXEC, any int argument with upper bits set
		cond("socket", arg(0, seccomp.Equal, unix.AF_PACKET)),
		cond("socket", arg(0, seccomp.GreaterThan, above32)),
		cond("socket", arg(1, seccomp.GreaterThan, above32)),
		cond("socket", arg(2, seccomp.GreaterThan, above32)),
	}
	// ioctl(TIOCSTI) types into a terminal berth shares with it (its
	// stderr), TIOCLINUX pastes on a console; the command is an unsigned
	// int, hence the guard on the upper half
	conds = append(conds,
		cond("ioctl", arg(1, seccomp.Equal, unix.TIOCSTI)),
		cond("ioctl", arg(1, seccomp.Equal, unix.TIOCLINUX)),
		cond("ioctl", arg(1, seccomp.GreaterThan, above32)),
	)
	for _, typ := range []uint64{unix.SOCK_RAW, unix.SOCK_PACKET} {
		for _, fl := range []uint64{0, unix.SOCK_NONBLOCK, unix.SOCK_CLOEXEC, unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC} {
			conds = append(conds, cond("socket", arg(1, seccomp.Equal, typ|fl)))
		}
	}
	if !p.UnixSockets && abi < unixABI {
		// Pathname Unix sockets (the session bus, the keychain, Docker):
		// Landlock sees them from ABI 9; below it no AF_UNIX socket at all.
		conds = append(conds, cond("socket", arg(0, seccomp.Equal, unix.AF_UNIX)))
	}
	if abi < unixABI {
		// socketpair: stream and seqpacket pairs only (child stdio); a
		// datagram socket of a pair sends to any pathname address sendto
		// names, which Landlock sees only from ABI 9.
		notStream := []seccomp.Condition{arg(1, seccomp.LessOrEqual, above32)}
		for _, typ := range []uint64{unix.SOCK_STREAM, unix.SOCK_SEQPACKET} {
			for _, fl := range []uint64{0, unix.SOCK_NONBLOCK, unix.SOCK_CLOEXEC, unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC} {
				notStream = append(notStream, arg(1, seccomp.NotEqual, typ|fl))
			}
		}
		conds = append(conds,
			cond("socketpair", notStream...),
			cond("socketpair", arg(1, seccomp.GreaterThan, above32)),
		)
	}
	// memfd_create without MFD_NOEXEC_SEAL: a memfd is no path Landlock
	// sees, so an executable one would run what the server wrote (the
	// write paths are never executable). The flags are an unsigned int.
	conds = append(conds, cond("memfd_create", arg(1, seccomp.BitsNotSet, mfdNoexecSeal)))
	if netns {
		// Multipath TCP is not seen by Landlock's TCP rules.
		conds = append(conds, cond("socket", arg(2, seccomp.Equal, ipprotoMPTCP)))
	}
	// every other socket family (one syscall's conditions must sit in one
	// group: the filter takes the first group naming the call)
	otherFamily := []seccomp.Condition{arg(0, seccomp.LessOrEqual, above32)}
	for _, f := range allowedFamilies {
		otherFamily = append(otherFamily, arg(0, seccomp.NotEqual, f))
	}
	conds = append(conds, cond("socket", otherFamily...), cond("socketpair", otherFamily...))
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			// clone3 passes its flags in memory seccomp cannot read: ENOSYS
			// makes glibc and Go fall back to clone.
			{Names: []string{"clone3"}, Action: enosys},
			{Names: deniedSyscalls, Action: eperm},
			{NamesWithCondtions: conds, Action: eperm},
		},
	}
}

// seccompProgram is the assembled filter for p, as the launcher loads it:
// 8-byte sock_filter entries, little-endian.
func seccompProgram(p *Policy, abi int, netns bool) ([]byte, error) {
	pol := seccompPolicy(p, abi, netns)
	insts, err := pol.Assemble()
	if err != nil {
		return nil, err
	}
	prelude, err := archPrelude(runtime.GOARCH)
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(append(prelude, insts...))
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 8*len(raw))
	for _, r := range raw {
		out = binary.LittleEndian.AppendUint16(out, r.Op)
		out = append(out, r.Jt, r.Jf)
		out = binary.LittleEndian.AppendUint32(out, r.K)
	}
	return out, nil
}

// nativeArch is the AUDIT_ARCH of each GOARCH the filter is built for.
var nativeArch = map[string]uint32{
	"amd64": unix.AUDIT_ARCH_X86_64,
	"arm64": unix.AUDIT_ARCH_AARCH64,
}

// seccompDataArch is the offset of seccomp_data.arch.
const seccompDataArch = 4

// archPrelude kills the process on any syscall made through another ABI than
// the native one (i386's int $0x80 on x86_64, arm32 on arm64). The assembled
// go-seccomp-bpf program applies its default action, Allow, to a foreign
// arch, so without this every rule is bypassed through the compat ABI.
func archPrelude(goarch string) ([]bpf.Instruction, error) {
	arch, ok := nativeArch[goarch]
	if !ok {
		return nil, fmt.Errorf("no native audit arch known for GOARCH %s, so the filter cannot refuse foreign ABIs: berth confines servers with seccomp on amd64 and arm64 only", goarch)
	}
	return []bpf.Instruction{
		bpf.LoadAbsolute{Off: seccompDataArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
	}, nil
}
