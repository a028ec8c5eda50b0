package sandbox

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/berth-mcp/berth/sandbox/internal/launcher"
)

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

// landlockRuleset builds, in berth, the ruleset the launcher enforces on
// itself: the base set and p's paths (Landlock ABI up to maxABI; the
// kernel's own is abi), scoping, and in a network namespace TCP rules (no
// bind; connect only to the bridge, when there is one). It returns the
// ruleset's descriptor (close-on-exec) and the flags to enforce it with.
func landlockRuleset(p *Policy, abi int, netns, bridge bool) (int, uint32, error) {
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
				return -1, 0, err
			}
		}
	}
	cfg := landlock.Config{
		HandledAccessFS: landlock.V9.HandledAccessFS,
		Scoped:          landlock.V9.Scoped,
	}
	if netns {
		cfg.HandledAccessNet = landlock.V9.HandledAccessNet
		if bridge {
			rules = append(rules, landlock.ConnectTCP(launcher.BridgePort))
		}
	}
	cfg = cfg.BestEffort().EnableLoggingForSubprocesses()
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return -1, 0, err
	}
	if fd < 0 {
		return -1, 0, errors.New("the kernel enforces nothing of the ruleset (Landlock disabled since berth probed it?)")
	}
	if got, err := ll.LandlockGetABIVersion(); err != nil || got < abi {
		_ = unix.Close(fd)
		return -1, 0, fmt.Errorf("the kernel's Landlock ABI is %d, berth reported %d", got, abi)
	}
	return fd, flags, nil
}
