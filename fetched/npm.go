package fetched

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/runtimefetch"
	"github.com/berth-mcp/berth/sandbox"
)

// The runners of npm packages that berth stages: each runs the package's
// bin with node, as npx does. deno run npm:… (deno's own runtime) and
// bunx --bun (bun's) are not staged: they fetch when they start.
var npmStagedTools = map[string]bool{
	"npx": true, "npm exec": true, "npm x": true, "pnpm dlx": true, "pnpx": true,
	"yarn dlx": true, "bunx": true, "bun x": true,
}

// The files of $BERTH_HOME/fetchers that npm reads as its user and global
// configuration (pool/fetch.go makes the same).
const (
	NPMUserConfig   = "npmrc"
	NPMGlobalConfig = "npmrc-global"
)

// npmPackageJSON is the package.json berth writes into the directory it
// installs in: the one dependency, at its exact version. Its name keeps
// the lock (and so the tree's digest) independent of the directory's.
const npmPackageJSON = `{
  "name": "berth-fetched",
  "version": "0.0.0",
  "private": true,
  "dependencies": {
    %s: %s
  }
}
`

// npmInstallArgs are the arguments of the install (docs/sandbox.md):
// scripts off, no audit or funding requests, no devDependencies, a lock
// written (berth reads it), no workspaces, links installed as copies.
var npmInstallArgs = []string{"install", "--ignore-scripts", "--no-audit", "--no-fund", "--omit=dev",
	"--package-lock=true", "--workspaces=false", "--install-links=false", "--bin-links=true", "--omit-lockfile-registry-resolved=false", "--loglevel=warn"}

func npmStaged(f *runtimefetch.Fetch) error {
	if !npmStagedTools[f.Tool] {
		return fmt.Errorf("%w: %s runs npm packages with its own runtime", ErrNotStaged, f.Tool)
	}
	if slices.Contains(f.Options, "--bun") {
		return fmt.Errorf("%w: %s --bun runs the package with bun", ErrNotStaged, f.Tool)
	}
	return nil
}

// splitNPMSpec splits "name@1.2.3" (name possibly scoped).
func splitNPMSpec(spec string) (name, version string) {
	spec = strings.TrimPrefix(spec, "npm:")
	at := strings.LastIndex(spec, "@")
	if at <= 0 {
		return spec, ""
	}
	return spec[:at], spec[at+1:]
}

func resolveNPM(ctx context.Context, server string, f *runtimefetch.Fetch, dir string, o *Options) (*Lock, error) {
	if err := npmStaged(f); err != nil {
		return nil, err
	}
	if o == nil {
		o = &Options{}
	}
	name, version := splitNPMSpec(f.Package)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("server %s: resolving %s: %s", server, f.Package, fmt.Sprintf(format, args...))
	}
	env := baseEnv(o.Env)
	npm, err := lookPath("npm", env)
	if err != nil {
		return nil, fail("%v; install Node.js with npm (berth uses the operator's npm to resolve the package once, at trust), or put it on berth's PATH", err)
	}
	if o.Fetchers == "" {
		return nil, fail("no fetchers directory (Options.Fetchers) holds the operator's npm configuration")
	}
	for _, n := range []string{NPMUserConfig, NPMGlobalConfig} {
		if err := ensureConfig(filepath.Join(o.Fetchers, n)); err != nil {
			return nil, fail("%v", err)
		}
	}
	tmp, err := os.MkdirTemp("", "berth-npm-")
	if err != nil {
		return nil, fail("%v", err)
	}
	defer os.RemoveAll(tmp)
	op, err := o.operator()
	if err != nil {
		return nil, fail("%v", err)
	}
	userconfig, err := npmUserConfig(o.Fetchers, op, tmp)
	if err != nil {
		return nil, fail("%v", err)
	}
	env = setEnv(env, op.fetchEnv())
	env = setEnv(env, map[string]string{
		"npm_config_userconfig":      userconfig,
		"npm_config_globalconfig":    filepath.Join(o.Fetchers, NPMGlobalConfig),
		"npm_config_cache":           filepath.Join(tmp, "cache"),
		"npm_config_update_notifier": "false",
		"npm_config_fund":            "false",
		"npm_config_audit":           "false",
		"COREPACK_ENABLE_AUTO_PIN":   "0",
	})
	qn, _ := json.Marshal(name)
	qv, _ := json.Marshal(version)
	if err := os.WriteFile(filepath.Join(dir, "package.json"), fmt.Appendf(nil, npmPackageJSON, qn, qv), 0o644); err != nil {
		return nil, fail("%v", err)
	}
	out, err := runNPM(ctx, npm, dir, env, o, "config", "get", "registry")
	if err != nil {
		if npmProtected.Match(out) {
			return nil, fail("npm refuses to read the registry setting, since its URL carries a user or password (registry=https://user:pass@host/): take them out of the URL and give npm the credentials as //host/:_authToken=${NPM_TOKEN} (or //host/:_auth) in %s or %s", userFile(op), filepath.Join(o.Fetchers, NPMUserConfig))
		}
		return nil, fail("npm config get registry failed: %v: %s", err, gist(out))
	}
	registry := strings.TrimSpace(string(out))
	if !strings.HasSuffix(registry, "/") {
		registry += "/"
	}
	out, err = runNPM(ctx, npm, dir, env, o, npmInstallArgs...)
	if err != nil {
		return nil, fail("npm install failed: %v: %s; %s", err, gist(out), npmHint(out, registry, o.Fetchers, op))
	}
	lockData, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return nil, fail("npm wrote no package-lock.json: %v", err)
	}
	pkgs, err := ParseNPMLock(lockData, registry)
	if err != nil {
		return nil, fail("%v", err)
	}
	top := slices.IndexFunc(pkgs, func(p Package) bool { return p.Path == "node_modules/"+name })
	if top < 0 || pkgs[top].Version != strings.TrimPrefix(version, "v") {
		return nil, fail("npm did not install %s at %s", name, version)
	}
	var scripts, refused []string
	for _, p := range pkgs {
		if p.Scripts {
			if slices.Contains(o.AllowScripts, p.Name) {
				scripts = append(scripts, p.Name)
			} else {
				refused = append(refused, p.Name+"@"+p.Version)
			}
		}
	}
	if len(refused) > 0 {
		slices.Sort(refused)
		return nil, fail("%s %s an install script, which berth does not run unless you allow it by name: review the package, then `berth config set fetch-allow-scripts NAME[,NAME]` (the script then runs confined to the package's tree, with no network, at trust)",
			strings.Join(refused, ", "), plural(len(refused), "has", "have"))
	}
	if len(scripts) > 0 {
		slices.Sort(scripts)
		scripts = slices.Compact(scripts)
		if err := runScripts(ctx, npm, dir, env, o, scripts); err != nil {
			return nil, fail("%v", err)
		}
		// A script writes into the tree; it must not change what was
		// resolved.
		again, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
		if err != nil || !bytes.Equal(again, lockData) {
			return nil, fail("an install script of %s changed package-lock.json; berth refuses the tree", strings.Join(scripts, ", "))
		}
	}
	for i := range pkgs {
		pkgs[i].Scripts = pkgs[i].Scripts && slices.Contains(scripts, pkgs[i].Name)
	}
	prog, err := npmProgram(dir, name, f.Program)
	if err != nil {
		return nil, fail("%v", err)
	}
	l := &Lock{Server: server, Ecosystem: runtimefetch.EcosystemNPM, Package: f.Package, Registry: registry, Program: prog, Packages: pkgs}
	if l.Tree, l.Files, l.Size, err = Measure(ctx, dir); err != nil {
		return nil, fail("%v", err)
	}
	return l, nil
}

func checkNPM(dir string, l *Lock) error {
	data, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return fmt.Errorf("the staged tree of %s has no package-lock.json: %v", l.Server, err)
	}
	pkgs, err := ParseNPMLock(data, l.Registry)
	if err != nil {
		return fmt.Errorf("the staged tree of %s: %v", l.Server, err)
	}
	got := *l
	got.Packages = pkgs
	if got.Digest() != l.Digest() {
		return fmt.Errorf("the packages of the staged tree of %s (its package-lock.json) are not the recorded lock's %s; re-trust the plugin", l.Server, l.Digest())
	}
	if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(l.Program))); err != nil || !validProgram(l.Program) {
		return fmt.Errorf("the staged tree of %s has no program %s; re-trust the plugin", l.Server, l.Program)
	}
	return nil
}

// validProgram: a clean relative slash path that stays in the tree.
func validProgram(p string) bool {
	return p != "" && !strings.HasPrefix(p, "/") && path.Clean(p) == p && p != ".." && !strings.HasPrefix(p, "../")
}

func plural(n int, one, more string) string {
	if n == 1 {
		return one
	}
	return more
}

// npmProgram is the bin that npx runs of the package: the one named with
// --package (want), else its only bin, else the bin named like the package
// without its scope.
func npmProgram(dir, name, want string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(name), "package.json"))
	if err != nil {
		return "", err
	}
	var pj struct {
		Bin json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(data, &pj); err != nil {
		return "", fmt.Errorf("the package.json of %s: %v", name, err)
	}
	short := name[strings.LastIndex(name, "/")+1:]
	var bins []string
	var one string
	if json.Unmarshal(pj.Bin, &one) == nil && one != "" {
		bins = []string{short}
	} else {
		var m map[string]string
		if json.Unmarshal(pj.Bin, &m) == nil {
			for k := range m {
				bins = append(bins, k[strings.LastIndex(k, "/")+1:])
			}
		}
	}
	slices.Sort(bins)
	var bin string
	switch {
	case want != "":
		if !slices.Contains(bins, want) {
			return "", fmt.Errorf("%s has no program %q (its programs: %s)", name, want, listOr(bins))
		}
		bin = want
	case len(bins) == 1:
		bin = bins[0]
	case slices.Contains(bins, short):
		bin = short
	case len(bins) == 0:
		return "", fmt.Errorf("%s has no program (no \"bin\" in its package.json); npx could not run it either", name)
	default:
		return "", fmt.Errorf("%s has several programs (%s) and none is named %q; name one with npx --package=%s <program>", name, listOr(bins), short, name)
	}
	prog := "node_modules/.bin/" + bin
	if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(prog))); err != nil {
		return "", fmt.Errorf("npm did not link the program %s: %v", bin, err)
	}
	return prog, nil
}

func listOr(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// runScripts runs the install scripts of the named packages with npm
// rebuild, confined (sandbox.Wrap, required in full): the tree and a
// scratch directory writable, npm and node readable and executable, no
// network. npm reads a copy of berth's npm configuration stripped of every
// credential (scriptConfig), never $BERTH_HOME/fetchers itself: npm
// exports its configuration to the scripts it runs, and a script could
// read the file npm_config_userconfig names and copy it into the tree,
// which the server reads at every start. The environment is rebuilt from
// a short list (scriptEnv), so no token of the operator's reaches the
// script either.
func runScripts(ctx context.Context, npm, dir string, env []string, o *Options, names []string) error {
	scratch, err := os.MkdirTemp("", "berth-npm-scripts-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	conf, work := filepath.Join(scratch, "config"), filepath.Join(scratch, "work")
	for _, d := range []string{conf, filepath.Join(work, "cache"), filepath.Join(work, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	for _, n := range []string{NPMUserConfig, NPMGlobalConfig} {
		data, err := os.ReadFile(filepath.Join(o.Fetchers, n))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(conf, n), scriptConfig(data), 0o400); err != nil {
			return err
		}
	}
	env = scriptEnv(env, map[string]string{
		"npm_config_userconfig":   filepath.Join(conf, NPMUserConfig),
		"npm_config_globalconfig": filepath.Join(conf, NPMGlobalConfig),
		"npm_config_cache":        filepath.Join(work, "cache"),
		"TMPDIR":                  filepath.Join(work, "tmp"),
	})
	args := append([]string{"rebuild", "--ignore-scripts=false", "--foreground-scripts", "--loglevel=warn"}, names...)
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Dir = dir
	cmd.Env = env
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	pol, err := scriptPolicy([]string{npm, mustLook("node", env)}, dir, work, conf, scriptHome(env), filepath.Dir(o.Fetchers))
	if err != nil {
		return fmt.Errorf("the install scripts of %s: %v", strings.Join(names, ", "), err)
	}
	launch, err := sandbox.Wrap(cmd, pol, &sandbox.Options{Launcher: o.Launcher, Require: true})
	if err != nil {
		return fmt.Errorf("berth cannot confine the install scripts of %s on this host (%v), so it does not run them; remove them from fetch-allow-scripts, or use a host with Landlock and user namespaces", strings.Join(names, ", "), err)
	}
	if _, err := launch.Started(cmd.Start()); err != nil {
		return fmt.Errorf("starting the install scripts of %s: %v", strings.Join(names, ", "), err)
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("the install script of %s failed (confined: no network, only its tree writable): %v: %s", strings.Join(names, ", "), err, gist(buf.Bytes()))
	}
	return nil
}

// scriptEnvKeys are the variables of berth's environment an install
// script gets (scriptEnv); the rest (a NODE_AUTH_TOKEN, an NPM_TOKEN a
// configuration refers to as ${NPM_TOKEN}, any secret) is left out.
var scriptEnvKeys = []string{"PATH", "HOME", "LANG", "LC_ALL", "TERM", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR"}

// scriptEnv is env reduced to scriptEnvKeys, with set set.
func scriptEnv(env []string, set map[string]string) []string {
	var keep []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(scriptEnvKeys, k) {
			keep = append(keep, kv)
		}
	}
	return setEnv(keep, set)
}

// scriptConfig is an npm configuration (ini) without its credentials:
// every per-registry entry ("//host/path/:key", which is where npm keeps
// _authToken, _auth, username, _password, certfile, keyfile), every
// unscoped credential key (scriptConfigSecret), every value that expands
// a variable (${…}), and everything from the first [section] on (npm's ini
// nests it; berth does not try to read it). The registry, scoped
// registries and a CA (ca, cafile, strict-ssl) are kept: npm rebuild needs
// no registry, but a script may look at them.
func scriptConfig(data []byte) []byte {
	var out []string
	for line := range strings.SplitSeq(string(data), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || t[0] == ';' || t[0] == '#' {
			continue
		}
		if t[0] == '[' {
			break
		}
		k, v, _ := strings.Cut(t, "=")
		k = strings.Trim(strings.TrimSpace(k), `"'`)
		k = strings.TrimSuffix(k, "[]")
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "//") || strings.Contains(lk, ":_") || strings.Contains(v, "${") || slices.Contains(scriptConfigSecret, lk) {
			continue
		}
		if i := strings.LastIndex(lk, ":"); i >= 0 && slices.Contains(scriptConfigSecret, lk[i+1:]) {
			continue
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil
	}
	return []byte(strings.Join(out, "\n") + "\n")
}

// scriptConfigSecret are the npm configuration keys that hold or name a
// credential (lower case).
var scriptConfigSecret = []string{"_auth", "_authtoken", "_password", "password", "username", "email",
	"certfile", "keyfile", "cert", "key", "otp", "always-auth", "tokenhelper"}

func runNPM(ctx context.Context, npm, dir string, env []string, o *Options, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Dir = dir
	cmd.Env = env
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	if o.Output != nil {
		for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
			o.Output(line)
		}
	}
	return buf.Bytes(), err
}

// gist is the last lines of a package manager's output that say
// something, for an error message.
func gist(out []byte) string {
	var keep []string
	for line := range strings.SplitSeq(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.Contains(line, "A complete log of this run") || strings.HasSuffix(line, "-debug-0.log") {
			continue
		}
		keep = append(keep, line)
	}
	if len(keep) > 6 {
		keep = keep[len(keep)-6:]
	}
	if len(keep) == 0 {
		return "(no output)"
	}
	s := strings.Join(keep, " / ")
	if len(s) > 800 {
		s = s[:800] + "…"
	}
	return s
}

// baseEnv is env, or this process's PATH, HOME, LANG and TMPDIR and the
// operator's certificate settings (NODE_EXTRA_CA_CERTS, SSL_CERT_FILE,
// SSL_CERT_DIR: a CA of a proxy or a private registry), without any
// npm_config_* variable (npm reads them in any letter case).
func baseEnv(env []string) []string {
	if env == nil {
		for _, k := range []string{"PATH", "HOME", "LANG", "TMPDIR", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR"} {
			if v, ok := os.LookupEnv(k); ok {
				env = append(env, k+"="+v)
			}
		}
	}
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(strings.ToLower(k), "npm_config_") {
			out = append(out, kv)
		}
	}
	return out
}

// setEnv sets the variables of set in env, replacing any of the same name
// in any letter case.
func setEnv(env []string, set map[string]string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for s := range set {
			drop = drop || strings.EqualFold(s, k)
		}
		if !drop {
			out = append(out, kv)
		}
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.EqualFold(k, key) {
			return v
		}
	}
	return ""
}

// lookPath finds an executable named name on env's PATH.
func lookPath(name string, env []string) (string, error) {
	for _, d := range filepath.SplitList(envValue(env, "PATH")) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("no %s on PATH (%s)", name, envValue(env, "PATH"))
}

func mustLook(name string, env []string) string {
	p, _ := lookPath(name, env)
	return p
}

// ensureConfig creates an empty configuration file (0600) when it is
// missing, and refuses one that is not a regular file of this user that
// only this user may write.
func ensureConfig(name string) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		f.Close()
	} else if !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Lstat(name)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (a symlink?); remove it, and berth creates it again", name)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s may be written by other users (mode %04o); make it yours alone: chmod go-w %s", name, fi.Mode().Perm(), name)
	}
	return nil
}

// scriptHome is the operator's home directory for the install scripts'
// policy: HOME of env when absolute, else the account's, symlinks
// resolved; "" when none is known.
func scriptHome(env []string) string {
	h := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			h = v
		}
	}
	if !filepath.IsAbs(h) {
		h, _ = os.UserHomeDir()
	}
	if !filepath.IsAbs(h) {
		return ""
	}
	if r, err := filepath.EvalSymlinks(h); err == nil {
		return r
	}
	return filepath.Clean(h)
}

// scriptPolicy is the install scripts' policy: the tree and the scratch
// directory writable, the stripped configuration readable, no network,
// and each of progs (npm, node) readable and executable by its runtime
// prefix, as found and as its symlinks resolve, by bundle.ProgramPrefix:
// the same rule as a server's (sandbox-home-prefix: under home, the
// program's own directory or a runtime manager's install tree, never
// ~/.local or home itself). A prefix that holds home or is / narrows to
// the program's directory. Like pool's, it refuses a readable path that
// is or holds berth's state directory (sandbox-state-readable).
func scriptPolicy(progs []string, dir, work, conf, home, state string) (*sandbox.Policy, error) {
	pol := &sandbox.Policy{Write: []string{dir, work}, Read: []string{conf}, Network: sandbox.NetworkNone}
	for _, prog := range progs {
		if prog == "" {
			continue
		}
		cands := []string{prog}
		if real, err := filepath.EvalSymlinks(prog); err == nil && real != prog {
			cands = append(cands, real)
		}
		for _, c := range cands {
			pre := bundle.ProgramPrefix(c, home)
			if pre == filepath.Dir(pre) || (home != "" && holds(pre, home)) {
				pre = filepath.Dir(c)
			}
			if pre == filepath.Dir(pre) || (home != "" && holds(pre, home)) {
				return nil, fmt.Errorf("the directory of %s holds your home directory or is /, which berth never makes readable to an install script [sandbox-home-prefix]; install it in a directory of its own", c)
			}
			pol.Exec = append(pol.Exec, pre)
		}
	}
	if state != "" {
		st := state
		if r, err := filepath.EvalSymlinks(state); err == nil {
			st = r
		}
		for _, r := range pol.Exec {
			if holds(r, st) {
				return nil, fmt.Errorf("berth's state directory %s is inside %s, which the install script would read: it could read berth's records, configuration and sign-in tokens [sandbox-state-readable]; move BERTH_HOME out of it, or install npm and node elsewhere", st, r)
			}
		}
	}
	slices.Sort(pol.Exec)
	pol.Exec = slices.Compact(pol.Exec)
	return pol, nil
}

// holds reports whether dir is path or one of its ancestors.
func holds(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
