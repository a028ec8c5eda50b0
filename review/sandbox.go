package review

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/berth-mcp/berth/bundle"
)

// Sandbox discloses the authority a local server or native tool provider
// runs with: what it declares (bundle.Sandbox), or berth's default
// profile where it declares nothing (docs/sandbox.md). Paths are written
// with berth's variables, unexpanded.
type Sandbox struct {
	// NotStated is true when this is rebuilt from a catalog summary that
	// says nothing of the sandbox (written before the field existed): the
	// review at install shows it. Every other field is then empty.
	NotStated bool `json:"notStated,omitempty"`
	// Filesystem is "declared" or "default" (the default profile's paths).
	Filesystem string `json:"filesystem,omitempty"`
	// Read are the paths it may only read, ${bundle} first (always
	// readable, never writable).
	Read []string `json:"read,omitempty"`
	// Write are the paths it may read and write.
	Write []string `json:"write,omitempty"`
	// Network is "none", "hosts", "unrestricted", or "undeclared" (the
	// default profile: any host, shown as not declared).
	Network string `json:"network,omitempty"`
	// Hosts are the host:port entries of network "hosts", reached only
	// through berth's egress proxy.
	Hosts []string `json:"hosts,omitempty"`
	// Reason is why network "unrestricted" needs any host, as the bundle
	// gives it.
	Reason string `json:"reason,omitempty"`
	// RuntimePrefix is where the program's runtime prefix (readable and
	// executable) is on the reviewer's machine, when the command resolves
	// on the reviewer's PATH (LocateRuntimes); "" when unknown: it is found
	// when the server starts. It describes the machine, not the bundle,
	// and is left out of Hash.
	RuntimePrefix string `json:"runtimePrefix,omitempty"`
}

// Filesystem kinds of a Sandbox.
const (
	FilesystemDeclared = "declared"
	FilesystemDefault  = "default"
)

// NewSandbox discloses a declaration (nil: the default profile), for
// code that rebuilds a Disclosure from a summary of one (a catalog entry)
// as well.
func NewSandbox(sb *bundle.Sandbox) *Sandbox {
	e := sb.Effective()
	out := &Sandbox{Filesystem: FilesystemDefault, Network: sb.NetworkMode(), Read: []string{}, Write: []string{}}
	if sb != nil && sb.Filesystem != nil {
		out.Filesystem = FilesystemDeclared
	}
	for _, p := range e.Filesystem.Read {
		if !slices.Contains(e.Filesystem.Write, p) && !slices.Contains(out.Read, p) {
			out.Read = append(out.Read, p)
		}
	}
	for _, p := range e.Filesystem.Write {
		if !slices.Contains(out.Write, p) {
			out.Write = append(out.Write, p)
		}
	}
	if n := e.Network; n != nil {
		out.Hosts = slices.Clone(n.Hosts)
		out.Reason = n.Reason
	}
	return out
}

// Declared reports whether the server declares any part of its authority.
func (s *Sandbox) Declared() bool {
	return s != nil && !s.NotStated && (s.Filesystem == FilesystemDeclared || s.Network != bundle.NetworkUndeclared)
}

// Authority is the one-sentence form of the sandbox, for the authority
// field of a disclosure.
func (s *Sandbox) Authority() string {
	switch {
	case s == nil || s.NotStated:
		return "has an authority not stated by the catalog: the review at install shows what it declares"
	case s.Declared():
		return "runs confined to the authority it declares (below), where berth confines servers (Linux, macOS); berth status shows the confinement in effect"
	}
	return "declares no authority, so it runs under berth's default profile (below), where berth confines servers (Linux, macOS); berth status shows the confinement in effect"
}

// NetworkWords says in words what the server may reach.
func (s *Sandbox) NetworkWords() string {
	switch s.Network {
	case bundle.NetworkNone:
		return "none: no network at all"
	case bundle.NetworkHosts:
		return "only " + strings.Join(s.Hosts, ", ") + ", through berth's egress proxy"
	case bundle.NetworkUnrestricted:
		return "any host, because " + strconv.Quote(s.Reason)
	}
	return "not declared: any host (default profile)"
}

// lines adds the sandbox's fields to a printed disclosure. prefix is what
// the program's runtime prefix is, in words.
func (p *printer) sandbox(s *Sandbox, runtime string) {
	p.field("authority", "it "+s.Authority())
	if s == nil || s.NotStated {
		return
	}
	read := slices.Clone(s.Read)
	for i, r := range read {
		if r == bundle.VarBundle {
			read[i] = r + " (read-only)"
		}
	}
	p.field("reads", strings.Join(read, ", "))
	switch {
	case s.Filesystem == FilesystemDefault:
		p.field("writes", strings.Join(s.Write, ", ")+" (the default profile: the workspace, its own cache and temp); nothing else under your home")
	default:
		// berth always grants the server its own ${cache} and ${tmp}
		// (pool's buildPolicy), declared or not.
		write := slices.Clone(s.Write)
		for _, v := range []string{bundle.VarCache, bundle.VarTmp} {
			if !slices.Contains(write, v) {
				write = append(write, v)
			}
		}
		p.field("writes", strings.Join(write, ", ")+" (its own cache and temp, always granted); nothing else")
	}
	p.field("network", s.NetworkWords())
	// The PATH directories (bundle.PathDirs) are the server's PATH at
	// start, so the review names the rule, not a list of this machine's.
	p.field("executes", runtime+", the directories on its PATH outside your home (runtime managers' install trees excepted), and the system's base set (docs/sandbox.md); never the workspace")
}

// runtimeWords says where a stdio server's programs may be executed from.
func runtimeWords(st *Stdio) string {
	switch {
	case st.Program == ProgramBundled:
		return "the bundle"
	case st.Sandbox != nil && st.Sandbox.RuntimePrefix != "":
		return "the program's runtime prefix (here: " + st.Sandbox.RuntimePrefix + ")"
	}
	return "the program's runtime prefix, found when it starts"
}

// LocateRuntimes finds, for each stdio server whose program is a host
// program, its runtime prefix on this machine (RuntimePrefix) and records
// it in the server's Sandbox.RuntimePrefix. It runs nothing: it only
// looks the command up on PATH. The review cannot know the host's program
// at trust for sure, so the prefix is shown as "here", and left out of
// Hash.
func (d *Disclosure) LocateRuntimes() {
	for i := range d.Servers {
		st := d.Servers[i].Stdio
		if st == nil || st.Program != ProgramHost || st.Sandbox == nil || st.Sandbox.NotStated {
			continue
		}
		if prefix, ok := RuntimePrefix(st.Command); ok {
			st.Sandbox.RuntimePrefix = prefix
		}
	}
}

// RuntimePrefix is where the program command resolves to on PATH lives,
// as the launcher allows it to read and execute (bundle.ProgramPrefix of
// the program, symlinks resolved). ok is false when the command is not
// found. It runs nothing.
func RuntimePrefix(command string) (prefix string, ok bool) {
	if command == "" || strings.ContainsAny(command, `/\`) {
		return "", false
	}
	p, err := exec.LookPath(command)
	if err != nil {
		return "", false
	}
	if p, err = filepath.Abs(p); err != nil {
		return "", false
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	home, _ := os.UserHomeDir()
	return bundle.ProgramPrefix(p, home), true
}
