package pool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/sandbox"
	"github.com/berth-mcp/berth/store"
)

// Every local server and native-tool provider runs confined
// (docs/sandbox.md): policyInput is what berth knows of one start, and
// buildPolicy turns it into the sandbox.Policy the launcher enforces,
// from the manifest's sandbox declaration or, without one, the default
// profile.

// policyInput is what one start of a local server contributes to its
// policy.
type policyInput struct {
	id        string          // "<plugin>__<server>", for errors
	decl      *bundle.Sandbox // nil: the default profile
	bundleDir string          // the staged snapshot
	workspace string          // the workspace, symlinks resolved
	// program is the resolved program (absolute); interpreter is the
	// program a ${bundle} script's "#!/usr/bin/env NAME" line names,
	// found on the server's PATH ("" for none).
	program, interpreter string
	home                 string // the operator's home directory ("" if unknown)
	cache, tmp           string // the server's own directories (created)
	// fetched are staged fetched trees (H4: fetched.Lock's directories),
	// readable and executable.
	fetched []string
	// extraRead and extraWrite are berth's own additions for this start
	// (a runtime fetcher's configuration files and run directory).
	extraRead, extraWrite []string
	// pathList is the server's PATH: its directories are readable and
	// executable (pathExec), so that a wrapper can run what it names.
	pathList string
	// state is BERTH_HOME: no writable path may hold it.
	state string
	// undeclaredNone is the operator's sandbox-undeclared-network none.
	undeclaredNone bool
	unixSockets    bool
}

// buildPolicy resolves in into a policy: every path absolute, clean and
// symlink-resolved. The workspace is never executable: a program inside
// it is refused.
func buildPolicy(in *policyInput) (*sandbox.Policy, error) {
	ws, err := realDir(in.workspace)
	if err != nil {
		return nil, permanent("server %s: the workspace %s: %v", in.id, in.workspace, err)
	}
	bdir, err := realDir(in.bundleDir)
	if err != nil {
		return nil, permanent("server %s: the staged bundle %s: %v", in.id, in.bundleDir, err)
	}
	p := &sandbox.Policy{UnixSockets: in.unixSockets}
	p.Exec = append(p.Exec, bdir)
	for _, prog := range []string{in.program, in.interpreter} {
		if prog == "" {
			continue
		}
		prefixes, err := runtimePrefixes(in.id, prog, ws, bdir, in.home)
		if err != nil {
			return nil, err
		}
		p.Exec = append(p.Exec, prefixes...)
	}
	p.Exec = append(p.Exec, pathExec(in.pathList, ws, in.home)...)
	for _, f := range in.fetched {
		d, err := realDir(f)
		if err != nil {
			return nil, permanent("server %s: its staged fetched tree %s: %v; run berth verify", in.id, f, err)
		}
		p.Exec = append(p.Exec, d)
	}
	for _, d := range []string{in.cache, in.tmp} {
		r, err := realDir(d)
		if err != nil {
			return nil, permanent("server %s: its own directory %s: %v", in.id, d, err)
		}
		p.Write = append(p.Write, r)
	}
	for _, f := range in.extraRead {
		if r, err := filepath.EvalSymlinks(f); err == nil {
			p.Read = append(p.Read, r)
		}
	}
	for _, f := range in.extraWrite {
		if r, err := filepath.EvalSymlinks(f); err == nil {
			p.Write = append(p.Write, r)
		}
	}

	vars := map[string]string{"${bundle}": bdir, "${workspace}": ws, "${cache}": in.cache, "${tmp}": in.tmp}
	if in.decl != nil && in.decl.Filesystem != nil {
		for _, e := range in.decl.Filesystem.Read {
			r, ok, err := expandSandboxPath(in.id, e, vars, in.home)
			if err != nil {
				return nil, err
			}
			if ok && r != bdir {
				p.Read = append(p.Read, r)
			}
		}
		for _, e := range in.decl.Filesystem.Write {
			r, ok, err := expandSandboxPath(in.id, e, vars, in.home)
			if err != nil {
				return nil, err
			}
			if ok && r == bdir {
				return nil, permanent("server %s: its sandbox declares %s writable, but the bundle is read-only always; the bundle was trusted under earlier rules: update it and trust it again", in.id, e)
			}
			if ok {
				p.Write = append(p.Write, r)
			}
		}
	} else {
		p.Write = append(p.Write, ws) // the default profile
	}

	p.Network = sandbox.NetworkOpen
	switch {
	case in.decl != nil && in.decl.Network != nil:
		switch in.decl.Network.Mode {
		case bundle.NetworkNone:
			p.Network = sandbox.NetworkNone
		case bundle.NetworkHosts:
			p.Network = sandbox.NetworkHosts
			for _, h := range in.decl.Network.Hosts {
				if _, err := parseHostRule(h); err != nil {
					return nil, permanent("server %s: its sandbox's network host %q: %v; the bundle was trusted under earlier rules: update it and trust it again", in.id, h, err)
				}
				p.Hosts = append(p.Hosts, strings.ToLower(h))
			}
		case bundle.NetworkUnrestricted:
		default:
			return nil, permanent("server %s: its sandbox's network mode %q is not none, hosts or unrestricted; the bundle was trusted under earlier rules: update it and trust it again", in.id, in.decl.Network.Mode)
		}
	case in.undeclaredNone:
		p.Network = sandbox.NetworkNone
	}
	if in.state != "" {
		if st, err := filepath.EvalSymlinks(in.state); err == nil {
			for _, w := range p.Write {
				if within(st, w) {
					return nil, permanent("server %s: berth's state directory %s is inside %s, which the server may write: it could change berth's own configuration and records; move BERTH_HOME out of the workspace [%s]", in.id, st, w, RuleSandboxStateWritable)
				}
			}
		}
	}
	for _, l := range []*[]string{&p.Exec, &p.Read, &p.Write, &p.Hosts} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
	}
	p.ReadOnly = gitReadOnly(ws, p.Write)
	return p, nil
}

// gitReadOnly is the workspace's .git (resolved) when a write path holds
// it: its hooks and config run with the operator's rights at the next git
// command, so the launcher keeps it read-only (docs/sandbox.md §Default
// profile).
func gitReadOnly(ws string, write []string) []string {
	git, err := filepath.EvalSymlinks(filepath.Join(ws, ".git"))
	if err != nil {
		return nil
	}
	for _, w := range write {
		if within(git, w) {
			return []string{git}
		}
	}
	return nil
}

// expandSandboxPath expands one declared path: a variable, then an
// optional clean relative path. A ${home}/ path needs a home directory. A
// path that does not exist is left out (ok false): nothing can be reached
// through it.
func expandSandboxPath(id, e string, vars map[string]string, home string) (string, bool, error) {
	bad := func(why string) (string, bool, error) {
		return "", false, permanent("server %s: its sandbox path %q %s; write ${bundle}, ${workspace}, ${cache}, ${tmp} or ${home}/<path>, optionally followed by /<path>; the bundle was trusted under earlier rules: update it and trust it again", id, e, why)
	}
	v, rest, _ := strings.Cut(e, "/")
	base, known := vars[v]
	if v == "${home}" {
		if rest == "" {
			return bad("names the whole home directory")
		}
		if home == "" {
			return "", false, permanent("server %s: its sandbox names %s, but berth knows no home directory (HOME is unset); set HOME", id, e)
		}
		base, known = home, true
	}
	if !known {
		return bad("does not start with a variable")
	}
	if rest != "" {
		if !filepathValid(rest) {
			return bad("is not a clean path below its variable")
		}
		base = filepath.Join(base, filepath.FromSlash(rest))
	}
	r, err := filepath.EvalSymlinks(base)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, permanent("server %s: its sandbox path %s (%s): %v", id, e, base, err)
	}
	return r, true, nil
}

// filepathValid reports whether rest is a clean relative slash path
// without "..", "." or empty elements.
func filepathValid(rest string) bool {
	for el := range strings.SplitSeq(rest, "/") {
		if el == "" || el == "." || el == ".." {
			return false
		}
	}
	return true
}

// runtimePrefixes returns what of prog's installation the server may read
// and execute: the prefix of the program as found (the parent of its bin
// directory, or of an npm tree's node_modules/.bin, else its directory) and, when it is a symlink, that of its
// target (npx → npm's own tree). A prefix that would hold the workspace,
// the home directory itself or the whole file system narrows to the
// program's own directory; a program inside the workspace is refused (the
// workspace is never executable).
func runtimePrefixes(id, prog, ws, bdir, home string) ([]string, error) {
	dir, err := realDir(filepath.Dir(prog))
	if err != nil {
		return nil, permanent("server %s: the program %s: %v", id, prog, err)
	}
	real, err := filepath.EvalSymlinks(prog)
	if err != nil {
		return nil, permanent("server %s: the program %s: %v", id, prog, err)
	}
	var out []string
	for _, d := range []string{dir, filepath.Dir(real)} {
		if within(d, ws) {
			return nil, permanent("server %s: its program %s is inside the workspace %s, and the workspace is never executable; install the program outside the workspace (or ship it in the bundle) and point the manifest's command at it [sandbox-workspace-exec]", id, real, ws)
		}
		if within(d, bdir) {
			continue // the bundle is executable already
		}
		cands := []string{d}
		if b := filepath.Base(d); b == "bin" || b == ".bin" { // .bin: an npm tree's node_modules/.bin
			cands = []string{filepath.Dir(d), d}
		}
		chosen := ""
		for _, c := range cands {
			// Never "/", the home directory or ~/.local (~/.local/bin/uvx gives
			// its bin directory only: ~/.local/share holds keyrings), as
			// bundle.ProgramPrefix says on integ.
			if within(ws, c) || (home != "" && (within(home, c) || c == filepath.Join(home, ".local"))) || c == filepath.Dir(c) {
				continue
			}
			chosen = c
			break
		}
		if chosen == "" {
			return nil, permanent("server %s: the directory of its program %s holds the workspace or the home directory, which berth never makes executable; install the program in a directory of its own", id, real)
		}
		out = append(out, chosen)
	}
	return out, nil
}

// maxPathEntries bounds how many entries of one PATH directory pathExec
// looks at for symlinks.
const maxPathEntries = 4096

// pathExec returns what of the server's PATH it may read and execute: each
// absolute directory on it (symlinks resolved), and the directory of each
// symlinked program in it (~/.local/bin/tool → the tool's own directory),
// never a directory that is or holds the workspace or the home
// directory, nor one inside the workspace, nor /. The base set (/usr,
// /bin, ...) is the launcher's already.
func pathExec(pathList, ws, home string) []string {
	var out []string
	ok := func(d string) bool {
		return d != filepath.Dir(d) && !within(ws, d) && !within(d, ws) && (home == "" || !within(home, d))
	}
	for _, e := range filepath.SplitList(pathList) {
		if e == "" || !filepath.IsAbs(e) {
			continue
		}
		d, err := realDir(e)
		if err != nil || !ok(d) || inBase(d) {
			continue
		}
		out = append(out, d)
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
			if td := filepath.Dir(t); ok(td) && !inBase(td) && !within(td, d) {
				out = append(out, td)
			}
		}
	}
	return out
}

// inBase reports whether d is under the launcher's base set of programs.
func inBase(d string) bool {
	for _, b := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		if within(d, b) {
			return true
		}
	}
	return false
}

// within reports whether path is dir or below it (both clean, absolute).
func within(path, dir string) bool {
	if path == dir {
		return true
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// realDir returns d absolute with its symlinks resolved, and requires it
// to be a directory.
func realDir(d string) (string, error) {
	r, err := filepath.EvalSymlinks(d)
	if err != nil {
		return "", err
	}
	r, err = filepath.Abs(r)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(r)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", r)
	}
	return r, nil
}

// scriptInterpreter returns the program a script's "#!/usr/bin/env NAME"
// line names, found on pathList, or "" when prog is no such script (a
// binary, or "#!" with an absolute interpreter, which the base set or the
// program's prefix covers when it is a system one).
func scriptInterpreter(prog, pathList string) string {
	f, err := os.Open(prog)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, _ := f.Read(buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return ""
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) != "env" {
		if filepath.IsAbs(fields[0]) {
			return fields[0]
		}
		return ""
	}
	for _, a := range fields[1:] {
		if strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
			continue
		}
		if p, err := lookPath(a, pathList); err == nil {
			return p
		}
		return ""
	}
	return ""
}

// serverDirs prepares a server's own cache directory (kept) and a fresh,
// empty temp directory for this start under its temp root; the returned
// cleanup removes the temp directory. Both are private (0700).
func serverDirs(paths store.Paths, plugin, server string) (cache, tmp string, cleanup func(), err error) {
	for _, d := range []string{paths.Servers(), filepath.Join(paths.Servers(), plugin), filepath.Join(paths.Servers(), plugin, server)} {
		if err := privateDir(d); err != nil {
			return "", "", nil, err
		}
	}
	cache = paths.ServerCache(plugin, server)
	root := paths.ServerTmp(plugin, server)
	for _, d := range []string{cache, root} {
		if err := privateDir(d); err != nil {
			return "", "", nil, err
		}
	}
	tmp, err = os.MkdirTemp(root, "run-")
	if err != nil {
		return "", "", nil, fmt.Errorf("cannot create the temp directory of %s__%s: %w", plugin, server, err)
	}
	return cache, tmp, func() { os.RemoveAll(tmp) }, nil
}

// confinement is one start's sandbox: the policy Wrap applies (nil when
// the server runs unconfined), the variables that point the server at
// its own directories, and what status shows.
type confinement struct {
	policy   *sandbox.Policy
	opts     *sandbox.Options
	env      map[string]string
	upstream string
	enf      sandbox.Enforcement
	cleanup  func()
}

func (c *confinement) done() {
	if c != nil && c.cleanup != nil {
		c.cleanup()
	}
}

// unconfined is the enforcement of a server that runs with the operator's
// rights, and why.
func unconfined(why string) sandbox.Enforcement {
	return sandbox.Enforcement{Confined: false, Unconfined: why, Mechanism: "none", Network: sandbox.NetworkOpen}
}

// RuleSandboxRequired is the rule of a server refused under
// sandbox-require.
const RuleSandboxRequired = "sandbox-required"

// RuleSandboxStateWritable is the rule of a server whose writable paths
// (the workspace) hold berth's state directory.
const RuleSandboxStateWritable = "sandbox-state-writable"

// RuleSandboxFetchAtStart is the rule of a runtime-fetched server that
// would fetch its package at start: under confinement it runs only from a
// tree staged at trust.
const RuleSandboxFetchAtStart = "sandbox-fetch-at-start"

// confine decides how one start of s is confined. prog is the resolved
// program, pathList the server's PATH; extraRead and extraWrite are
// berth's own additions (a runtime fetcher's files). A server the operator
// listed in sandbox-unconfined runs unconfined; with sandbox-require on, a
// server without a declaration, or on a host that cannot confine, is
// refused.
func (s *server) confine(prog, pathList string, extraRead, extraWrite, fetchedTrees []string, unixSockets bool) (*confinement, error) {
	set := s.p.sandboxSettings()
	var decl *bundle.Sandbox
	if s.spec != nil {
		decl = s.spec.Sandbox
	} else if s.native != nil {
		decl = s.native.Sandbox
	}
	what := "server"
	if s.native != nil {
		what = "native tool provider"
	}
	if set.UnconfinedServer(s.id) {
		return &confinement{enf: unconfined("the operator runs it unconfined (berth config sandbox-unconfined)")}, nil
	}
	if set.Require && decl == nil {
		return nil, permanent("%s %s declares no sandbox, and sandbox-require is on: berth starts only servers that declare what they need [%s]; ask its publisher for a version with a sandbox declaration (docs/sandbox.md), run it unconfined with berth config set sandbox-unconfined %s, or turn the requirement off with berth config set sandbox-require off", what, s.id, RuleSandboxRequired, s.id)
	}
	sup := sandbox.Probe()
	if sup.LandlockABI == 0 && !sup.Seatbelt {
		why := "this host cannot confine a process"
		if len(sup.Notes) > 0 {
			why += ": " + strings.Join(sup.Notes, "; ")
		}
		if set.Require {
			return nil, permanent("%s %s cannot be confined, and sandbox-require is on: %s [%s]; run it unconfined with berth config set sandbox-unconfined %s, or turn the requirement off with berth config set sandbox-require off", what, s.id, why, RuleSandboxRequired, s.id)
		}
		return &confinement{enf: unconfined(why)}, nil
	}
	cache, tmp, cleanup, err := serverDirs(s.p.paths, s.pl.name, s.name)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, s.id, err)
	}
	home := ""
	if h, ok := s.p.lookupEnv("HOME"); ok && filepath.IsAbs(h) {
		if r, err := filepath.EvalSymlinks(h); err == nil {
			home = r
		}
	}
	in := &policyInput{id: s.id, decl: decl, bundleDir: s.pl.dir, workspace: s.p.workspace, program: prog,
		home: home, cache: cache, tmp: tmp, extraRead: extraRead, extraWrite: extraWrite, pathList: pathList, fetched: fetchedTrees, state: s.p.paths.Root,
		undeclaredNone: set.UndeclaredNetwork == "none", unixSockets: unixSockets}
	in.interpreter = scriptInterpreter(prog, pathList)
	pol, err := buildPolicy(in)
	if err != nil {
		cleanup()
		return nil, err
	}
	env := map[string]string{"TMPDIR": tmp, "XDG_CACHE_HOME": cache}
	if len(extraWrite) > 0 {
		// A runtime fetcher that fetches at start (one not staged at
		// trust): npm's cache is ~/.npm, which the server may not write.
		// uv and pip follow XDG_CACHE_HOME. What it fetches there is not
		// executable (the launcher keeps writable paths non-executable):
		// such a server runs from the tree staged at trust instead.
		env["npm_config_cache"] = filepath.Join(cache, "npm")
	}
	return &confinement{policy: pol, opts: &sandbox.Options{Require: set.Require}, upstream: set.UpstreamProxy, cleanup: cleanup, env: env}, nil
}

// sandboxSettings are the operator's sandbox settings as the last
// reconcile read them.
func (p *Pool) sandboxSettings() store.SandboxSettings {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sandbox
}

// setEnforcement records what the last start of s had in effect, for
// Status.
func (s *server) setEnforcement(e *sandbox.Enforcement) {
	s.mu.Lock()
	s.enforcement = e
	s.mu.Unlock()
}

// SandboxStatus is a local server's confinement as berth status shows it:
// the enforcement of its last start and what its manifest declares.
type SandboxStatus struct {
	sandbox.Enforcement
	// Declared is whether the manifest declares a sandbox; false means the
	// default profile.
	Declared bool `json:"declared"`
	// NetworkDeclared is whether it declares its network; false means the
	// network is undeclared (open unless sandbox-undeclared-network is
	// none).
	NetworkDeclared bool `json:"networkDeclared"`
}

// sandboxStatusLocked is Status's view of s's confinement; s.mu is held.
func (s *server) sandboxStatusLocked() *SandboxStatus {
	if s.enforcement == nil {
		return nil
	}
	var decl *bundle.Sandbox
	if s.spec != nil {
		decl = s.spec.Sandbox
	} else if s.native != nil {
		decl = s.native.Sandbox
	}
	st := &SandboxStatus{Enforcement: *s.enforcement, Declared: decl != nil, NetworkDeclared: decl != nil && decl.Network != nil}
	st.ProxyHosts = slices.Clone(st.ProxyHosts)
	st.NotEnforced = slices.Clone(st.NotEnforced)
	return st
}

// SandboxSettings returns the operator's sandbox settings as the pool
// applies them.
func (p *Pool) SandboxSettings() store.SandboxSettings { return p.sandboxSettings() }
