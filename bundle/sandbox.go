package bundle

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/berth-mcp/berth/bundle/internal/lexical"
)

// Sandbox is the authority a local server or native-tool provider
// declares, and the limit berth holds it to (docs/sandbox.md). Paths are
// built from berth's variables: ${bundle} (always readable, never
// writable), ${workspace}, ${cache} and ${tmp} (the server's own
// directories, which berth owns) and ${home}/<path> (a named path under the
// operator's home). A nil Filesystem or Network leaves that part to
// berth's default profile.
type Sandbox struct {
	Filesystem *SandboxFilesystem `json:"filesystem,omitempty"`
	Network    *SandboxNetwork    `json:"network,omitempty"`
}

// SandboxFilesystem lists the paths a server may read, and those it may
// read and write. Nothing it declares is executable but ${bundle}.
type SandboxFilesystem struct {
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
}

// SandboxNetwork is what a server may reach: nothing, a list of
// host:port through berth's egress proxy, or anything (with a reason the
// review shows).
type SandboxNetwork struct {
	Mode   string   `json:"mode"`
	Hosts  []string `json:"hosts,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// Network modes of a SandboxNetwork.
const (
	NetworkNone         = "none"
	NetworkHosts        = "hosts"
	NetworkUnrestricted = "unrestricted"
)

// NetworkUndeclared is what SandboxNetworkMode reports for a server that
// declares no network: the default profile leaves the network open, and
// the review says it is not declared.
const NetworkUndeclared = "undeclared"

// MaxSandboxReason is the longest reason (in characters) an unrestricted
// network may give.
const MaxSandboxReason = 200

// Sandbox variables, as written in a declaration.
const (
	VarBundle    = "${bundle}"
	VarWorkspace = "${workspace}"
	VarCache     = "${cache}"
	VarTmp       = "${tmp}"
	VarHome      = "${home}"
)

// DefaultSandbox is berth's default profile, for a server or provider
// that declares no sandbox (docs/sandbox.md, "Default profile"): it reads
// ${bundle}; it reads and writes ${workspace} and its own ${cache} and
// ${tmp}; nothing else under the operator's home; its Network is nil: the
// network is left open and shown as not declared. Each call returns a new
// value.
func DefaultSandbox() *Sandbox {
	return &Sandbox{Filesystem: &SandboxFilesystem{
		Read:  []string{VarBundle},
		Write: []string{VarWorkspace, VarCache, VarTmp},
	}}
}

// Effective is the sandbox berth holds a server to: s where it declares,
// the default profile where it does not (a nil s, or a nil Filesystem).
// ${bundle} is always readable: Effective lists it first in Read unless a
// declaration lists it already. The Network stays nil when not declared
// (open, shown as not declared). The result is a new value.
func (s *Sandbox) Effective() *Sandbox {
	out := DefaultSandbox()
	if s == nil {
		return out
	}
	if s.Filesystem != nil {
		out.Filesystem = &SandboxFilesystem{Read: slices.Clone(s.Filesystem.Read), Write: slices.Clone(s.Filesystem.Write)}
		if !slices.Contains(out.Filesystem.Read, VarBundle) {
			out.Filesystem.Read = append([]string{VarBundle}, out.Filesystem.Read...)
		}
	}
	if s.Network != nil {
		n := *s.Network
		n.Hosts = slices.Clone(n.Hosts)
		out.Network = &n
	}
	return out
}

// NetworkMode is the network a server may reach: NetworkNone,
// NetworkHosts, NetworkUnrestricted, or NetworkUndeclared when s (or its
// Network) is nil.
func (s *Sandbox) NetworkMode() string {
	if s == nil || s.Network == nil {
		return NetworkUndeclared
	}
	return s.Network.Mode
}

// SandboxVars are the real directories berth's variables stand for when
// a server starts. Home is the operator's home directory; the others are
// the server's own (Cache and Tmp under BERTH_HOME, which berth creates).
// Every one is an absolute, clean path.
type SandboxVars struct {
	Bundle, Workspace, Cache, Tmp, Home string
}

// SandboxPaths are a sandbox's paths with the variables expanded:
// absolute and clean. Read holds the paths that are readable only (never
// a path of Write); Write those readable and writable. None of them is
// executable: the program's runtime prefix and the system's base set are
// the launcher's to add (package sandbox).
type SandboxPaths struct {
	Read, Write []string
}

// ErrSandboxVar is wrapped by Resolve when a variable the sandbox uses
// has no directory in the SandboxVars.
var ErrSandboxVar = errors.New("a sandbox variable has no directory")

// Resolve expands the variables of the effective sandbox (Effective: the
// default profile where s declares nothing) with the directories v gives.
// A variable the sandbox uses whose directory is empty or not absolute is
// an error (ErrSandboxVar), never a path left out: berth does not start a
// server whose limit it cannot state. The sandbox must have been
// validated (Validate); a path that breaks its rules is an error too.
func (s *Sandbox) Resolve(v SandboxVars) (SandboxPaths, error) {
	e := s.Effective()
	var out SandboxPaths
	seen := map[string]bool{}
	for _, w := range e.Filesystem.Write {
		p, err := v.expand(w)
		if err != nil {
			return SandboxPaths{}, err
		}
		if !seen[p] {
			seen[p] = true
			out.Write = append(out.Write, p)
		}
	}
	for _, r := range e.Filesystem.Read {
		p, err := v.expand(r)
		if err != nil {
			return SandboxPaths{}, err
		}
		if !seen[p] {
			seen[p] = true
			out.Read = append(out.Read, p)
		}
	}
	return out, nil
}

// expand turns one declared path into the real path.
func (v SandboxVars) expand(decl string) (string, error) {
	name, rel, ok := splitSandboxPath(decl)
	if !ok {
		return "", fmt.Errorf("the sandbox path %q is not a berth variable and a clean relative path (docs/sandbox.md) [%s]", decl, RuleSandboxPath)
	}
	var dir string
	switch name {
	case VarBundle:
		dir = v.Bundle
	case VarWorkspace:
		dir = v.Workspace
	case VarCache:
		dir = v.Cache
	case VarTmp:
		dir = v.Tmp
	case VarHome:
		dir = v.Home
	}
	if dir == "" || !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%w: %s (in %q) needs an absolute directory, and has %q", ErrSandboxVar, name, decl, dir)
	}
	if rel == "" {
		return filepath.Clean(dir), nil
	}
	return filepath.Join(dir, filepath.FromSlash(rel)), nil
}

// splitSandboxPath splits a declared path into its variable and the clean
// relative path after it ("" for the variable alone). ok is false when
// decl does not start with one of berth's variables, or what follows is
// not "/" and a clean relative path without glob characters, or it is
// ${home} alone.
func splitSandboxPath(decl string) (name, rel string, ok bool) {
	for _, n := range []string{VarBundle, VarWorkspace, VarCache, VarTmp, VarHome} {
		rest, found := strings.CutPrefix(decl, n)
		if !found {
			continue
		}
		if rest == "" {
			return n, "", n != VarHome
		}
		rel, found = strings.CutPrefix(rest, "/")
		if !found || !lexical.CleanRel(rel) || strings.ContainsAny(rel, "*?[]{}$") {
			return n, "", false
		}
		return n, rel, true
	}
	return "", "", false
}

// ProgramPrefix is the runtime prefix of the program at the absolute,
// symlink-free path program, which the launcher lets a confined server
// read and execute and the review shows: the parent of the program's
// directory when that is named bin ("/usr" for /usr/bin/node), else its
// directory. A parent that would open far more than a runtime is never the
// prefix: "/" gives the bin directory only. Under the home directory home
// (rule sandbox-home-prefix, docs/sandbox.md) the prefix is the program's
// own directory ("~/.cargo/bin/x" gives ~/.cargo/bin, never ~/.cargo with
// its credentials.toml), except inside the pure install tree of a known
// runtime manager (RuntimeManagerTree: "~/.nvm/versions/node/v22.1.0" for
// nvm's node). home may be "". It is berth's one rule for the prefix
// (review.RuntimePrefix finds the program on PATH first; the pool applies
// it to the program and its symlink target).
func ProgramPrefix(program, home string) string {
	dir := filepath.Dir(program)
	if home != "" && underDir(dir, filepath.Clean(home)) {
		if t := RuntimeManagerTree(dir, home); t != "" {
			return t
		}
		return dir
	}
	if filepath.Base(dir) != "bin" {
		return dir
	}
	parent := filepath.Dir(dir)
	if parent == dir || parent == string(filepath.Separator) {
		return dir
	}
	return parent
}

// runtimeManagerTrees are the install trees of runtime managers below the
// home directory that hold installed runtimes only, never credentials, as
// slash paths relative to home ("*" one element). The first that holds a
// directory wins; keep the list short and in docs/sandbox.md.
var runtimeManagerTrees = []string{
	".nvm/versions/node/*",
	".pyenv/versions/*",
	".pyenv", // pyenv's shims run pyenv's own scripts, which read its root (versions, libexec, plugins, version)
	".rustup/toolchains/*",
	".local/share/fnm/node-versions/*",
	".local/share/mise/installs/*/*",
	".local/share/asdf/installs/*/*",
}

// RuntimeManagerTree returns the runtime manager's install tree (from
// runtimeManagerTrees) that holds the absolute, clean directory dir below
// home, or "" when none does.
func RuntimeManagerTree(dir, home string) string {
	home = filepath.Clean(home)
	rel, err := filepath.Rel(home, dir)
	if err != nil || !filepath.IsLocal(rel) || rel == "." {
		return ""
	}
	els := strings.Split(filepath.ToSlash(rel), "/")
	for _, t := range runtimeManagerTrees {
		pat := strings.Split(t, "/")
		if len(els) < len(pat) {
			continue
		}
		match := true
		for i, pe := range pat {
			if pe != "*" && pe != els[i] {
				match = false
				break
			}
		}
		if match {
			return filepath.Join(home, filepath.FromSlash(strings.Join(els[:len(pat)], "/")))
		}
	}
	return ""
}

// underDir reports whether the clean absolute path p is dir or below it.
func underDir(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// maxPathEntries bounds how many entries of one PATH directory PathDirs
// looks at for symlinks.
const maxPathEntries = 4096

// baseSet is the launcher's base set of programs (package sandbox), which
// every confined server may read and execute already.
var baseSet = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// InBaseSet reports whether the clean absolute directory d is under the
// launcher's base set of programs (/usr, /bin, /sbin, /lib...).
func InBaseSet(d string) bool {
	for _, b := range baseSet {
		if underDir(d, b) {
			return true
		}
	}
	return false
}

// PathDirs returns what of a server's PATH (pathList) berth lets it read
// and execute, beyond its runtime prefix and the base set: each absolute
// directory on it (symlinks resolved), and the directory of each
// symlinked program in it (/opt/x/bin/tool → the tool's own directory).
// Never "/", the home directory home or one holding it, nor a directory
// below home outside a runtime manager's install tree (rule
// sandbox-home-prefix: ~/go/bin, ~/.cargo/bin, ~/.local/bin are left out;
// ~/.pyenv/shims gives pyenv's root, whose scripts it runs). home must be
// absolute. The pool grants these (less the workspace) and the review
// shows them (docs/sandbox.md, "Default profile").
func PathDirs(pathList, home string) []string {
	home = filepath.Clean(home)
	ok := func(d string) bool {
		if d == filepath.Dir(d) || underDir(home, d) || InBaseSet(d) {
			return false
		}
		return !underDir(d, home) || RuntimeManagerTree(d, home) != ""
	}
	var out []string
	add := func(d string) {
		if t := RuntimeManagerTree(d, home); t != "" {
			d = t
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	for _, e := range filepath.SplitList(pathList) {
		if e == "" || !filepath.IsAbs(e) {
			continue
		}
		d, err := filepath.EvalSymlinks(e)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() || !ok(d) {
			continue
		}
		add(d)
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		if len(ents) > maxPathEntries {
			ents = ents[:maxPathEntries]
		}
		for _, ent := range ents {
			if ent.Type()&os.ModeSymlink == 0 {
				continue
			}
			t, err := filepath.EvalSymlinks(filepath.Join(d, ent.Name()))
			if err != nil {
				continue
			}
			if td := filepath.Dir(t); ok(td) && !underDir(td, d) {
				add(td)
			}
		}
	}
	return out
}

// dnsLabel is one label of a host name: letters, digits and inner
// hyphens, 1 to 63, lower case.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// ParseSandboxHost checks one entry of network.hosts: "host:port", the
// host a lower-case DNS name (at most one leading "*." wildcard label,
// with at least two labels after it) or an IP literal ("[::1]:443" for
// IPv6), the port a decimal 1-65535 without leading zeros. It returns the
// host (without brackets) and the port, or what is wrong in words.
func ParseSandboxHost(entry string) (host string, port int, why string) {
	i := strings.LastIndexByte(entry, ':')
	if i < 0 {
		return "", 0, "it has no port; write host:port, like \"api.example.com:443\""
	}
	h, ps := entry[:i], entry[i+1:]
	n, err := strconv.Atoi(ps)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != ps {
		return "", 0, fmt.Sprintf("the port %q is not a number from 1 to 65535", ps)
	}
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		a, err := netip.ParseAddr(h[1 : len(h)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", 0, fmt.Sprintf("%q is not an IPv6 literal", h)
		}
		return a.String(), n, ""
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if !a.Is4() {
			return "", 0, fmt.Sprintf("the IPv6 literal %q must be in brackets: \"[%s]:%d\"", h, h, n)
		}
		return a.String(), n, ""
	}
	name := strings.TrimPrefix(h, "*.")
	if name == "" || len(name) > 253 {
		return "", 0, fmt.Sprintf("%q is not a host name", h)
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if !dnsLabel.MatchString(l) {
			return "", 0, fmt.Sprintf("%q is not a host name of lower-case letters, digits, '-' and '.' (write an IDN in its xn-- form, and a wildcard only as one leading \"*.\" label)", h)
		}
	}
	if strings.HasPrefix(h, "*.") && len(labels) < 2 {
		return "", 0, fmt.Sprintf("the wildcard %q covers a whole top-level domain; name the domain, like \"*.example.com\"", h)
	}
	if _, err := strconv.Atoi(labels[len(labels)-1]); err == nil {
		return "", 0, fmt.Sprintf("%q is neither a host name nor an IP address", h)
	}
	return h, n, ""
}

// sandbox checks a server's or provider's sandbox (docs/sandbox.md).
// remote is true for a remote server, which berth does not start and so
// cannot confine.
func (v *validator) sandbox(p string, s *Sandbox, remote bool) {
	if remote {
		v.ps.add(p, RuleSandboxRemote, "a remote server is not a process berth starts, so it has no sandbox; remove \"sandbox\" (its hosts are remote.network.hosts)")
		return
	}
	if fs := s.Filesystem; fs != nil {
		seen := map[string]string{}
		check := func(field string, list []string) {
			for i, decl := range list {
				ep := fmt.Sprintf("%s.filesystem.%s[%d]", p, field, i)
				if why := sandboxPathProblem(decl, field == "write"); why != "" {
					v.ps.add(ep, RuleSandboxPath, "%s; a sandbox path is ${bundle}, ${workspace}, ${cache} or ${tmp}, alone or followed by /<clean relative path>, or ${home}/<clean relative path>: no \"..\", no glob, no absolute path, no other variable (docs/sandbox.md)", why)
					continue
				}
				if other, dup := seen[decl]; dup {
					v.ps.add(ep, RuleSandboxPath, "%q is listed already (%s); keep it once, in write if the server writes there, else in read", decl, other)
					continue
				}
				seen[decl] = fmt.Sprintf("filesystem.%s[%d]", field, i)
			}
		}
		check("write", fs.Write)
		check("read", fs.Read)
	}
	if n := s.Network; n != nil {
		v.sandboxNetwork(p+".network", n)
	}
}

// sandboxPathProblem says what is wrong with one declared path, or "".
func sandboxPathProblem(decl string, write bool) string {
	name, _, ok := splitSandboxPath(decl)
	switch {
	case !ok && name == VarHome && decl == VarHome:
		return "${home} alone would be the whole home directory (your keys, other projects, browser profiles); name the path under it, like \"${home}/.config/acme\""
	case !ok && name == "" && strings.HasPrefix(decl, "/"):
		return fmt.Sprintf("%q is an absolute path; start it with one of berth's variables", decl)
	case !ok && name == "":
		return fmt.Sprintf("%q does not start with one of berth's variables", decl)
	case !ok:
		return fmt.Sprintf("%q is not %s followed by '/' and a clean relative path", decl, name)
	case write && name == VarBundle:
		return fmt.Sprintf("%q is in the bundle, which is read-only (berth checks its files against the reviewed digest); write to ${cache} or ${tmp} instead", decl)
	}
	return ""
}

func (v *validator) sandboxNetwork(p string, n *SandboxNetwork) {
	switch n.Mode {
	case NetworkNone, NetworkHosts, NetworkUnrestricted:
	case "":
		v.ps.add(p+".mode", RuleSandboxNetworkMode, "network.mode is required: \"none\", \"hosts\" (with hosts) or \"unrestricted\" (with a reason)")
		return
	default:
		v.ps.add(p+".mode", RuleSandboxNetworkMode, "network.mode %q is not \"none\", \"hosts\" or \"unrestricted\"", n.Mode)
		return
	}
	switch {
	case n.Mode != NetworkHosts && (len(n.Hosts) > 0 || v.present[p+".hosts"]):
		v.ps.add(p+".hosts", RuleSandboxHost, "hosts are listed with network.mode %q; list hosts only with \"mode\": \"hosts\", or remove them", n.Mode)
	case n.Mode == NetworkHosts && len(n.Hosts) == 0:
		v.ps.add(p+".hosts", RuleSandboxHost, "network.mode \"hosts\" needs at least one host:port in hosts, like [\"api.example.com:443\"]; with none, write \"mode\": \"none\"")
	case n.Mode == NetworkHosts:
		seen := map[string]int{}
		for i, h := range n.Hosts {
			hp := fmt.Sprintf("%s.hosts[%d]", p, i)
			host, port, why := ParseSandboxHost(h)
			if why != "" {
				v.ps.add(hp, RuleSandboxHost, "%q: %s", h, why)
				continue
			}
			key := strings.ToLower(host) + ":" + strconv.Itoa(port)
			if j, dup := seen[key]; dup {
				v.ps.add(hp, RuleSandboxHost, "%q is hosts[%d] already; keep it once", h, j)
				continue
			}
			seen[key] = i
		}
	}
	switch {
	case n.Mode == NetworkUnrestricted && strings.TrimSpace(n.Reason) == "":
		v.ps.add(p+".reason", RuleSandboxReason, "network.mode \"unrestricted\" needs a reason the review shows, like \"reason\": \"crawls the pages the user asks for\"; or list the hosts it needs with \"mode\": \"hosts\"")
	case n.Mode == NetworkUnrestricted:
		if c := utf8.RuneCountInString(n.Reason); c > MaxSandboxReason {
			v.ps.add(p+".reason", RuleSandboxReason, "the reason has %d characters; keep it to %d", c, MaxSandboxReason)
		} else if strings.ContainsFunc(n.Reason, func(r rune) bool { return !unicode.IsPrint(r) && !unicode.IsControl(r) }) {
			v.ps.add(p+".reason", RuleSandboxReason, "the reason holds a character that is not printable (a format or invisible character; control characters are control-character problems); write it as plain text")
		}
	case n.Reason != "" || v.present[p+".reason"]:
		v.ps.add(p+".reason", RuleSandboxReason, "a reason is given with network.mode %q; only \"unrestricted\" takes one: remove it", n.Mode)
	}
}
