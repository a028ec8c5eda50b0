package runtimefetch

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/berth-mcp/berth/bundle/internal/lexical"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// Fetch is the one package that a stdio command downloads from a
// registry and runs when it starts.
type Fetch struct {
	// Tool is the program and subcommand as berth read them: "npx",
	// "npm exec", "pnpm dlx", "uvx", "pipx run", "deno run", "go run",
	// "docker run", ...
	Tool string
	// Package is the package exactly as the manifest names it:
	// "@acme/notes@1.2.3", "mcp-server-fetch==2025.4.7",
	// "npm:@acme/notes@1.2.3", "golang.org/x/tools/gopls@v0.16.0",
	// "ghcr.io/acme/notes@sha256:…".
	Package string
	// Ecosystem is the kind of registry: "npm", "jsr", "pypi", "go" or
	// "oci".
	Ecosystem string
	// Registry is where the package comes from unless the operator
	// configured a mirror: "https://registry.npmjs.org/",
	// "https://pypi.org/simple/", "https://proxy.golang.org/", or the
	// image's registry host ("docker.io", "ghcr.io").
	Registry string
	// Options are the runner's own options before the package, as
	// written ("-y", "--bun"), without the package option.
	Options []string
	// Program is the program named after a package option (npx
	// --package=pkg@1.0.0 prog), "" when the package itself runs.
	Program string
	// Args are the arguments after the package (or after Program): what
	// the server's program is given.
	Args []string
}

// Ecosystems of a Fetch.
const (
	EcosystemNPM  = "npm"
	EcosystemJSR  = "jsr"
	EcosystemPyPI = "pypi"
	EcosystemGo   = "go"
	EcosystemOCI  = "oci"
)

// The rule IDs of the problems a *CommandError reports (docs/rules.md).
// Package bundle reports them under the same IDs.
const (
	RuleCommandWrapper = "command-wrapper"
	RuleForm           = "runtime-fetch-form"
	RuleOption         = "runtime-fetch-option"
	RulePackages       = "runtime-fetch-packages"
	RuleImageDigest    = "runtime-fetch-image-digest"
	RuleUnpinned       = "runtime-fetch-unpinned"
)

// CommandError is a stdio command that berth refuses: a shell or wrapper,
// or a package manager, package runner or runtime used in a form berth does
// not accept.
type CommandError struct {
	// Rule is the rule ID.
	Rule string
	// Field is "command" or "args": where in the stdio object the problem
	// is.
	Field string
	// Message says what is wrong and which forms are accepted.
	Message string
	// Unpinned is set when the command is refused only because its
	// package is not pinned, in a form that berth can resolve against its
	// registry now (Resolver.Resolve, berth import --pin).
	Unpinned *Unpinned
}

func (e *CommandError) Error() string { return e.Message + " [" + e.Rule + "]" }

// Read reads a stdio server's command and arguments the way berth runs
// them. For a command that downloads and runs a package (npx, uvx, docker
// run, ...) it returns that package; for any other program it returns nil.
// The error, a *CommandError, says why berth refuses the command: a shell
// or a wrapper, or a package manager, package runner or language runtime
// that can download code, used in any form but the few that berth fully
// understands (docs/rules.md lists them). Programs are recognized by the
// base name of the command, in any letter case, with or without a Windows
// extension (.exe, .cmd, .bat, .ps1, .com).
func Read(command string, args []string) (*Fetch, error) {
	return readCommand(command, args)
}

// Packages is Read that returns the package in a slice, and whether the
// program is one that berth reads as a runtime fetcher (or refuses as a
// wrapper).
func Packages(command string, args []string) ([]Fetch, bool, error) {
	f, err := readCommand(command, args)
	if err != nil {
		return nil, true, err
	}
	if f == nil {
		return nil, false, nil
	}
	return []Fetch{*f}, true, nil
}

// programName is the name a command is recognized by: its base name, lower
// case, without a Windows program extension or a version suffix
// ("python3.12", "pip3", "go1.22.0").
func programName(command string) string {
	name := command
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.ToLower(name)
	for _, ext := range []string{".exe", ".cmd", ".bat", ".ps1", ".com"} {
		if n, ok := strings.CutSuffix(name, ext); ok {
			name = n
			break
		}
	}
	if m := versionedName.FindStringSubmatch(name); m != nil {
		name = m[1]
	}
	return name
}

var versionedName = regexp.MustCompile(`^(python|pypy|pip|pipx|go|gem|node|nodejs|ruby|bundle|bundler|perl|php|lua|julia)[0-9][0-9.]*$`)

// wrappers are shells and programs that run another program: a bundle
// names the program it runs directly, so that the review shows it.
var wrappers = setOf(
	// shells
	"sh", "bash", "rbash", "zsh", "dash", "ash", "ksh", "ksh93", "mksh", "pdksh", "oksh", "yash", "posh",
	"csh", "tcsh", "fish", "nu", "elvish", "xonsh", "pwsh", "powershell", "powershell_ise", "cmd", "command",
	"busybox", "toybox",
	// programs that run the rest of their arguments as a command
	"env", "nice", "nohup", "timeout", "gtimeout", "xargs", "stdbuf", "setsid", "time", "watch",
	"flock", "script", "expect", "unbuffer", "ionice", "taskset", "chrt", "numactl", "chroot", "unshare",
	"nsenter", "strace", "ltrace", "gdb", "lldb", "valgrind", "firejail", "bwrap", "systemd-run", "chpst",
	"daemonize", "tini", "dumb-init", "gosu", "su-exec", "caffeinate", "arch", "sandbox-exec", "open",
	"osascript", "wsl", "cscript", "wscript", "mshta", "rundll32", "runas", "winpty",
	"proxychains", "proxychains4", "torsocks", "tsocks", "faketime",
	"sudo", "doas", "su", "runuser", "setpriv", "pkexec",
	"cross-env", "dotenv", "dotenvx", "direnv", "concurrently", "npm-run-all", "run-p", "run-s", "nodemon", "pm2", "forever",
	// version managers, which download and select runtimes
	"nix", "nix-shell", "mise", "rtx", "asdf", "volta", "fnm", "nvm", "n", "nodenv", "pyenv", "rbenv", "goenv",
)

// noForm are programs that download code and have no form berth accepts.
var noForm = map[string]string{
	"pip":            "pip installs packages; ship the server in the bundle or run it with uvx or pipx run and an exact version",
	"poetry":         "poetry resolves a project's dependencies; ship the server in the bundle, or run it with uvx and an exact version",
	"pdm":            "pdm resolves a project's dependencies; ship the server in the bundle, or run it with uvx and an exact version",
	"hatch":          "hatch resolves a project's dependencies; ship the server in the bundle, or run it with uvx and an exact version",
	"pipenv":         "pipenv resolves a project's dependencies; ship the server in the bundle, or run it with uvx and an exact version",
	"rye":            "rye resolves a project's dependencies; ship the server in the bundle, or run it with uvx and an exact version",
	"conda":          "conda installs packages; ship the server in the bundle",
	"mamba":          "mamba installs packages; ship the server in the bundle",
	"micromamba":     "micromamba installs packages; ship the server in the bundle",
	"pixi":           "pixi installs packages; ship the server in the bundle",
	"corepack":       "corepack downloads package managers; name the package runner (npx, pnpm dlx, yarn dlx) directly",
	"cargo":          "cargo downloads and builds crates; ship the built server in the bundle",
	"cargo-binstall": "cargo-binstall downloads binaries; ship the server in the bundle",
	"rustup":         "rustup downloads toolchains; ship the built server in the bundle",
	"gem":            "gem installs and runs gems; ship the server in the bundle",
	"bundle":         "bundler resolves a Gemfile; ship the server in the bundle",
	"bundler":        "bundler resolves a Gemfile; ship the server in the bundle",
	"cnpm":           "cnpm is an npm client of another registry; use npx with an exact version",
	"nlx":            "nlx runs whatever package manager a project uses; use npx with an exact version",
	"ni":             "ni runs whatever package manager a project uses; use npx with an exact version",
	"dx":             "dx is deno's package runner, which berth does not read; use deno run npm:<package>@<version>",
	"git":            "git clones and fetches code from repositories when the server starts, which neither the bundle's digest nor the review covers; ship that code in the bundle",
}

// pythons are interpreters whose -m may start a package manager.
var pythons = setOf("python", "pypy", "py")

// pythonPMs are modules that download packages when run with python -m.
var pythonPMs = setOf("pip", "pipx", "uv", "poetry", "pdm", "hatch", "pipenv", "ensurepip", "conda", "mamba")

// nodeCLIs are the base names of package managers' entry scripts, which
// node could be pointed at to run them.
var nodeCLIs = setOf("npm-cli", "npx-cli", "npm", "npx", "pnpm", "pnpx", "yarn", "yarnpkg", "corepack", "bun", "bunx")

func cmdErr(rule, field, format string, args ...any) error {
	return &CommandError{Rule: rule, Field: field, Message: fmt.Sprintf(format, args...)}
}

// readCommand classifies a command and, for a runtime fetcher, reads its
// arguments against the accepted forms.
func readCommand(command string, args []string) (*Fetch, error) {
	name := programName(command)
	if err := readInline(name, command, args); err != nil {
		return nil, err
	}
	if wrappers[name] {
		return nil, cmdErr(RuleCommandWrapper, "command", "the command %q is a shell or a program that runs another program; name the program the server is directly (\"${bundle}/bin/server\", \"node\", \"npx\"), so that the review shows what runs", command)
	}
	if why, ok := noForm[name]; ok {
		return nil, cmdErr(RuleForm, "command", "berth accepts no form of %q: %s", command, why)
	}
	if pythons[name] {
		return nil, checkPython(command, args)
	}
	if name == "node" || name == "nodejs" {
		return nil, checkNode(command, args)
	}
	r, ok := runners[name]
	if !ok {
		return nil, nil
	}
	f, run, err := r.read(args)
	if err != nil {
		return nil, err
	}
	return f, readFetchedInline(f, command, run)
}

// readFetchedInline applies inline-code to a fetched package that is an
// interpreter (npx -y node@20.11.1 -e …, uvx python@3.12.1 -c …, docker
// run -i img@sha256:… python3 -c …): run is the package (or the program
// named with --package, --from or --spec) and its arguments.
func readFetchedInline(f *Fetch, command string, run []string) error {
	if len(run) == 0 {
		return nil
	}
	prog, args := run[0], run[1:]
	if f.Ecosystem == EcosystemOCI {
		// what follows the image is the command the container runs
		if len(args) == 0 {
			return nil
		}
		prog, args = args[0], args[1:]
	} else if prog == f.Package {
		prog = packageName(f.Ecosystem, prog)
	}
	return readInline(programName(prog), command+" "+run[0], args)
}

// packageName is the name of a pinned package spec, as a program: the
// npm name without its scope and version, the PyPI name without its
// version and extras.
func packageName(eco, spec string) string {
	name := spec
	switch eco {
	case EcosystemNPM, EcosystemJSR:
		name = strings.TrimPrefix(strings.TrimPrefix(name, "npm:"), "jsr:")
		if at := strings.LastIndex(name, "@"); at > 0 {
			name = name[:at]
		}
	case EcosystemPyPI:
		name, _, _ = strings.Cut(name, "==")
		name, _, _ = strings.Cut(name, "@")
		name, _, _ = strings.Cut(name, "[")
	}
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// checkPython refuses python -m <package manager>. Short options may be
// clustered as python reads them: -Im pip, -mpip (pythonOption). A -c
// command line is inline code, which the inline-code rule refuses.
func checkPython(command string, args []string) error {
	_, mod, _ := pythonOption(args)
	top, _, _ := strings.Cut(mod, ".")
	if mod != "" && pythonPMs[strings.ToLower(top)] {
		return cmdErr(RuleForm, "args", "%q -m %q runs a package manager, which berth accepts only as uvx or pipx run with one package at an exact version; run it that way, or ship the server in the bundle", command, mod)
	}
	return nil
}

// nodeValueOpts are node options that take the next argument as a value.
// The lists need not be complete: an option in neither this list nor
// nodeFlags is read as one that may take a value (fail closed).
var nodeValueOpts = setOf("-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions", "--env-file", "--input-type", "--title", "--inspect-port", "--redirect-warnings", "--icu-data-dir", "--openssl-config", "--tls-cipher-list", "--secure-heap", "--secure-heap-min", "--disable-warning",
	"--report-dir", "--report-directory", "--report-filename", "--report-signal", "--diagnostic-dir", "--max-http-header-size",
	"--unhandled-rejections", "--disable-proto", "--dns-result-order", "--heapsnapshot-signal", "--heapsnapshot-near-heap-limit",
	"--cpu-prof-dir", "--cpu-prof-name", "--cpu-prof-interval", "--heap-prof-dir", "--heap-prof-name", "--heap-prof-interval",
	"--watch-path", "--experimental-default-type", "--snapshot-blob", "--localstorage-file", "--env-file-if-exists",
	"--trace-event-categories", "--trace-event-file-pattern", "--tls-keylog", "--allow-fs-read", "--allow-fs-write",
	"--experimental-config-file", "--experimental-sea-config", "--experimental-policy", "--policy-integrity")

// checkNode refuses node pointed at a package manager's entry script
// (node /usr/lib/node_modules/npm/bin/npx-cli.js ...). An argument that
// may be the value of an option berth does not know, or the script, is
// checked as a script too (node --report-dir /tmp …/npx-cli.js).
func checkNode(command string, args []string) error {
	pending := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case pending && (a == "--" || !strings.HasPrefix(a, "-")):
			if err := checkNodeScript(command, a); err != nil {
				return err
			}
			pending = false
		case a == "--":
			if i+1 < len(args) {
				return checkNodeScript(command, args[i+1])
			}
			return nil
		case a == "-e" || a == "--eval" || a == "-p" || a == "--print" || a == "-":
			return nil
		case strings.HasPrefix(a, "-"):
			name, _, hasVal := strings.Cut(a, "=")
			switch {
			case nodeValueOpts[a] && !pending:
				i++
			case hasVal, nodeFlags[name], strings.HasPrefix(name, "--no-"), nodeShortFlags[a]:
				pending = false
			default:
				pending = true
			}
		default:
			return checkNodeScript(command, a)
		}
	}
	return nil
}

func checkNodeScript(command, script string) error {
	base := script
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	lower := strings.ToLower(base)
	for _, ext := range []string{".js", ".cjs", ".mjs"} {
		if n, ok := strings.CutSuffix(lower, ext); ok {
			if nodeCLIs[n] {
				return cmdErr(RuleForm, "args", "%q runs %q, a package manager's own entry script; name the package runner as the command (like \"npx\") in a form berth accepts", command, script)
			}
			return nil
		}
	}
	return nil
}

// runner is one program, or program and subcommand, that downloads a
// package and runs it, with the arguments berth accepts.
type runner struct {
	// sub is a two-word subcommand ("tool run"); a one-word one is the
	// key of program.subs.
	sub  []string
	tool string // "npm exec"
	eco  string
	// forms says in words which forms are accepted, for messages.
	forms string
	// flags are options without a value.
	flags set
	// flagMatch accepts further options without a value by pattern.
	flagMatch *regexp.Regexp
	// valueOpts are options with a value, each with its check (nil: any
	// value).
	valueOpts map[string]func(string) error
	// pkgOpts are options whose value is the package; the first
	// positional is then the name of a program of that package.
	pkgOpts set
	// refused are options refused with a reason of their own.
	refused map[string]string
	// dashDash: "--" may stand before the package.
	dashDash bool
	// needDashDash: the package must follow "--", since the program keeps
	// reading options after it (npm exec).
	needDashDash bool
	// pkg checks the package spec.
	pkg func(spec string) error
	// example is a pinned spec like the one given, for messages.
	example func(spec string) string
}

// program is a runner itself (npx, uvx) or has runners as subcommands
// (npm exec, pnpm dlx), which must come first.
type program struct {
	direct *runner            // the program itself is the runner
	subs   map[string]*runner // by subcommand
	forms  string
}

// read returns the package and the argv the runner runs: the package (or
// the program of a --package) and what follows it.
func (p *program) read(args []string) (*Fetch, []string, error) {
	if p.direct != nil {
		return p.direct.parse(args)
	}
	tool := p.tool()
	if len(args) == 0 {
		return nil, nil, cmdErr(RuleForm, "args", "%s is given no subcommand; berth accepts only %s", tool, p.forms)
	}
	if r, ok := p.subs[args[0]]; ok {
		if len(r.sub) == 2 {
			if len(args) < 2 || args[1] != r.sub[1] {
				return nil, nil, cmdErr(RuleForm, "args", "%s %q is not a form berth accepts; berth accepts only %s", tool, strings.Join(first(args, 2), " "), p.forms)
			}
			return shifted(r.parse(args[2:]))(2)
		}
		return shifted(r.parse(args[1:]))(1)
	}
	what := fmt.Sprintf("the subcommand %q", args[0])
	if strings.HasPrefix(args[0], "-") {
		what = fmt.Sprintf("the option %q before the subcommand", args[0])
	}
	return nil, nil, cmdErr(RuleForm, "args", "%s with %s is not a form berth accepts (it may run or download code berth cannot review); berth accepts only %s, with the subcommand first", tool, what, p.forms)
}

// tool is the program's name in messages.
func (p *program) tool() string {
	for _, r := range p.subs {
		return strings.Fields(r.tool)[0]
	}
	return p.direct.tool
}

func first(s []string, n int) []string {
	if len(s) < n {
		return s
	}
	return s[:n]
}

// shifted moves the argument index of an Unpinned refusal by the
// subcommand's words that the runner did not see.
func shifted(f *Fetch, run []string, err error) func(n int) (*Fetch, []string, error) {
	return func(n int) (*Fetch, []string, error) {
		var ce *CommandError
		if errors.As(err, &ce) && ce.Unpinned != nil {
			ce.Unpinned.Arg += n
		}
		return f, run, err
	}
}

func (r *runner) parse(args []string) (*Fetch, []string, error) {
	var pkg string
	pkgArg, pkgPrefix := -1, ""
	fromOpt := false
	sawDashDash := false
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if !r.dashDash {
				return nil, nil, cmdErr(RuleForm, "args", "%s does not take \"--\" before the package; berth accepts only %s", r.tool, r.forms)
			}
			sawDashDash = true
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		name, val, hasVal := strings.Cut(a, "=")
		switch {
		case r.refused[name] != "":
			return nil, nil, cmdErr(RuleOption, "args", "%s %s is refused: %s; berth accepts only %s", r.tool, name, r.refused[name], r.forms)
		case r.flagMatch != nil && r.flagMatch.MatchString(a):
		case r.flags[name]:
			if hasVal {
				return nil, nil, cmdErr(RuleOption, "args", "%s %s takes no value; write it as %s", r.tool, name, name)
			}
		case r.pkgOpts[name]:
			pkgArg, pkgPrefix = i, name+"="
			if !hasVal {
				if i+1 >= len(args) {
					return nil, nil, cmdErr(RulePackages, "args", "%s %s needs a package; berth accepts only %s", r.tool, name, r.forms)
				}
				i++
				val = args[i]
				pkgArg, pkgPrefix = i, ""
			}
			if pkg != "" {
				return nil, nil, cmdErr(RulePackages, "args", "%s names more than one package (%q and %q); berth accepts exactly one: %s", r.tool, pkg, val, r.forms)
			}
			pkg, fromOpt = val, true
		case r.valueOpts != nil && hasKey(r.valueOpts, name):
			if !hasVal {
				if i+1 >= len(args) {
					return nil, nil, cmdErr(RuleOption, "args", "%s %s needs a value", r.tool, name)
				}
				i++
				val = args[i]
			}
			if check := r.valueOpts[name]; check != nil {
				if err := check(val); err != nil {
					return nil, nil, cmdErr(RuleOption, "args", "%s %s %q: %v", r.tool, name, val, err)
				}
			}
		default:
			return nil, nil, cmdErr(RuleOption, "args", "%s %q is not an option berth accepts (an option may change where the code comes from or how it runs, or take the package's place); berth accepts only %s", r.tool, name, r.forms)
		}
	}
	if r.needDashDash && !sawDashDash {
		return nil, nil, cmdErr(RuleForm, "args", "%s reads options after the package too, so the package must follow \"--\"; berth accepts only %s", r.tool, r.forms)
	}
	positional := ""
	if i < len(args) {
		positional = args[i]
	}
	if fromOpt {
		if positional == "" {
			return nil, nil, cmdErr(RulePackages, "args", "%s names the package %q but no program of it to run; berth accepts only %s", r.tool, pkg, r.forms)
		}
		if !binName.MatchString(positional) {
			return nil, nil, cmdErr(RulePackages, "args", "%s runs %q from the package %q, which is not the plain name of a program (letters, digits, '.', '_', '-'); a second package or a command line cannot be reviewed; berth accepts only %s", r.tool, positional, pkg, r.forms)
		}
	} else {
		if positional == "" {
			return nil, nil, cmdErr(RulePackages, "args", "%s is given no package to run; berth accepts only %s", r.tool, r.forms)
		}
		pkg, pkgArg, pkgPrefix = positional, i, ""
	}
	if err := r.pkg(pkg); err != nil {
		rule := RuleUnpinned
		if r.eco == EcosystemOCI {
			rule = RuleImageDigest
		}
		e := &CommandError{Rule: rule, Field: "args", Message: fmt.Sprintf("%s runs %q, %v; pin it like %s", r.tool, pkg, err, r.example(pkg))}
		if u := unpinnedRequest(r.tool, r.eco, pkg); u != nil && r.containerOK(args[:i]) {
			u.Arg, u.Prefix = pkgArg, pkgPrefix
			e.Unpinned = u
		}
		return nil, nil, e
	}
	f := &Fetch{Tool: r.tool, Package: pkg, Ecosystem: r.eco, Registry: defaultRegistry[r.eco]}
	for j, a := range args[:i] {
		optOrValue := fromOpt && (j == pkgArg || (pkgPrefix == "" && j == pkgArg-1))
		if a != "--" && !optOrValue {
			f.Options = append(f.Options, a)
		}
	}
	if run := args[i:]; len(run) > 0 {
		if fromOpt {
			f.Program = run[0]
		}
		f.Args = append([]string{}, run[1:]...)
	}
	switch r.eco {
	case EcosystemOCI:
		f.Registry = imageRegistry(pkg)
	case EcosystemNPM:
		if strings.HasPrefix(pkg, "jsr:") {
			f.Ecosystem, f.Registry = EcosystemJSR, defaultRegistry[EcosystemJSR]
		}
	}
	if r.tool == "docker run" || r.tool == "podman run" || r.tool == "nerdctl run" {
		if err := checkContainerArgs(r.tool, args[:i]); err != nil {
			return nil, nil, err
		}
	}
	return f, args[i:], nil
}

// containerOK reports whether the options before a container's image are
// accepted (checkContainerArgs): a refusal of an image by tag is offered
// a pin only when pinning it would make the command one berth runs.
func (r *runner) containerOK(opts []string) bool {
	if r.eco != EcosystemOCI {
		return true
	}
	return checkContainerArgs(r.tool, opts) == nil
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

var defaultRegistry = map[string]string{
	EcosystemNPM:  "https://registry.npmjs.org/",
	EcosystemJSR:  "https://jsr.io/",
	EcosystemPyPI: "https://pypi.org/simple/",
	EcosystemGo:   "https://proxy.golang.org/",
}

// binName is the plain name of a program of a package.
var binName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

var (
	// pyVersion is an exact PEP 440 version: no wildcards, no ranges.
	pyVersion = regexp.MustCompile(`^\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?(\+[A-Za-z0-9.]+)?$`)
	npmName   = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$`)
	jsrName   = regexp.MustCompile(`^@[a-z0-9][a-z0-9-]*/[a-z0-9][a-z0-9-]*$`)
	pyName    = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\[[A-Za-z0-9._,-]+\])?$`)
	// pyMinor is a Python version for uvx --python: 3, 3.12 or 3.12.4.
	pyMinor = regexp.MustCompile(`^3(\.\d{1,2}){0,2}$`)
)

func pinnedNPM(spec string) error {
	at := strings.LastIndex(spec, "@")
	if at <= 0 {
		return fmt.Errorf("which has no version")
	}
	name, ver := spec[:at], spec[at+1:]
	if !npmName.MatchString(name) {
		return fmt.Errorf("which is not a plain npm package name (URLs, paths, git and aliases cannot be pinned by version)")
	}
	if !lexical.StrictSemver(ver) {
		return fmt.Errorf("whose version %q is not an exact semver version (no ranges, tags or \"latest\")", ver)
	}
	return nil
}

func pinnedPython(spec string) error {
	name, ver, ok := strings.Cut(spec, "==")
	if !ok {
		name, ver, ok = strings.Cut(spec, "@")
	}
	if !ok {
		return fmt.Errorf("which has no version")
	}
	if !pyName.MatchString(name) {
		return fmt.Errorf("which is not a plain package name (URLs, paths and git sources cannot be pinned by version)")
	}
	if !pyVersion.MatchString(ver) {
		return fmt.Errorf("whose version %q is not one exact version (no ranges, wildcards or \"latest\")", ver)
	}
	return nil
}

// pinnedDeno accepts npm:<name>@<semver> and jsr:@scope/name@<semver>.
func pinnedDeno(spec string) error {
	switch {
	case strings.HasPrefix(spec, "npm:"):
		return pinnedNPM(strings.TrimPrefix(spec, "npm:"))
	case strings.HasPrefix(spec, "jsr:"):
		rest := strings.TrimPrefix(spec, "jsr:")
		at := strings.LastIndex(rest, "@")
		if at <= 0 {
			return fmt.Errorf("which has no version")
		}
		if !jsrName.MatchString(rest[:at]) {
			return fmt.Errorf("which is not a plain JSR package name (@scope/name)")
		}
		if !lexical.StrictSemver(rest[at+1:]) {
			return fmt.Errorf("whose version %q is not an exact semver version (no ranges, tags or \"latest\")", rest[at+1:])
		}
		return nil
	}
	return fmt.Errorf("which is not an npm: or jsr: package (a local script or a URL may import code from anywhere)")
}

// pinnedGo accepts an import path and one canonical module version.
func pinnedGo(spec string) error {
	path, ver, ok := strings.Cut(spec, "@")
	if !ok {
		return fmt.Errorf("which has no version (without one, go run builds the package of the current module)")
	}
	if err := module.CheckImportPath(path); err != nil || !strings.Contains(strings.SplitN(path, "/", 2)[0], ".") {
		return fmt.Errorf("which is not a module import path like example.com/tool/cmd/server")
	}
	if !semver.IsValid(ver) || semver.Canonical(ver)+buildSuffix(ver) != ver {
		return fmt.Errorf("whose version %q is not one exact module version like v1.2.3 (no \"latest\", branches, queries or short forms)", ver)
	}
	return nil
}

func buildSuffix(v string) string {
	if b := semver.Build(v); b == "+incompatible" {
		return b
	}
	return ""
}

func npmExample(spec string) string {
	name := spec
	if at := strings.LastIndex(spec, "@"); at > 0 {
		name = spec[:at]
	}
	return fmt.Sprintf("%q", name+"@1.2.3")
}

func pyExample(spec string) string {
	name, _, _ := strings.Cut(spec, "==")
	name, _, _ = strings.Cut(name, "@")
	return fmt.Sprintf("%q", name+"==1.2.3")
}

func denoExample(spec string) string {
	if strings.HasPrefix(spec, "jsr:") || strings.HasPrefix(spec, "npm:") {
		return fmt.Sprintf("%q", spec[:4]+strings.Trim(npmExample(spec[4:]), `"`))
	}
	return "\"npm:<package>@1.2.3\""
}

func goExample(spec string) string {
	path, _, _ := strings.Cut(spec, "@")
	return fmt.Sprintf("%q", path+"@v1.2.3")
}

func imageExample(spec string) string {
	name := spec
	if i := strings.Index(name, "@"); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	return fmt.Sprintf("%q (the digest that `docker buildx imagetools inspect` or `crane digest` prints for the tag you reviewed)", name+"@sha256:<64 hex digits>")
}

// npmFlags are the npm options of npx and npm exec that change neither
// where the package comes from nor how it runs.
var npmFlags = setOf("-y", "--yes", "-q", "--quiet", "-s", "--silent", "--no-install", "--prefer-online", "--prefer-offline")

// npmRefused are options that change where the code comes from or how it
// runs, with the reason.
var npmRefused = map[string]string{
	"--registry":           "it changes where the package comes from",
	"--userconfig":         "it reads npm configuration from a file the bundle chooses",
	"--globalconfig":       "it reads npm configuration from a file the bundle chooses",
	"--node-options":       "it passes options to node (like --require) that run other code",
	"--script-shell":       "it runs the package through a shell of the bundle's choice",
	"--shell":              "it runs the package through a shell of the bundle's choice",
	"-c":                   "it runs a shell command line",
	"--call":               "it runs a shell command line",
	"--prefix":             "it makes npm look for packages in another directory",
	"-w":                   "it runs in a workspace of a project",
	"--workspace":          "it runs in a workspace of a project",
	"--workspaces":         "it runs in the workspaces of a project",
	"--include":            "it changes which dependencies are installed",
	"--omit":               "it changes which dependencies are installed",
	"--cache":              "it reads packages from a cache directory the bundle chooses",
	"--offline":            "it runs only what a cache holds",
	"--ignore-scripts":     "it changes how the package is installed",
	"--foreground-scripts": "it changes how the package is installed",
	"--allow-build":        "it runs the build scripts of dependencies",
	"--shell-mode":         "it runs a shell command line",
	"--overrides":          "it replaces dependencies",
	"--strict-ssl":         "it changes how the registry's certificate is checked",
	"--cafile":             "it changes which certificates are trusted",
	"--ca":                 "it changes which certificates are trusted",
	"--proxy":              "it sends the download through a proxy of the bundle's choice",
	"--https-proxy":        "it sends the download through a proxy of the bundle's choice",
}

var pyRefused = map[string]string{
	"--with":                 "it adds packages the bundle does not pin",
	"-w":                     "it adds packages the bundle does not pin",
	"--with-editable":        "it adds a local package",
	"--with-requirements":    "it adds packages from a file berth cannot check",
	"--index":                "it changes where packages come from",
	"--index-url":            "it changes where packages come from",
	"-i":                     "it changes where packages come from",
	"--extra-index-url":      "it changes where packages come from",
	"--default-index":        "it changes where packages come from",
	"--find-links":           "it changes where packages come from",
	"-f":                     "it changes where packages come from",
	"--constraints":          "it changes which dependency versions are used",
	"-c":                     "it changes which dependency versions are used",
	"--overrides":            "it replaces dependencies",
	"--build-constraints":    "it changes how packages are built",
	"--config-file":          "it reads configuration from a file the bundle chooses",
	"--config-setting":       "it changes how packages are built",
	"-C":                     "it changes how packages are built",
	"--directory":            "it runs in another directory, whose configuration it reads",
	"--project":              "it reads a project's configuration",
	"--env-file":             "it reads environment variables from a file",
	"--pip-args":             "it passes options to pip that berth cannot check",
	"--pypackages":           "it runs packages from the working directory",
	"--path":                 "it runs a local package",
	"--editable":             "it installs a local package",
	"-e":                     "it installs a local package",
	"--system-site-packages": "it lets the host's packages take the place of the registry's",
	"--python":               "it selects an interpreter berth cannot see",
	"--backend":              "it selects another installer",
	"--allow-insecure-host":  "it turns off certificate checks",
	"--keyring-provider":     "it runs a credential program",
}

var (
	npmForms    = "npx [-y] [-q] <package>@<exact version> [args...], or npx [-y] --package=<package>@<exact version> <program> [args...]"
	npmExecForm = "npm exec [-y] -- <package>@<exact version> [args...] (also npm x)"
	uvForms     = "uvx [-q] [--python 3.X] <package>==<exact version> [args...], or uvx [-q] --from <package>==<exact version> <program> [args...] (also uv tool run)"
	pipxForms   = "pipx run [-q] <package>==<exact version> [args...], or pipx run [-q] --spec <package>==<exact version> <program> [args...]"
)

func npmRunner(tool, forms string) *runner {
	return &runner{tool: tool, eco: EcosystemNPM, forms: forms, flags: npmFlags, pkgOpts: setOf("-p", "--package"),
		refused: npmRefused, dashDash: true, pkg: pinnedNPM, example: npmExample}
}

// runners maps program names to the runners berth reads.
var runners = func() map[string]*program {
	npx := npmRunner("npx", npmForms)
	npmExec := npmRunner("npm exec", npmExecForm)
	npmExec.needDashDash = true
	npmX := *npmExec
	npmX.tool = "npm x"
	pnpmDlx := &runner{tool: "pnpm dlx", eco: EcosystemNPM, forms: "pnpm dlx [-s] <package>@<exact version> [args...], or pnpm dlx [-s] --package=<package>@<exact version> <program> [args...] (also pnpx)",
		flags: setOf("-s", "--silent"), pkgOpts: setOf("--package"), refused: npmRefused, pkg: pinnedNPM, example: npmExample}
	pnpx := *pnpmDlx
	pnpx.tool = "pnpx"
	yarnDlx := &runner{tool: "yarn dlx", eco: EcosystemNPM, forms: "yarn dlx [-q] <package>@<exact version> [args...], or yarn dlx [-q] --package=<package>@<exact version> <program> [args...]",
		flags: setOf("-q", "--quiet"), pkgOpts: setOf("-p", "--package"), refused: npmRefused, pkg: pinnedNPM, example: npmExample}
	bunx := &runner{tool: "bunx", eco: EcosystemNPM, forms: "bunx [--bun] <package>@<exact version> [args...], or bunx [--bun] --package=<package>@<exact version> <program> [args...] (also bun x)",
		flags: setOf("--bun"), pkgOpts: setOf("-p", "--package"), refused: npmRefused, pkg: pinnedNPM, example: npmExample}
	bunX := *bunx
	bunX.tool = "bun x"
	pyVal := map[string]func(string) error{
		"--python": func(v string) error {
			if !pyMinor.MatchString(v) {
				return fmt.Errorf("berth accepts only a Python version like 3.12 here, never a path or an implementation name")
			}
			return nil
		},
	}
	pyVal["-p"] = pyVal["--python"]
	uvRefused := map[string]string{}
	for k, v := range pyRefused {
		if k != "--python" {
			uvRefused[k] = v
		}
	}
	uvx := &runner{tool: "uvx", eco: EcosystemPyPI, forms: uvForms,
		flags:     setOf("-q", "--quiet", "-n", "--no-cache", "--isolated", "--no-progress", "--offline"),
		valueOpts: pyVal, pkgOpts: setOf("--from"), refused: uvRefused, pkg: pinnedPython, example: pyExample}
	uvToolRun := *uvx
	uvToolRun.tool, uvToolRun.sub = "uv tool run", []string{"tool", "run"}
	pipxRun := &runner{tool: "pipx run", eco: EcosystemPyPI, forms: pipxForms,
		flags: setOf("-q", "--quiet", "--no-cache"), pkgOpts: setOf("--spec"), refused: pyRefused, pkg: pinnedPython, example: pyExample}
	denoRun := &runner{tool: "deno run", eco: EcosystemNPM, forms: "deno run [-q] [-A | --allow-<permission>[=...] ...] npm:<package>@<exact version> [args...], or jsr:@<scope>/<name>@<exact version>",
		flags:     setOf("-q", "--quiet", "-A", "--allow-all", "--no-prompt"),
		flagMatch: regexp.MustCompile(`^--(allow|deny)-(read|write|net|env|sys|run|ffi)(=[^=]*)?$`),
		refused: map[string]string{
			"--allow-import":                       "it lets the package import code from hosts the review does not show",
			"-I":                                   "it lets the package import code from hosts the review does not show",
			"--allow-scripts":                      "it runs the install scripts of npm packages",
			"--config":                             "it reads configuration from a file the bundle chooses",
			"-c":                                   "it reads configuration from a file the bundle chooses",
			"--import-map":                         "it replaces where modules come from",
			"--lock":                               "it reads a lock file the bundle chooses",
			"--reload":                             "it changes what is taken from the cache",
			"-r":                                   "it changes what is taken from the cache",
			"--cert":                               "it changes which certificates are trusted",
			"--unsafely-ignore-certificate-errors": "it turns off certificate checks",
			"--env-file":                           "it reads environment variables from a file",
			"--preload":                            "it runs another module first",
			"--v8-flags":                           "it changes how the runtime runs code",
		},
		pkg: pinnedDeno, example: denoExample}
	goRun := &runner{tool: "go run", eco: EcosystemGo, forms: "go run <module import path>@<exact version like v1.2.3> [args...], with no build flags",
		refused: map[string]string{
			"-exec":     "it runs the program through another program",
			"-toolexec": "it runs the compiler through another program",
			"-overlay":  "it replaces source files",
			"-modfile":  "it reads another go.mod",
			"-mod":      "it changes how modules are resolved",
			"-ldflags":  "it changes how the program is built",
			"-gcflags":  "it changes how the program is built",
			"-tags":     "it changes which files are built",
		},
		pkg: pinnedGo, example: goExample}
	container := func(tool string) *runner {
		return &runner{tool: tool, eco: EcosystemOCI,
			forms:     tool + " -i [--rm] [--init] [--pull=missing|always|never] [--read-only] [--network=none|bridge] [--cap-drop=ALL] [--security-opt=no-new-privileges] [-e NAME] [-v ${workspace}[/dir]:/path[:ro]] [-w /path] <image>@sha256:<digest> [args...]",
			flags:     setOf("-i", "--interactive", "--rm", "--init", "--read-only", "-q", "--quiet"),
			valueOpts: containerValueOpts,
			refused: map[string]string{
				"--privileged":   "it gives the container the host's devices and capabilities",
				"--cap-add":      "it gives the container more capabilities",
				"--device":       "it gives the container a host device",
				"--pid":          "it shares a host namespace",
				"--ipc":          "it shares a host namespace",
				"--uts":          "it shares a host namespace",
				"--userns":       "it shares a host namespace",
				"--cgroupns":     "it shares a host namespace",
				"--mount":        "it mounts host paths; use -v ${workspace}:/path",
				"--volumes-from": "it mounts another container's volumes",
				"--env-file":     "it reads environment variables from a file",
				"--entrypoint":   "it runs another program than the image's",
				"--platform":     "it selects another image than the digest names",
				"-t":             "a terminal breaks the stdio transport",
				"--tty":          "a terminal breaks the stdio transport",
				"-d":             "a detached container does not talk over stdio",
				"--detach":       "a detached container does not talk over stdio",
			},
			pkg: pinnedImage, example: imageExample}
	}
	return map[string]*program{
		"npx":     {direct: npx},
		"npm":     {subs: map[string]*runner{"exec": npmExec, "x": &npmX}, forms: npmExecForm},
		"pnpm":    {subs: map[string]*runner{"dlx": pnpmDlx}, forms: pnpmDlx.forms},
		"pnpx":    {direct: &pnpx},
		"yarn":    {subs: map[string]*runner{"dlx": yarnDlx}, forms: yarnDlx.forms},
		"yarnpkg": {subs: map[string]*runner{"dlx": yarnDlx}, forms: yarnDlx.forms},
		"bunx":    {direct: bunx},
		"bun":     {subs: map[string]*runner{"x": &bunX}, forms: "bun x [--bun] <package>@<exact version> [args...]"},
		"deno":    {subs: map[string]*runner{"run": denoRun}, forms: denoRun.forms},
		"uvx":     {direct: uvx},
		"uv":      {subs: map[string]*runner{"tool": &uvToolRun}, forms: "uv tool run [-q] <package>==<exact version> [args...], or uv tool run [-q] --from <package>==<exact version> <program> [args...] (also uvx)"},
		"pipx":    {subs: map[string]*runner{"run": pipxRun}, forms: pipxForms},
		"go":      {subs: map[string]*runner{"run": goRun}, forms: goRun.forms},
		"docker":  {subs: map[string]*runner{"run": container("docker run")}, forms: container("docker run").forms},
		"podman":  {subs: map[string]*runner{"run": container("podman run")}, forms: container("podman run").forms},
		"nerdctl": {subs: map[string]*runner{"run": container("nerdctl run")}, forms: container("nerdctl run").forms},
	}
}()

// containerValueOpts are the container options with a value that berth
// accepts, with their checks.
var containerValueOpts = map[string]func(string) error{
	"--pull":         oneOf("missing", "always", "never"),
	"--network":      oneOf("none", "bridge"),
	"--net":          oneOf("none", "bridge"),
	"--cap-drop":     oneOf("ALL", "all"),
	"--security-opt": oneOf("no-new-privileges", "no-new-privileges:true", "no-new-privileges=true"),
	"-e":             envPassName,
	"--env":          envPassName,
	"-v":             volumeSpec,
	"--volume":       volumeSpec,
	"-w":             containerPath,
	"--workdir":      containerPath,
	"--memory":       limitValue,
	"-m":             limitValue,
	"--cpus":         limitValue,
}

var limitRe = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?[bkmgBKMG]?$`)

func limitValue(v string) error {
	if !limitRe.MatchString(v) {
		return fmt.Errorf("is not a plain number with an optional unit")
	}
	return nil
}

func oneOf(vals ...string) func(string) error {
	return func(v string) error {
		for _, x := range vals {
			if v == x {
				return nil
			}
		}
		return fmt.Errorf("berth accepts only %s here", strings.Join(vals, ", "))
	}
}

// envPassName accepts -e NAME, which passes the variable of that name from
// the server's environment; a literal -e NAME=VALUE would put a value into
// argv.
func envPassName(v string) error {
	if !lexical.EnvName(v) {
		return fmt.Errorf("berth accepts only -e NAME, which passes NAME from the server's environment (declare it in env with fromEnv); a value in argv is visible to every local user")
	}
	return nil
}

var containerPathRe = regexp.MustCompile(`^/[A-Za-z0-9._/-]*$`)

func containerPath(v string) error {
	if !containerPathRe.MatchString(v) || strings.Contains(v, "..") {
		return fmt.Errorf("is not a plain absolute path inside the container")
	}
	return nil
}

// volumeSpec accepts ${workspace}[/dir]:/path[:ro] and
// ${bundle}[/dir]:/path[:ro]: the container sees only what the review
// names. Host paths and named volumes are refused.
func volumeSpec(v string) error {
	src, rest, ok := strings.Cut(v, ":")
	if !ok {
		return fmt.Errorf("berth accepts only ${workspace}[/dir]:/path[:ro] or ${bundle}[/dir]:/path[:ro]")
	}
	okSrc := false
	for _, root := range []string{"${workspace}", "${bundle}"} {
		if src == root {
			okSrc = true
		} else if rel, ok := strings.CutPrefix(src, root+"/"); ok && lexical.CleanRel(rel) {
			okSrc = true
		}
	}
	if !okSrc {
		return fmt.Errorf("mounts something other than the workspace or the bundle; berth accepts only ${workspace}[/dir]:/path[:ro] or ${bundle}[/dir]:/path[:ro]")
	}
	dst, opt, _ := strings.Cut(rest, ":")
	if containerPath(dst) != nil {
		return fmt.Errorf("does not mount at a plain absolute path inside the container")
	}
	if opt != "" && opt != "ro" && opt != "rw" {
		return fmt.Errorf("has the mount option %q; berth accepts only ro or rw", opt)
	}
	return nil
}

// checkContainerArgs checks what berth cannot check option by option:
// that the container keeps stdin open (-i), without which it cannot speak
// MCP over stdio.
func checkContainerArgs(tool string, opts []string) error {
	for _, o := range opts {
		if o == "-i" || o == "--interactive" {
			return nil
		}
	}
	return cmdErr(RuleForm, "args", "%s needs -i before the image, or the container's stdin is closed and it cannot speak MCP over stdio", tool)
}

// imageRef is the image reference grammar of the OCI distribution
// specification: [host[:port]/]path[:tag]@sha256:<hex>.
var (
	imageRef     = regexp.MustCompile(`^(?:((?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?|\[[0-9a-fA-F:]+\](?::[0-9]+)?)/)?([a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)(?::([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Za-z=_-]+))?$`)
	sha256Digest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

func pinnedImage(spec string) error {
	m := imageRef.FindStringSubmatch(spec)
	if m == nil {
		return fmt.Errorf("which is not an image reference like registry.example/name@sha256:<digest>")
	}
	if m[4] == "" {
		if m[3] != "" {
			return fmt.Errorf("which names the image by its tag %q, which the registry can move", m[3])
		}
		return fmt.Errorf("which names no digest, so the registry decides which image runs")
	}
	if !sha256Digest.MatchString(m[4]) {
		return fmt.Errorf("whose digest %q is not sha256: and 64 lower-case hex digits", m[4])
	}
	return nil
}

// imageRegistry is the registry an image reference names: its first path
// component when that looks like a host, docker.io otherwise.
func imageRegistry(spec string) string {
	m := imageRef.FindStringSubmatch(spec)
	if m == nil || m[1] == "" {
		return "docker.io"
	}
	h := m[1]
	if strings.ContainsAny(h, ".:[") || h == "localhost" {
		return h
	}
	return "docker.io"
}

type set map[string]bool

func setOf(s ...string) set {
	m := set{}
	for _, x := range s {
		m[x] = true
	}
	return m
}

// IsExactPyPIVersion reports whether v is one exact PEP 440 version (no
// wildcards, no ranges), as berth pins a PyPI package.
func IsExactPyPIVersion(v string) bool { return pyVersion.MatchString(v) }
