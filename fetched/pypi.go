package fetched

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/berth-mcp/berth/bundle/runtimefetch"
)

// A PyPI-fetched server (uvx, uv tool run, pipx run) is resolved with the
// operator's python and its pip, never with uv or pipx, whatever the form:
//
//  1. pip install --dry-run --report resolves the pinned requirement and
//     its whole dependency tree against the one index the operator
//     configured for berth, wheels only (an sdist would run its build
//     script), for the python that will run the server;
//  2. pip download --no-deps fetches exactly the files of that report,
//     by URL, and berth takes each file's sha256 and checks it against the
//     index's (the #sha256= fragment); a mismatch is refused;
//  3. pip install --no-index --no-deps --require-hashes --target <dir>
//     installs those files offline, each with its hash.
//
// pip never reads the workspace's or the user's configuration: it runs in
// a directory of its own, with PIP_CONFIG_FILE pointing at
// $BERTH_HOME/fetchers/pip.conf (or /dev/null), every other PIP_* and
// PYTHON* variable of berth's environment removed, no user site and no
// input. The server then runs bin/<script> of the tree, whose first line
// names the python that installed it, with PYTHONPATH set to the tree
// (RunEnv): no pip, no index, no network at start.

// pypiRunEnv is the environment a server of a PyPI tree runs with, on top
// of its own: the tree on Python's path, no user site, no bytecode written
// (the tree is read-only), not the working directory on the path.
func pypiRunEnv(tree string) map[string]string {
	return map[string]string{
		"PYTHONPATH":              tree,
		"PYTHONNOUSERSITE":        "1",
		"PYTHONDONTWRITEBYTECODE": "1",
		"PYTHONSAFEPATH":          "1",
	}
}

// pythonKept are the PYTHON* variables a server of a PyPI tree keeps
// (they change its output, not what code runs).
var pythonKept = map[string]bool{"PYTHONUNBUFFERED": true, "PYTHONIOENCODING": true, "PYTHONUTF8": true}

// RunEnv returns env (NAME=value entries) as a server of the lock's tree,
// staged at tree, runs with it. For a PyPI tree: with the variables that
// put the tree on Python's path (PYTHONPATH, PYTHONNOUSERSITE,
// PYTHONDONTWRITEBYTECODE, PYTHONSAFEPATH) and without any other PYTHON*
// variable (PYTHONHOME, PYTHONSTARTUP, PYTHONINSPECT, ...) but
// PYTHONUNBUFFERED, PYTHONIOENCODING and PYTHONUTF8. For an npm tree, env
// unchanged.
func RunEnv(l *Lock, tree string, env []string) []string {
	if l.Ecosystem != runtimefetch.EcosystemPyPI {
		return env
	}
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		k = strings.ToUpper(k)
		return strings.HasPrefix(k, "PYTHON") && !pythonKept[k]
	})
	set := pypiRunEnv(tree)
	for _, k := range slices.Sorted(maps.Keys(set)) {
		out = append(out, k+"="+set[k])
	}
	return out
}

// Interpreter is the python a staged PyPI tree's program runs with: the
// absolute path on the first line (#!) of <tree>/<Program>, as pip wrote
// it at trust. Its prefix is the server's runtime prefix (read and
// execute). An error says the program is not a script berth can read.
func Interpreter(l *Lock, tree string) (string, error) {
	if l.Ecosystem != runtimefetch.EcosystemPyPI {
		return "", fmt.Errorf("the tree of %s is not a PyPI tree", l.Package)
	}
	f, err := os.Open(filepath.Join(tree, filepath.FromSlash(l.Program)))
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	py, ok := parseShebang(line)
	if !ok {
		return "", fmt.Errorf("%s does not start with #!<absolute path of a python>", l.Program)
	}
	return py, nil
}

// parseShebang reads "#!/abs/python\n" (no arguments, as pip writes it
// for a path without spaces).
func parseShebang(line string) (string, bool) {
	line = strings.TrimRight(line, "\r\n")
	py, ok := strings.CutPrefix(line, "#!")
	if !ok || !filepath.IsAbs(py) || strings.ContainsAny(py, " \t\r\n\x00") || !strings.Contains(path.Base(py), "python") {
		return "", false
	}
	return py, true
}

// pypiIndex is the index a form resolves against: uv.toml's for uvx and
// uv tool run, pip.conf's for pipx run, PyPI when the file names none.
func pypiIndex(fetchers string, tool string) (string, error) {
	return pypiIndexOr(fetchers, tool, nil)
}

// pypiIndexOr is pypiIndex with the operator's own index (op's
// index-url) between berth's file and PyPI.
func pypiIndexOr(fetchers string, tool string, op *UserSettings) (string, error) {
	read := func(name string) string {
		if fetchers == "" {
			return ""
		}
		b, err := os.ReadFile(filepath.Join(fetchers, name))
		if err != nil {
			return ""
		}
		return string(b)
	}
	var c runtimefetch.FetchersConfig
	uv := strings.HasPrefix(tool, "uv")
	if uv {
		c.UVToml = read("uv.toml")
	} else {
		c.PipConf = read("pip.conf")
	}
	r, err := c.Registries()
	if err != nil {
		return "", err
	}
	index := r.PipIndex
	if uv {
		index = r.UVIndex
	}
	where := fetchers
	if index == "" && op.Get("index-url") != "" {
		index, where = op.Get("index-url"), op.File
	}
	if index == "" {
		return "https://pypi.org/simple/", nil
	}
	u, err := url.Parse(index)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		which := "pip.conf's index-url"
		if uv {
			which = "uv.toml's index"
		}
		return "", fmt.Errorf("%s %q is not an http(s) URL; fix it in %s", which, RedactURL(index), where)
	}
	return index, nil
}

// splitPyPISpec splits "name[extras]==version" (or "@version", uvx's
// spelling) into the requirement pip is given and the project name.
func splitPyPISpec(spec string) (req, name, version string, err error) {
	n, v, ok := strings.Cut(spec, "==")
	if !ok {
		n, v, ok = strings.Cut(spec, "@")
	}
	if !ok || !runtimefetch.IsExactPyPIVersion(v) || !pyReqName.MatchString(n) {
		return "", "", "", fmt.Errorf("%q is not <package>==<exact version>", spec)
	}
	name, _, _ = strings.Cut(n, "[")
	return n + "==" + v, name, v, nil
}

var (
	pyNorm    = regexp.MustCompile(`[-_.]+`)
	pyReqName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\[[A-Za-z0-9._,-]+\])?$`)
	pyProject = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)
	// pyLooseVersion is a version as an index may spell one (PEP 440
	// with its alternative spellings), which berth only records.
	pyLooseVersion = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.+!_-]{0,127}$`)
	sha256Hex      = regexp.MustCompile(`^[0-9a-f]{64}$`)
	wheelFile      = regexp.MustCompile(`^[A-Za-z0-9_.]+-[A-Za-z0-9_.!+]+(-[0-9][A-Za-z0-9_.]*)?-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+\.whl$`)
)

func normPy(name string) string {
	return strings.ToLower(pyNorm.ReplaceAllString(name, "-"))
}

// pythonFor finds the python that resolves and then runs f: python3 on
// PATH, or python3.X for uvx --python 3.X (which must be that version).
func pythonFor(ctx context.Context, f *runtimefetch.Fetch, env []string) (string, error) {
	want := ""
	opts := f.Options
	for i, o := range opts {
		switch {
		case o == "--python" || o == "-p":
			if i+1 < len(opts) {
				want = opts[i+1]
			}
		case strings.HasPrefix(o, "--python="):
			want = strings.TrimPrefix(o, "--python=")
		}
	}
	name := "python3"
	if want != "" {
		parts := strings.Split(want, ".")
		if len(parts) >= 2 {
			name = "python" + parts[0] + "." + parts[1]
		}
	}
	// Every python<name> on PATH in turn (absolute entries only): a
	// pyenv shim of a version that is not selected fails its --version,
	// and a later entry may hold the asked version.
	var found []string
	for _, d := range filepath.SplitList(envValue(env, "PATH")) {
		if p, err := lookPath(name, []string{"PATH=" + d}); err == nil && !slices.Contains(found, p) {
			found = append(found, p)
		}
	}
	if len(found) == 0 {
		fix := "install Python 3 (with its pip module) on berth's PATH"
		if want != "" {
			fix = fmt.Sprintf("the form asks for Python %s (%s --python %s): install %s with its pip module on berth's PATH", want, f.Tool, want, name)
		}
		return "", fmt.Errorf("berth resolves a PyPI package with %s, which is not on PATH: %s", name, fix)
	}
	if want == "" {
		return found[0], nil
	}
	var firstErr error
	for _, py := range found {
		cmd := exec.CommandContext(ctx, py, "--version")
		cmd.Env = env
		out, err := cmd.Output()
		got := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "Python "))
		if err == nil && (got == want || strings.HasPrefix(got, want+".")) {
			return py, nil
		}
		if firstErr == nil {
			firstErr = fmt.Errorf("%s --python %s: %s on PATH is Python %q, not %s; install Python %s as %s on berth's PATH", f.Tool, want, py, got, want, want, name)
		}
	}
	return "", firstErr
}

// pipEnv is the environment pip runs with: o.Env without the variables
// that configure pip or python, with pip's configuration file the
// operator's file for berth (or none), no input, no version check and no
// user site.
func pipEnv(o *Options) []string {
	base := o.Env
	if base == nil {
		base = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8"}
		if t := os.Getenv("TMPDIR"); t != "" {
			base = append(base, "TMPDIR="+t)
		}
	}
	env := slices.DeleteFunc(slices.Clone(base), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		k = strings.ToUpper(k)
		return strings.HasPrefix(k, "PIP_") || strings.HasPrefix(k, "PYTHON") || strings.HasPrefix(k, "UV_") ||
			k == "VIRTUAL_ENV" || k == "CONDA_PREFIX" || k == "__PYVENV_LAUNCHER__"
	})
	conf := os.DevNull
	if o.Fetchers != "" {
		if fi, err := os.Stat(filepath.Join(o.Fetchers, "pip.conf")); err == nil && fi.Mode().IsRegular() {
			conf = filepath.Join(o.Fetchers, "pip.conf")
		}
	}
	return append(env,
		"PIP_CONFIG_FILE="+conf,
		"PIP_NO_INPUT=1",
		"PIP_DISABLE_PIP_VERSION_CHECK=1",
		"PYTHONNOUSERSITE=1",
		"PYTHONDONTWRITEBYTECODE=1",
	)
}

// pipRun runs python -m pip args in dir and returns pip's output when it
// fails.
func pipRun(ctx context.Context, python, dir string, env []string, args ...string) error {
	cmd := exec.CommandContext(ctx, python, append([]string{"-s", "-m", "pip"}, args...)...)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return &pipError{args: args, err: err, out: out.String()}
	}
	return nil
}

type pipError struct {
	args []string
	err  error
	out  string
}

func (e *pipError) Error() string {
	return fmt.Sprintf("pip %s failed (%v):\n%s", e.args[0], e.err, pipGist(e.out))
}

// pipGist is the last lines of pip's output, which say what failed.
func pipGist(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) > 12 {
		lines = lines[len(lines)-12:]
	}
	for i, l := range lines {
		lines[i] = "  " + strings.Map(func(r rune) rune {
			if r < 0x20 && r != '\t' || r == 0x7f {
				return '?'
			}
			return r
		}, l)
	}
	return strings.Join(lines, "\n")
}

// pipTLSFailure and pipAuthFailure are pip's output when the index's
// certificate is not trusted, or it wants credentials.
var (
	pipTLSFailure  = regexp.MustCompile(`CERTIFICATE_VERIFY_FAILED|SSLCertVerificationError|certificate verify failed`)
	pipAuthFailure = regexp.MustCompile(`\b401\b.*(Unauthorized|Client Error)|\b403\b.*(Forbidden|Client Error)|User for `)
)

// pipUserEnv are PIP_CERT and PIP_PROXY for the operator's cert and
// proxy (op) that berth's pip.conf does not set (in the environment, not
// on pip's command line, which other local users can read).
func pipUserEnv(fetchers string, op *UserSettings) map[string]string {
	var own []Setting
	if fetchers != "" {
		if b, err := os.ReadFile(filepath.Join(fetchers, "pip.conf")); err == nil {
			own, _ = pipConfKeys(string(b))
		}
	}
	set := map[string]string{}
	for _, k := range []string{"cert", "proxy"} {
		if v := op.Get(k); v != "" && !slices.ContainsFunc(own, func(s Setting) bool { return s.Key == k }) {
			set["PIP_"+strings.ToUpper(k)] = v
		}
	}
	return set
}

// usingPip is " (berth used the settings …)" for an error, "" for none.
func usingPip(op *UserSettings) string {
	if s := op.Summary(); s != "" {
		return " (berth used the settings " + s + ")"
	}
	return ""
}

// unreachable is pip's output when it could not connect to the index.
var unreachable = regexp.MustCompile(`NewConnectionError|Failed to establish a new connection|Could not fetch URL|Max retries exceeded|ProxyError|SSLError`)

// indexFile is the file of $BERTH_HOME/fetchers that names the index of a
// form.
func indexFile(tool string) string {
	if strings.HasPrefix(tool, "uv") {
		return "uv.toml"
	}
	return "pip.conf"
}

var noWheel = regexp.MustCompile(`No matching distribution found for ([A-Za-z0-9._-]+)`)

// resolvePyPI resolves f (a PyPI fetch) into dir with the operator's
// python and pip.
func resolvePyPI(ctx context.Context, server string, f *runtimefetch.Fetch, dir string, o *Options) (*Lock, error) {
	if o == nil {
		o = &Options{}
	}
	req, name, version, err := splitPyPISpec(f.Package)
	if err != nil {
		return nil, err
	}
	op, err := o.operator()
	if err != nil {
		return nil, err
	}
	user := op.Pip
	if strings.HasPrefix(f.Tool, "uv") {
		user = op.UV
	}
	index, err := pypiIndexOr(o.Fetchers, f.Tool, user)
	if err != nil {
		return nil, err
	}
	env := setEnv(setEnv(pipEnv(o), op.fetchEnv()), pipUserEnv(o.Fetchers, user))
	python, err := pythonFor(ctx, f, env)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(envValue(env, "TMPDIR"), "berth-pypi-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	// Not --isolated, which would drop the operator's pip.conf for berth
	// (a CA, a proxy): pipEnv already keeps every other configuration out.
	common := []string{"--no-cache-dir", "--disable-pip-version-check", "--no-input"}
	// The index goes in the environment, not on pip's command line, which
	// other local users can read: its URL may hold a credential.
	env = setEnv(env, map[string]string{"PIP_INDEX_URL": index})

	// 1. the tree, wheels only, for this python
	report := filepath.Join(work, "report.json")
	args := append([]string{"install", "--dry-run", "--ignore-installed", "--only-binary=:all:",
		"--report", report, "--quiet"}, common...)
	if err := pipRun(ctx, python, work, env, append(args, req)...); err != nil {
		var pe *pipError
		if errors.As(err, &pe) {
			if strings.Contains(pe.out, "DO NOT MATCH THE HASHES") {
				return nil, fmt.Errorf("a file of %s's tree on %s does not have the sha256 that the index gives for it (its #sha256= fragment); berth refuses a file whose hash is not the index's (a tampered mirror or index); tell the index's operator\n%s", req, RedactURL(index), pipGist(pe.out))
			}
			if pipTLSFailure.MatchString(pe.out) {
				return nil, fmt.Errorf("the index %s presented a TLS certificate pip does not trust (CERTIFICATE_VERIFY_FAILED: a TLS-inspecting proxy or a private index): give berth its CA with cert = /path/to/ca.pem under [global] of your pip.conf, PIP_CERT=/path/to/ca.pem (or SSL_CERT_FILE for uv's forms) in berth's environment, or cert in %s; berth never passes trusted-host%s\n%s", RedactURL(index), filepath.Join(o.Fetchers, "pip.conf"), usingPip(user), pipGist(pe.out))
			}
			if pipAuthFailure.MatchString(pe.out) {
				return nil, fmt.Errorf("the index %s refused the request (401/403): put the credentials in the index URL of %s (https://user:token@host/simple), or PIP_INDEX_URL / UV_DEFAULT_INDEX in berth's environment%s\n%s", RedactURL(index), filepath.Join(o.Fetchers, indexFile(f.Tool)), usingPip(user), pipGist(pe.out))
			}
			if unreachable.MatchString(pe.out) {
				return nil, fmt.Errorf("pip could not reach the index %s to resolve %s (a name that did not resolve, a refused connection, a proxy): check the network, set proxy = http://proxy:port under [global] of your pip.conf (or HTTPS_PROXY, PIP_PROXY in berth's environment), or name a mirror in %s%s\n%s", RedactURL(index), req, filepath.Join(o.Fetchers, indexFile(f.Tool)), usingPip(user), pipGist(pe.out))
			}
			if m := noWheel.FindStringSubmatch(pe.out); m != nil {
				return nil, fmt.Errorf("pip found no wheel of %s that fits %s on %s: berth installs wheels only, since an sdist runs its build script at install; ask the package's maintainers for a wheel, or ship the server in the bundle (or, if the index could not be reached, check the network or name a mirror in %s)\n%s", m[1], python, RedactURL(index), filepath.Join(o.Fetchers, indexFile(f.Tool)), pipGist(pe.out))
			}
		}
		return nil, fmt.Errorf("resolving %s on %s: %w", req, RedactURL(index), err)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		return nil, fmt.Errorf("pip wrote no report: %w", err)
	}
	items, err := parsePipReport(data)
	if err != nil {
		return nil, err
	}
	if err := noDowngrade(index, items); err != nil {
		return nil, err
	}
	main := slices.IndexFunc(items, func(it pipItem) bool { return normPy(it.Name) == normPy(name) })
	if main < 0 || items[main].Version != version {
		return nil, fmt.Errorf("pip resolved %s without %s==%s itself", req, name, version)
	}

	// 2. exactly those files, hashed here
	dl := filepath.Join(work, "dl")
	if err := os.Mkdir(dl, 0o700); err != nil {
		return nil, err
	}
	var reqs strings.Builder
	for _, it := range items {
		fmt.Fprintf(&reqs, "%s @ %s\n", it.Name, it.URL)
	}
	dlReq := filepath.Join(work, "download.txt")
	if err := os.WriteFile(dlReq, []byte(reqs.String()), 0o600); err != nil {
		return nil, err
	}
	args = append([]string{"download", "--no-deps", "--only-binary=:all:", "--dest", dl, "--quiet", "-r", dlReq}, common...)
	if err := pipRun(ctx, python, work, env, args...); err != nil {
		return nil, fmt.Errorf("downloading the %d wheels of %s from %s: %w", len(items), req, RedactURL(index), err)
	}
	lock := &Lock{Server: server, Ecosystem: runtimefetch.EcosystemPyPI, Package: f.Package, Registry: RedactURL(index)}
	if lock.Packages, err = hashDownloads(dl, index, items); err != nil {
		return nil, err
	}
	var install strings.Builder
	for _, p := range lock.Packages {
		fmt.Fprintf(&install, "%s==%s --hash=sha256:%s\n", p.Name, p.Version, strings.TrimPrefix(p.Integrity, "sha256:"))
	}

	// 3. offline, by hash
	instReq := filepath.Join(work, "install.txt")
	if err := os.WriteFile(instReq, []byte(install.String()), 0o600); err != nil {
		return nil, err
	}
	args = append([]string{"install", "--no-index", "--find-links", dl, "--no-deps", "--require-hashes", "--only-binary=:all:",
		"--no-compile", "--target", dir, "--quiet", "-r", instReq}, common...)
	if err := pipRun(ctx, python, work, env, args...); err != nil {
		return nil, fmt.Errorf("installing the %d wheels of %s: %w", len(items), req, err)
	}
	SortPackages(lock.Packages)
	if lock.Program, err = pypiProgram(dir, name, version, f); err != nil {
		return nil, err
	}
	if err := checkPyPI(dir, lock); err != nil {
		return nil, fmt.Errorf("pip installed %s into a tree berth cannot tie to what it resolved: %w", req, err)
	}
	// The server runs with the python on its program's first line
	// (Interpreter), whose prefix it may read and execute: it must be the
	// python that installed the tree, never one a wheel chose by shipping
	// its own bin/<script> (a .data/scripts file, which pip copies as it is
	// when it does not generate the console script itself).
	if err := samePython(ctx, python, env, lock, dir); err != nil {
		return nil, fmt.Errorf("%s: %w", req, err)
	}
	if lock.Tree, lock.Files, lock.Size, err = Measure(ctx, dir); err != nil {
		return nil, fmt.Errorf("the tree pip installed for %s: %w", req, err)
	}
	return lock, nil
}

// samePython refuses a tree whose program does not start with
// #!<python's sys.executable>, the line pip writes into the console
// scripts it generates.
func samePython(ctx context.Context, python string, env []string, l *Lock, dir string) error {
	cmd := exec.CommandContext(ctx, python, "-s", "-c", "import sys; print(sys.executable)")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("asking %s for its executable: %v", python, err)
	}
	exe := strings.TrimSpace(string(out))
	py, err := Interpreter(l, dir)
	if err != nil {
		return fmt.Errorf("the program pip installed: %v; berth runs a PyPI server by the console script pip writes", err)
	}
	if py != exe {
		return fmt.Errorf("the program %s starts with #!%s, not with the python that installed it (%s): the wheel ships its own %s (a .data/scripts file, or a console_scripts entry pip did not read) and so would choose the python the server runs with; berth refuses it", l.Program, printable(py, 100), exe, l.Program)
	}
	return nil
}

// noDowngrade refuses a file of an https index whose URL is plain http.
func noDowngrade(index string, items []pipItem) error {
	if !strings.HasPrefix(index, "https:") {
		return nil
	}
	for _, it := range items {
		if !strings.HasPrefix(it.URL, "https:") {
			return fmt.Errorf("%s %s: the index %s gives the file's URL %s without TLS; berth refuses to download a file of an https index over plain http", it.Name, it.Version, RedactURL(index), RedactURL(it.URL))
		}
	}
	return nil
}

// hashDownloads takes the sha256 of each file that pip downloaded into dl
// and refuses one whose hash is not the index's; the packages it returns
// have that hash as their integrity. dl must hold those files and no
// other.
func hashDownloads(dl, index string, items []pipItem) ([]Package, error) {
	var out []Package
	for _, it := range items {
		sum, err := fileSHA256(filepath.Join(dl, it.File))
		if err != nil {
			return nil, fmt.Errorf("pip did not download %s (%s): %w", it.File, RedactURL(it.URL), err)
		}
		if it.SHA256 != "" && it.SHA256 != sum {
			return nil, fmt.Errorf("%s %s: the file %s has sha256 %s but the index %s says sha256 %s; berth refuses a file whose hash is not the index's (a tampered mirror or index); tell the index's operator", it.Name, it.Version, it.File, sum, RedactURL(index), it.SHA256)
		}
		out = append(out, Package{Name: it.Name, Version: it.Version, Resolved: RedactURL(it.URL), Integrity: "sha256:" + sum})
	}
	if ents, err := os.ReadDir(dl); err != nil || len(ents) != len(items) {
		return nil, fmt.Errorf("pip downloaded %d files for the %d wheels", len(ents), len(items))
	}
	return out, nil
}

func fileSHA256(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// RedactURL drops a URL's user information (an index token, a
// registry's user:password) and fragment, for messages and the lock:
// every registry or index URL berth prints goes through it.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(not a URL)"
	}
	u.User = nil
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// pipItem is one package of pip's installation report.
type pipItem struct {
	Name, Version string
	// URL is the file's URL, File its base name (a wheel).
	URL, File string
	// SHA256 is the index's hash of the file ("" when it gives none).
	SHA256 string
}

// parsePipReport reads pip's installation report (pip install --dry-run
// --report, version 1): every package, from the index, as a wheel. Its
// names, versions, URLs and hashes come from the index: untrusted input.
func parsePipReport(data []byte) ([]pipItem, error) {
	var r struct {
		Version string `json:"version"`
		Install []struct {
			DownloadInfo struct {
				URL         string `json:"url"`
				ArchiveInfo *struct {
					Hash   string            `json:"hash"`
					Hashes map[string]string `json:"hashes"`
				} `json:"archive_info"`
				DirInfo json.RawMessage `json:"dir_info"`
				VCSInfo json.RawMessage `json:"vcs_info"`
			} `json:"download_info"`
			IsDirect bool `json:"is_direct"`
			Metadata struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"metadata"`
		} `json:"install"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("pip's report is not JSON berth reads: %v", err)
	}
	if r.Version != "1" && r.Version != "0" {
		return nil, fmt.Errorf("pip's report has version %q; berth reads version 1", printable(r.Version, 100))
	}
	if len(r.Install) == 0 || len(r.Install) > 5000 {
		return nil, fmt.Errorf("pip's report lists %d packages", len(r.Install))
	}
	var out []pipItem
	seen := map[string]bool{}
	for _, it := range r.Install {
		name, ver, raw := it.Metadata.Name, it.Metadata.Version, it.DownloadInfo.URL
		if !pyProject.MatchString(name) || len(name) > 200 {
			return nil, fmt.Errorf("pip's report names a package %q, which is not a package name", printable(name, 100))
		}
		if !pyLooseVersion.MatchString(ver) {
			return nil, fmt.Errorf("%s: pip's report gives the version %q, which is not a version", name, printable(ver, 100))
		}
		if seen[normPy(name)] {
			return nil, fmt.Errorf("pip's report lists %s twice", name)
		}
		seen[normPy(name)] = true
		if it.IsDirect || it.DownloadInfo.DirInfo != nil || it.DownloadInfo.VCSInfo != nil || it.DownloadInfo.ArchiveInfo == nil {
			return nil, fmt.Errorf("%s %s is not a file of the index (a dependency named by URL, path or VCS: %q); berth installs only the index's wheels", name, ver, printable(RedactURL(raw), 100))
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Opaque != "" {
			return nil, fmt.Errorf("%s %s: pip's report gives the URL %q, which is not an http(s) URL", name, ver, printable(RedactURL(raw), 100))
		}
		file := path.Base(u.Path)
		if !wheelFile.MatchString(file) || normPy(strings.SplitN(file, "-", 2)[0]) != normPy(name) {
			return nil, fmt.Errorf("%s %s: the file %q is not a wheel of %s; berth installs wheels only, since an sdist runs its build script at install", name, ver, printable(file, 100), name)
		}
		sum := ""
		ai := it.DownloadInfo.ArchiveInfo
		if h, ok := ai.Hashes["sha256"]; ok {
			sum = h
		} else if h, ok := strings.CutPrefix(ai.Hash, "sha256="); ok {
			sum = h
		}
		if sum != "" && !sha256Hex.MatchString(sum) {
			return nil, fmt.Errorf("%s %s: the index gives the sha256 %q, which is not 64 lower-case hex digits", name, ver, printable(sum, 100))
		}
		u.Fragment, u.RawFragment = "", ""
		out = append(out, pipItem{Name: name, Version: ver, URL: u.String(), File: file, SHA256: sum})
	}
	return out, nil
}

// printable is s for a message: control characters shown as "?", cut
// to n bytes at a character boundary (marked "…").
func printable(s string, n int) string {
	if len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

// pypiProgram is the console script the server runs: the one f names
// (uvx --from, pipx run --spec), or else the one named like the package,
// as uvx and pipx pick it, from entry_points.txt of the package's
// dist-info in dir. The script must be in dir/bin, where pip wrote it.
func pypiProgram(dir, name, version string, f *runtimefetch.Fetch) (string, error) {
	want := f.Program
	infos, err := filepath.Glob(filepath.Join(dir, "*.dist-info"))
	if err != nil {
		return "", err
	}
	var scripts map[string]string
	for _, d := range infos {
		base := strings.TrimSuffix(filepath.Base(d), ".dist-info")
		i := strings.LastIndex(base, "-")
		if i <= 0 || normPy(base[:i]) != normPy(name) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(d, "entry_points.txt"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		if scripts, err = parseConsoleScripts(data); err != nil {
			return "", fmt.Errorf("%s %s: %w", name, version, err)
		}
		break
	}
	if want == "" {
		want = name
		if _, ok := scripts[want]; !ok {
			for s := range scripts {
				if normPy(s) == normPy(name) {
					want = s
				}
			}
		}
	}
	if _, ok := scripts[want]; !ok {
		names := slices.Sorted(maps.Keys(scripts))
		if len(names) == 0 {
			return "", fmt.Errorf("%s %s has no console script (entry_points.txt [console_scripts]) to run; berth runs a PyPI server by its console script", name, version)
		}
		return "", fmt.Errorf("%s %s has no console script %q; it has %s: name one with %s", name, version, want, strings.Join(names, ", "), fromForm(f))
	}
	prog := "bin/" + want
	if fi, err := os.Lstat(filepath.Join(dir, "bin", want)); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s %s: pip did not write the console script %s", name, version, prog)
	}
	return prog, nil
}

func fromForm(f *runtimefetch.Fetch) string {
	if strings.HasPrefix(f.Tool, "pipx") {
		return fmt.Sprintf("pipx run --spec %s <script>", f.Package)
	}
	return fmt.Sprintf("%s --from %s <script>", f.Tool, f.Package)
}

// consoleScript is a script name as pip writes it into bin/.
var consoleScript = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

// parseConsoleScripts reads the [console_scripts] section of a
// dist-info's entry_points.txt (an INI file of the wheel: untrusted
// input): script name → "module:function". A name that could not be a
// file name of bin/ is an error.
func parseConsoleScripts(data []byte) (map[string]string, error) {
	out := map[string]string{}
	if len(data) > 1<<20 {
		return nil, fmt.Errorf("entry_points.txt is larger than 1 MiB")
	}
	section := ""
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = strings.TrimSpace(line[1 : len(line)-1])
			continue
		}
		if section != "console_scripts" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("entry_points.txt: %q is not name = module:function", printable(line, 100))
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !consoleScript.MatchString(k) || k == "." || k == ".." {
			return nil, fmt.Errorf("entry_points.txt: the console script %q is not a plain file name", printable(k, 100))
		}
		out[k] = v
	}
	return out, nil
}

// checkPyPI ties a staged PyPI tree to its lock, offline: the tree's
// dist-info directories are exactly the lock's packages (each name and
// version, from its METADATA), and its program is a console script pip
// wrote.
func checkPyPI(dir string, l *Lock) error {
	infos, err := filepath.Glob(filepath.Join(dir, "*.dist-info"))
	if err != nil {
		return err
	}
	got := map[string]string{}
	for _, d := range infos {
		data, err := os.ReadFile(filepath.Join(d, "METADATA"))
		if err != nil {
			return fmt.Errorf("the tree's %s has no METADATA: %w", filepath.Base(d), err)
		}
		name, version, err := parseMetadata(data)
		if err != nil {
			return fmt.Errorf("the tree's %s: %w", filepath.Base(d), err)
		}
		if _, dup := got[normPy(name)]; dup {
			return fmt.Errorf("the tree holds %s twice", name)
		}
		got[normPy(name)] = version
	}
	want := map[string]string{}
	for _, p := range l.Packages {
		want[normPy(p.Name)] = p.Version
	}
	var diffs []string
	for _, n := range slices.Sorted(maps.Keys(want)) {
		if v, ok := got[n]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s %s is missing", n, want[n]))
		} else if v != want[n] {
			diffs = append(diffs, fmt.Sprintf("%s is %s, not %s", n, v, want[n]))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[n]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s %s is not in the lock", n, got[n]))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("the tree's packages are not the lock's: %s", strings.Join(diffs, "; "))
	}
	script, ok := strings.CutPrefix(l.Program, "bin/")
	if !ok || !consoleScript.MatchString(script) {
		return fmt.Errorf("the lock's program %q is not bin/<console script>", l.Program)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "bin", script)); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("the tree has no program %s", l.Program)
	}
	return nil
}

// parseMetadata reads Name and Version from the header of a dist-info's
// METADATA (the core metadata, an email-style header written by the
// wheel's builder: untrusted input).
func parseMetadata(data []byte) (name, version string, err error) {
	if len(data) > 4<<20 {
		return "", "", errors.New("METADATA is larger than 4 MiB")
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" {
			break // the body (the description) follows
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue // a continuation line
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "name":
			if name == "" {
				name = strings.TrimSpace(v)
			}
		case "version":
			if version == "" {
				version = strings.TrimSpace(v)
			}
		}
	}
	if !pyProject.MatchString(name) || len(name) > 200 {
		return "", "", fmt.Errorf("METADATA names the package %q, which is not a package name", printable(name, 100))
	}
	if !pyLooseVersion.MatchString(version) {
		return "", "", fmt.Errorf("METADATA gives %s the version %q, which is not a version", name, printable(version, 100))
	}
	return name, version, nil
}
