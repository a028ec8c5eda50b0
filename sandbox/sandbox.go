// Package sandbox confines a local server process to the authority its
// review states (docs/sandbox.md). On Linux berth re-executes itself as a
// small launcher (Main) that restricts itself with no_new_privs, Landlock
// and seccomp, enters the namespaces the network limit needs, and then
// execs the server; on macOS it generates a Seatbelt profile; elsewhere a
// server runs unconfined and Enforcement says so.
package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Network modes of a Policy.
const (
	// NetworkOpen leaves the network as the host has it.
	NetworkOpen = "open"
	// NetworkNone gives the server a network namespace with only loopback
	// and no bridge.
	NetworkNone = "none"
	// NetworkHosts gives the server a network namespace with only loopback
	// and a bridge to berth's egress proxy, which allows Hosts only.
	NetworkHosts = "hosts"
)

// Policy is the resolved authority of one server process: absolute,
// clean paths (symlinks resolved) and the network it may use. The base set
// (docs/sandbox.md) is added by the launcher, not listed here.
type Policy struct {
	// Exec paths may be read and executed (the staged bundle, the
	// program's runtime prefix, a staged fetched tree).
	Exec []string
	// Read paths may be read.
	Read []string
	// Write paths may be read, written and created in, never executed
	// (the workspace, the server's cache and temp directories).
	Write []string
	// Network is NetworkOpen, NetworkNone or NetworkHosts.
	Network string
	// Hosts are the host:port pairs the egress proxy allows (NetworkHosts).
	Hosts []string
	// ReadOnly paths stay read-only even inside a Write path (the
	// workspace's .git, whose hooks and config the operator's git runs):
	// the launcher enters a new user and mount namespace and binds each
	// read-only over itself before Landlock (Enforcement.MountNamespace;
	// NotEnforced without user namespaces).
	ReadOnly []string
	// UnixSockets lets the server create Unix sockets (a native-tool
	// provider's go-plugin listener); otherwise socket(AF_UNIX) is refused.
	UnixSockets bool
}

// Support is what this host can enforce.
type Support struct {
	OS string `json:"os"`
	// LandlockABI is the kernel's Landlock ABI version, 0 for none.
	LandlockABI int `json:"landlockABI"`
	// Seccomp is whether seccomp filters can be installed.
	Seccomp bool `json:"seccomp"`
	// UserNamespaces is whether an unprivileged user and network namespace
	// can be created (needed by NetworkNone and NetworkHosts).
	UserNamespaces bool `json:"userNamespaces"`
	// Seatbelt is whether sandbox-exec is available (macOS).
	Seatbelt bool `json:"seatbelt"`
	// Notes say what is missing and why, for a person.
	Notes []string `json:"notes,omitempty"`
}

// Probe reports what this host can enforce. It is cheap after the first
// call (the result is cached for the life of the process).
func Probe() *Support {
	probeOnce.Do(func() { probed = probe() })
	c := *probed
	c.Notes = append([]string(nil), probed.Notes...)
	return &c
}

var (
	probeOnce sync.Once
	probed    *Support
)

// Enforcement is what is in effect for one server, as berth status shows
// it (field names documented in docs/sandbox.md).
type Enforcement struct {
	// Confined is false when the server runs with the operator's rights.
	Confined bool `json:"confined"`
	// Unconfined says why, when Confined is false.
	Unconfined string `json:"unconfined,omitempty"`
	// Mechanism is "landlock", "seatbelt" or "none".
	Mechanism   string `json:"mechanism"`
	LandlockABI int    `json:"landlockABI,omitempty"`
	Seccomp     bool   `json:"seccomp"`
	NoNewPrivs  bool   `json:"noNewPrivs"`
	// NetworkNamespace is set when the server has its own network
	// namespace (NetworkNone, NetworkHosts).
	NetworkNamespace bool `json:"networkNamespace"`
	// MountNamespace is set when the server has its own mount namespace,
	// in which the policy's read-only paths are bound read-only.
	MountNamespace bool `json:"mountNamespace"`
	// ReadOnly are the paths kept read-only inside write paths.
	ReadOnly []string `json:"readOnly,omitempty"`
	// Network is the Policy's network mode.
	Network string `json:"network"`
	// ProxyHosts are the hosts the egress proxy allows (NetworkHosts).
	ProxyHosts []string `json:"proxyHosts,omitempty"`
	// NotEnforced lists what the policy asks for that this host cannot
	// enforce, for a person ("host list: no user namespaces").
	NotEnforced []string `json:"notEnforced,omitempty"`
}

// Options are the optional settings of Wrap; nil means defaults.
type Options struct {
	// Launcher is the program to re-execute as the launcher; "" means
	// this process's own executable (/proc/self/exe on Linux).
	Launcher string
	// Require refuses (ErrNotEnforced) a policy that this host cannot
	// enforce in full, instead of running with what it can.
	Require bool
}

// ErrNotEnforced is returned by Wrap when Options.Require is set and the
// host cannot enforce the whole policy.
var ErrNotEnforced = errors.New("sandbox: this host cannot enforce the server's declared limits")

// Launch is one wrapped command, between Wrap and the end of its start.
//
// A Launch is used by one goroutine.
type Launch struct {
	// Enforcement is what will be in effect once the command starts.
	Enforcement Enforcement

	cmd *exec.Cmd
	// closeAfterStart are the launcher's ends of the descriptors Wrap
	// passed; status and bridge are berth's ends (Linux).
	closeAfterStart []*os.File
	status          *os.File
	bridge          *os.File
	// proxy is the egress listener opened in berth (macOS).
	proxy net.Listener //lint:ignore U1000 used on macOS
	done  bool
}

// Wrap rewrites cmd (Path, Args, Env, Dir, stdio and SysProcAttr already
// set by the caller) so that it starts the launcher, which confines itself
// to p and execs the original program. Call Started after cmd.Start (and
// after a failed Start, to release what Wrap opened); when Started returns
// an error the launcher has exited or been killed, and the caller still
// waits for cmd.
//
// The paths of p must be absolute and exist; an Exec path and a Write path
// must not contain one another (the workspace is never executable, the
// bundle never writable). A policy this host cannot enforce in full is run
// with what it can (Enforcement.NotEnforced says what is missing) unless
// o.Require is set, when Wrap returns an error wrapping ErrNotEnforced.
func Wrap(cmd *exec.Cmd, p *Policy, o *Options) (*Launch, error) {
	if cmd == nil || p == nil {
		panic("sandbox.Wrap: nil cmd or policy")
	}
	if o == nil {
		o = &Options{}
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	return wrap(cmd, p, o)
}

// Started finishes the launch after cmd.Start: for NetworkHosts it returns
// the listener the launcher opened on the namespace's loopback, which the
// caller serves as the egress proxy (HTTP CONNECT and plain HTTP
// requests); nil otherwise. startErr is cmd.Start's result. It waits until
// the launcher has execed the server (or failed: then it returns the
// launcher's error, naming what failed and the fix), so a server is never
// reported started before its confinement is in place.
func (l *Launch) Started(startErr error) (net.Listener, error) { return l.started(startErr) }

// Main runs the launcher when this process was started as one, and never
// returns then; otherwise it returns at once. cmd/berth's main and the
// TestMain of every package whose tests start servers call it first. On
// Linux the launcher already runs in the initialisation of a package that
// package sandbox imports (before berth's other packages initialise, which
// keeps a confined start cheap), so a launcher never reaches Main; the call
// states the contract and keeps a program that could be a launcher from
// doing anything else first.
func Main() { launcherMain() }

// launcherEnv is the variable that tells Main it runs as the launcher; its
// value names the inherited descriptors (see launcher_linux.go). The
// launcher removes it before it execs the server.
const launcherEnv = "BERTH_SANDBOX_LAUNCHER"

// check validates p before anything starts.
func (p *Policy) check() error {
	var errs []error
	switch p.Network {
	case NetworkOpen, NetworkNone, NetworkHosts:
	default:
		errs = append(errs, fmt.Errorf("sandbox: network %q is not one of open, none, hosts", p.Network))
	}
	if p.Network != NetworkHosts && len(p.Hosts) > 0 {
		errs = append(errs, fmt.Errorf("sandbox: hosts %v given with network %q (only network hosts has a host list)", p.Hosts, p.Network))
	}
	for _, l := range []struct {
		name  string
		paths []string
	}{{"exec", p.Exec}, {"read", p.Read}, {"write", p.Write}, {"read-only", p.ReadOnly}} {
		for _, path := range l.paths {
			if !filepath.IsAbs(path) || filepath.Clean(path) != path {
				errs = append(errs, fmt.Errorf("sandbox: %s path %q is not absolute and clean; resolve it before Wrap", l.name, path))
				continue
			}
			if _, err := os.Stat(path); err != nil {
				errs = append(errs, fmt.Errorf("sandbox: %s path %s: %w (create it or remove it from the policy)", l.name, path, err))
			}
		}
	}
	for _, x := range p.Exec {
		for _, w := range p.Write {
			if within(w, x) || within(x, w) {
				errs = append(errs, fmt.Errorf("sandbox: exec path %s and write path %s overlap: the write path would be executable or the exec path writable; keep them apart", x, w))
			}
		}
	}
	return errors.Join(errs...)
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	if path == dir || dir == "/" {
		return true
	}
	return strings.HasPrefix(path, dir+string(filepath.Separator))
}

// enforcement is what a Wrap of p gives on a host with s.
func enforcement(p *Policy, s *Support, o *Options) (Enforcement, error) {
	e := Enforcement{Network: p.Network}
	if p.Network == NetworkHosts {
		e.ProxyHosts = append([]string(nil), p.Hosts...)
	}
	switch s.OS {
	case "linux":
		e.Mechanism = "landlock"
		e.NoNewPrivs = true
		e.Seccomp = s.Seccomp
		e.LandlockABI = min(s.LandlockABI, maxABI)
		if e.LandlockABI == 0 {
			e.NotEnforced = append(e.NotEnforced, "filesystem: the kernel has no Landlock (enable CONFIG_SECURITY_LANDLOCK and add landlock to the lsm= boot parameter)")
		} else {
			e.Confined = true
		}
		if !s.Seccomp {
			e.NotEnforced = append(e.NotEnforced, "ptrace, mount, bpf, keyctl, new namespaces, raw sockets: the kernel has no seccomp filters")
		}
		if e.LandlockABI < 6 {
			e.NotEnforced = append(e.NotEnforced, "abstract Unix sockets and signals outside the sandbox: Landlock ABI 6 needed (Linux 6.12)")
		}
		if e.LandlockABI < unixABI && p.UnixSockets {
			e.NotEnforced = append(e.NotEnforced, "pathname Unix sockets: not blocked below Landlock ABI 9 (the policy allows the server Unix sockets)")
		} else if e.LandlockABI < unixABI && !s.Seccomp {
			e.NotEnforced = append(e.NotEnforced, "pathname Unix sockets: neither Landlock ABI 9 nor seccomp")
		}
		if len(p.ReadOnly) > 0 {
			if s.UserNamespaces {
				e.MountNamespace = true
				e.ReadOnly = append([]string(nil), p.ReadOnly...)
			} else {
				e.NotEnforced = append(e.NotEnforced, "read-only "+strings.Join(p.ReadOnly, ", ")+": no user and mount namespaces here, so they are writable (allow unprivileged user namespaces)")
			}
		}
		if p.Network != NetworkOpen {
			if s.UserNamespaces {
				e.NetworkNamespace = true
				if e.LandlockABI < 4 {
					e.NotEnforced = append(e.NotEnforced, "TCP port rules inside the network namespace: Landlock ABI 4 needed")
				}
			} else {
				e.NotEnforced = append(e.NotEnforced, "network "+p.Network+": no user and network namespaces here, so the network is open (allow unprivileged user namespaces: sysctl kernel.unprivileged_userns_clone=1 or the AppArmor userns restriction)")
			}
		}
	case "darwin":
		e.Mechanism = "seatbelt"
		if s.Seatbelt {
			e.Confined = true
		} else {
			e.NotEnforced = append(e.NotEnforced, "everything: sandbox-exec is missing")
		}
	default:
		e.Mechanism = "none"
		e.NotEnforced = append(e.NotEnforced, "everything: berth cannot confine a server on "+s.OS)
	}
	if !e.Confined {
		e.Unconfined = "the server runs with your user's rights: " + strings.Join(e.NotEnforced, "; ")
	}
	if o.Require && len(e.NotEnforced) > 0 {
		// no fix named here: the caller knows it (the pool: berth config
		// set sandbox-require off, or sandbox-unconfined ID; install
		// scripts: fetch-allow-scripts)
		return e, fmt.Errorf("%w: %s", ErrNotEnforced, strings.Join(e.NotEnforced, "; "))
	}
	return e, nil
}

// maxABI is the highest Landlock ABI berth asks for; unixABI the first
// with the rule for pathname Unix sockets.
const (
	maxABI  = 9
	unixABI = 9
)

// withoutEnv drops every name= entry from env.
func withoutEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == name {
			continue
		}
		out = append(out, kv)
	}
	return out
}
