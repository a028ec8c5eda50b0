package pool

import (
	"errors"
	"fmt"
	"os"
	"os/user"
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
	home                 string // the operator's home directory, symlinks resolved ("": unknown, refused)
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
	// state is BERTH_HOME: no path the server may reach may hold it.
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
		return nil, permanent("server %s: berth cannot resolve its workspace %s: %v [%s]; check that it exists and that you may read it, or start berth with --workspace naming a project's directory", in.id, in.workspace, err, RuleSandboxPathUnresolved)
	}
	bdir, err := realDir(in.bundleDir)
	if err != nil {
		return nil, permanent("server %s: berth cannot resolve its staged bundle %s: %v [%s]; run berth verify, then re-trust the plugin", in.id, in.bundleDir, err, RuleSandboxPathUnresolved)
	}
	if in.home == "" || !filepath.IsAbs(in.home) {
		return nil, permanent("server %s: berth knows no home directory (HOME is unset or not absolute, and the user database has none for this account), so it cannot keep the server out of it [%s]; set HOME to your home directory", in.id, RuleSandboxHomeUnknown)
	}
	home := in.home
	if ws == filepath.Dir(ws) || within(home, ws) {
		return nil, permanent("server %s: the workspace %s is the whole file system, the home directory %s or holds it, and the server may write its workspace [%s]; start berth with --workspace naming a project's directory", in.id, ws, home, RuleSandboxWorkspaceHome)
	}
	p := &sandbox.Policy{UnixSockets: in.unixSockets}
	p.Exec = append(p.Exec, bdir)
	for _, prog := range []string{in.program, in.interpreter} {
		if prog == "" {
			continue
		}
		prefixes, err := runtimePrefixes(in.id, prog, ws, bdir, home)
		if err != nil {
			return nil, err
		}
		p.Exec = append(p.Exec, prefixes...)
	}
	p.Exec = append(p.Exec, pathExec(in.pathList, ws, home)...)
	for _, f := range in.fetched {
		d, err := realDir(f)
		if err != nil {
			return nil, permanent("server %s: berth cannot resolve its staged fetched tree %s: %v [%s]; run berth verify, then re-trust the plugin", in.id, f, err, RuleSandboxPathUnresolved)
		}
		p.Exec = append(p.Exec, d)
	}
	own := map[string]string{}
	for _, d := range []string{in.cache, in.tmp} {
		r, err := realDir(d)
		if err != nil {
			return nil, permanent("server %s: berth cannot resolve its own directory %s: %v [%s]; check the permissions of %s and of BERTH_HOME (berth makes it there at each start)", in.id, d, err, RuleSandboxPathUnresolved, filepath.Dir(d))
		}
		own[d] = r
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

	if in.decl != nil && in.decl.Filesystem != nil {
		paths, err := declaredPaths(in.id, in.decl, bundle.SandboxVars{Bundle: bdir, Workspace: ws, Cache: own[in.cache], Tmp: own[in.tmp], Home: home})
		if err != nil {
			return nil, err
		}
		for _, r := range paths.Read {
			if r != bdir {
				p.Read = append(p.Read, r)
			}
		}
		for _, r := range paths.Write {
			if r == bdir {
				return nil, permanent("server %s: its sandbox declares %s writable, but the bundle is read-only always; the bundle was trusted under earlier rules: update it and trust it again", in.id, r)
			}
			p.Write = append(p.Write, r)
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
				if _, _, why := bundle.ParseSandboxHost(h); why != "" {
					return nil, permanent("server %s: its sandbox's network host %q: %s; the bundle was trusted under earlier rules: update it and trust it again", in.id, h, why)
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
			// The server's own cache and tmp, its staged bundle and
			// fetched trees lie below the state directory: allowed, as
			// they do not hold it.
			for _, r := range slices.Concat(p.Read, p.Exec) {
				if within(st, r) {
					return nil, permanent("server %s: berth's state directory %s is inside %s, which the server may read: it could read berth's records, configuration and sign-in tokens [%s]; remove that path from the sandbox declaration or PATH, or move BERTH_HOME out of it", in.id, st, r, RuleSandboxStateReadable)
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

// declaredPaths expands a declaration's paths with bundle's Resolve (the
// same expansion the review shows) and resolves their symlinks. A path
// that does not exist is left out: nothing can be reached through it. A
// path whose symlinks lead out of its variable's directory is refused
// (rule sandbox-path-escapes): a server may plant a link in its own cache
// or workspace at one start to be granted its target at the next. A
// ${home}/ path must stay below home and never be home itself.
func declaredPaths(id string, decl *bundle.Sandbox, v bundle.SandboxVars) (bundle.SandboxPaths, error) {
	paths, err := decl.Resolve(v)
	if err != nil {
		return bundle.SandboxPaths{}, permanent("server %s: its sandbox: %v; write ${bundle}, ${workspace}, ${cache}, ${tmp} or ${home}/<path>, optionally followed by /<path>; the bundle was trusted under earlier rules: update it and trust it again", id, err)
	}
	// The variable a path came from is the deepest one holding it (the
	// cache below the home directory is the cache).
	bases := []string{v.Bundle, v.Workspace, v.Cache, v.Tmp, v.Home}
	slices.SortFunc(bases, func(a, b string) int { return len(b) - len(a) })
	resolve := func(list []string) ([]string, error) {
		var out []string
		for _, e := range list {
			base := ""
			for _, b := range bases {
				if within(e, b) {
					base = b
					break
				}
			}
			if base == "" {
				return nil, permanent("server %s: its sandbox path %s is under none of berth's variables [%s]", id, e, RuleSandboxPathEscapes)
			}
			r, err := filepath.EvalSymlinks(e)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, permanent("server %s: berth cannot resolve its sandbox path %s: %v [%s]; check the permissions of %s and the directories above it", id, e, err, RuleSandboxPathUnresolved, e)
			}
			if !within(r, base) || (base == v.Home && r == v.Home) {
				return nil, permanent("server %s: its sandbox path %s is a symbolic link (or lies below one) that leads to %s, out of %s: berth never follows a link out of a variable's directory [%s]; remove the link %s", id, e, r, base, RuleSandboxPathEscapes, e)
			}
			out = append(out, r)
		}
		return out, nil
	}
	var out bundle.SandboxPaths
	if out.Read, err = resolve(paths.Read); err != nil {
		return bundle.SandboxPaths{}, err
	}
	if out.Write, err = resolve(paths.Write); err != nil {
		return bundle.SandboxPaths{}, err
	}
	return out, nil
}

// runtimePrefixes returns what of prog's installation the server may read
// and execute: the prefix of the program as found and, when it is a
// symlink, that of its target (npx → npm's own tree), each by
// bundle.ProgramPrefix (so the review and the policy agree; under the home
// directory the program's own directory only, unless in a runtime
// manager's install tree: rule sandbox-home-prefix). Pool's one addition:
// outside home, an npm tree's node_modules/.bin gives its node_modules
// (the packages its links point into). A prefix that would hold the
// workspace, the home directory or the whole file system narrows to the
// program's own directory; a program inside the workspace is refused (the
// workspace is never executable).
func runtimePrefixes(id, prog, ws, bdir, home string) ([]string, error) {
	dir, err := realDir(filepath.Dir(prog))
	if err != nil {
		return nil, permanent("server %s: berth cannot resolve its program %s: %v [%s]; check that it exists and that you may read the directories above it", id, prog, err, RuleSandboxPathUnresolved)
	}
	real, err := filepath.EvalSymlinks(prog)
	if err != nil {
		return nil, permanent("server %s: berth cannot resolve its program %s: %v [%s]; check that it exists and that you may read the directories above it", id, prog, err, RuleSandboxPathUnresolved)
	}
	var out []string
	for _, d := range []string{dir, filepath.Dir(real)} {
		if within(d, ws) {
			return nil, permanent("server %s: its program %s is inside the workspace %s, and the workspace is never executable; install the program outside the workspace (or ship it in the bundle) and point the manifest's command at it [%s]", id, real, ws, RuleSandboxWorkspaceExec)
		}
		if within(d, bdir) {
			continue // the bundle is executable already
		}
		pre := bundle.ProgramPrefix(filepath.Join(d, filepath.Base(prog)), home)
		if filepath.Base(d) == ".bin" && !within(d, home) {
			pre = filepath.Dir(d)
		}
		chosen := ""
		for _, c := range []string{pre, d} {
			if within(ws, c) || within(home, c) || c == filepath.Dir(c) {
				continue
			}
			chosen = c
			break
		}
		if chosen == "" {
			rule := RuleSandboxHomePrefix
			if within(ws, d) && !within(home, d) {
				rule = RuleSandboxWorkspaceExec
			}
			return nil, permanent("server %s: the directory of its program %s holds the workspace or the home directory, which berth never makes executable [%s]; install the program in a directory of its own", id, real, rule)
		}
		out = append(out, chosen)
	}
	return out, nil
}

// pathExec returns what of the server's PATH it may read and execute:
// bundle.PathDirs (the same list the review shows, rule
// sandbox-home-prefix applied), less any directory that is, holds or lies
// inside the workspace, which is never executable.
func pathExec(pathList, ws, home string) []string {
	var out []string
	for _, d := range bundle.PathDirs(pathList, home) {
		if !within(ws, d) && !within(d, ws) {
			out = append(out, d)
		}
	}
	return out
}

// inBase reports whether d is under the launcher's base set of programs.
func inBase(d string) bool { return bundle.InBaseSet(d) }

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
// or "#!/usr/bin/env -S NAME args" line names, found on pathList, or ""
// when prog is no such script (a binary, or "#!" with an absolute
// interpreter, which the base set or the program's prefix covers when it
// is a system one; any other absolute interpreter grants nothing). Any other env line (an option besides -S: -u, -C, -P,
// --chdir, ...; a NAME holding a "/" or "=") grants nothing extra: berth
// does not model env's options, and a word it misread would name any
// executable's directory.
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
	if !filepath.IsAbs(fields[0]) {
		return ""
	}
	if filepath.Base(fields[0]) != "env" {
		if c := filepath.Clean(fields[0]); inBase(filepath.Dir(c)) {
			return c
		}
		return ""
	}
	var name string
	switch {
	case len(fields) == 2:
		name = fields[1]
	case len(fields) >= 3 && fields[1] == "-S":
		name = fields[2]
	default:
		return ""
	}
	if name == "" || strings.HasPrefix(name, "-") || strings.ContainsAny(name, "=/\\") {
		return ""
	}
	if p, err := lookPath(name, pathList); err == nil {
		return p
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

// RuleSandboxStateReadable is the rule of a server whose readable or
// executable paths hold berth's state directory.
const RuleSandboxStateReadable = "sandbox-state-readable"

// RuleSandboxPathUnresolved is the rule of a path a server's policy needs
// (its workspace, staged bundle or fetched tree, own cache or tmp, a
// declared path, its program) that berth cannot resolve.
const RuleSandboxPathUnresolved = "sandbox-path-unresolved"

// RuleSandboxHomePrefix is the rule of a program whose directory holds the
// home directory (or is /): berth never makes home executable.
const RuleSandboxHomePrefix = "sandbox-home-prefix"

// RuleSandboxWorkspaceExec is the rule of a program in (or whose directory
// holds) the workspace, which is never executable.
const RuleSandboxWorkspaceExec = "sandbox-workspace-exec"

// RuleSandboxPathEscapes is the rule of a declared path whose symlinks
// lead out of its variable's directory.
const RuleSandboxPathEscapes = "sandbox-path-escapes"

// RuleSandboxWorkspaceHome is the rule of a workspace that is /, the home
// directory or an ancestor of it.
const RuleSandboxWorkspaceHome = "sandbox-workspace-home"

// RuleSandboxHomeUnknown is the rule of a start when berth knows no home
// directory: every "nothing under home" rule would fail open.
const RuleSandboxHomeUnknown = "sandbox-home-unknown"

// operatorHome is the operator's home directory, symlinks resolved: HOME
// when it is set and absolute, else the account's home from the user
// database (os/user), else "" (buildPolicy then refuses the start).
func operatorHome(lookupEnv func(string) (string, bool)) string {
	h, ok := lookupEnv("HOME")
	if !ok || !filepath.IsAbs(h) {
		h = ""
		if u, err := user.Current(); err == nil && filepath.IsAbs(u.HomeDir) {
			h = u.HomeDir
		}
	}
	if h == "" {
		return ""
	}
	r, err := filepath.EvalSymlinks(h)
	if err != nil {
		return filepath.Clean(h) // a home that does not exist still bounds the rules
	}
	return r
}

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
	home := operatorHome(s.p.lookupEnv)
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
	s.refused = ""
	s.mu.Unlock()
}

// setRefused records that berth refused to start s and why (the error
// names the rule), so Status never shows a previous start's confinement
// for a server that does not run.
func (s *server) setRefused(err error) {
	s.mu.Lock()
	s.enforcement = &sandbox.Enforcement{Unconfined: "refused: " + err.Error(), Mechanism: "none", Network: sandbox.NetworkOpen}
	s.refused = err.Error()
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
	// Refused is set when berth refused the last start: why, naming the
	// rule and the fix. The server does not run.
	Refused string `json:"refused,omitempty"`
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
	st := &SandboxStatus{Enforcement: *s.enforcement, Declared: decl != nil, NetworkDeclared: decl != nil && decl.Network != nil, Refused: s.refused}
	st.ProxyHosts = slices.Clone(st.ProxyHosts)
	st.NotEnforced = slices.Clone(st.NotEnforced)
	return st
}

// SandboxSettings returns the operator's sandbox settings as the pool
// applies them.
func (p *Pool) SandboxSettings() store.SandboxSettings { return p.sandboxSettings() }
