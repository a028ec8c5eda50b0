// Package sandbox confines a local server process to the authority its
// review states (docs/sandbox.md). On Linux berth re-executes itself as a
// small launcher (Main) that restricts itself with no_new_privs, Landlock
// and seccomp, enters the namespaces the network limit needs, and then
// execs the server; on macOS it generates a Seatbelt profile; elsewhere a
// server runs unconfined and Enforcement says so.
package sandbox

import (
	"errors"
	"net"
	"os/exec"
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
// call.
func Probe() *Support { return &Support{OS: "unknown", Notes: []string{"not implemented"}} }

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
type Launch struct {
	// Enforcement is what will be in effect once the command starts.
	Enforcement Enforcement
}

// Wrap rewrites cmd (Path, Args, Env, Dir, stdio and SysProcAttr already
// set by the caller) so that it starts the launcher, which confines itself
// to p and execs the original program. Call Started after cmd.Start (and
// after a failed Start, to release what Wrap opened).
func Wrap(cmd *exec.Cmd, p *Policy, o *Options) (*Launch, error) {
	return nil, errors.New("sandbox: not implemented")
}

// Started finishes the launch after cmd.Start: for NetworkHosts it returns
// the listener the launcher opened on the namespace's loopback, which the
// caller serves as the egress proxy (HTTP CONNECT and plain HTTP
// requests); nil otherwise. startErr is cmd.Start's result.
func (l *Launch) Started(startErr error) (net.Listener, error) { return nil, startErr }

// Main runs the launcher when this process was started as one, and never
// returns then; otherwise it returns at once. cmd/berth's main and the
// TestMain of every package whose tests start servers call it first.
func Main() {}

// SeatbeltProfile is the macOS sandbox-exec profile (SBPL) for p.
func SeatbeltProfile(p *Policy) string { return "" }
