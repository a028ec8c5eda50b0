package bundle

import (
	"fmt"
	"regexp"
	"strings"
)

// RuntimeFetch describes a package that a stdio command downloads and runs
// when it starts (npx, bunx, pnpm dlx, yarn dlx, npm exec, uvx, pipx run).
type RuntimeFetch struct {
	Tool    string // "npx", "uvx", ...
	Package string // the full package argument, e.g. "@acme/notes@1.2.3"
}

var (
	// pyVersion is an exact PEP 440 version: no wildcards, no ranges.
	pyVersion = regexp.MustCompile(`^\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?(\+[A-Za-z0-9.]+)?$`)
	npmName   = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$`)
	pyName    = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\[[A-Za-z0-9._,-]+\])?$`)
)

// fetcher describes the options a fetcher takes before the package. An
// option that is in none of its sets is refused unless written with
// "=VALUE": berth could not tell whether the next argument is its value or
// the package, and so which package runs.
type fetcher struct {
	python    bool
	flags     set // options that take no value
	valueOpts set // options that take a value
	pkgOpts   set // options whose value is a package spec
	shellOpts set // options that run a shell command line
	// uncheckedOpts bring in packages from somewhere berth cannot check.
	uncheckedOpts set
}

type set map[string]bool

func setOf(s ...string) set {
	m := set{}
	for _, x := range s {
		m[x] = true
	}
	return m
}

var (
	npmFetcher = fetcher{
		flags:     setOf("-y", "--yes", "--no", "-q", "--quiet", "-s", "--silent", "-d", "--verbose", "--ignore-existing", "--no-install", "--prefer-offline", "--prefer-online", "--offline", "--bun"),
		valueOpts: setOf("--registry", "--cache", "--userconfig", "--globalconfig", "--prefix", "--loglevel", "-w", "--workspace", "--allow-build"),
		pkgOpts:   setOf("-p", "--package"),
		shellOpts: setOf("-c", "--call", "--shell-mode"),
	}
	uvFetcher = fetcher{
		python:        true,
		flags:         setOf("-q", "--quiet", "-v", "--verbose", "-n", "--no-cache", "--offline", "--isolated", "--refresh", "-U", "--upgrade", "--reinstall", "--no-progress", "--native-tls", "--no-config", "--no-python-downloads", "--managed-python", "--no-managed-python", "--no-sources", "--no-build", "--no-binary", "--no-build-isolation", "--no-env-file", "--show-resolution"),
		valueOpts:     setOf("--python", "-p", "--index", "--index-url", "--extra-index-url", "--default-index", "-i", "--find-links", "-f", "--directory", "--cache-dir", "--constraints", "-c", "--overrides", "--with-editable", "--env-file", "--python-preference", "--exclude-newer", "--refresh-package", "--upgrade-package", "--reinstall-package", "--no-build-package", "--no-binary-package", "--resolution", "--prerelease", "--index-strategy", "--keyring-provider", "--link-mode", "--color", "--config-file", "--config-setting", "-C"),
		pkgOpts:       setOf("--from", "--with", "-w"),
		uncheckedOpts: setOf("--with-requirements"),
	}
	pipxFetcher = fetcher{
		python:        true,
		flags:         setOf("-q", "--quiet", "-v", "--verbose", "--no-cache", "--pypackages", "--system-site-packages", "--path"),
		valueOpts:     setOf("--python", "--index-url", "-i", "--backend"),
		pkgOpts:       setOf("--spec"),
		uncheckedOpts: setOf("--pip-args"),
	}
)

// detectFetch recognizes a runtime fetcher. rest are the arguments after
// the fetcher's own subcommand. The command is compared without case and
// without a Windows program extension, since "NPX" runs npx on macOS and
// "npx.cmd" runs it on Windows.
func detectFetch(command string, args []string) (fetcher, string, []string, bool) {
	name := strings.ToLower(command)
	for _, ext := range []string{".cmd", ".exe", ".bat", ".ps1"} {
		name = strings.TrimSuffix(name, ext)
	}
	switch name {
	case "npx", "bunx", "pnpx":
		return npmFetcher, name, args, true
	case "pnpm", "yarn":
		if rest, ok := subcommand(args, "dlx"); ok {
			return npmFetcher, name + " dlx", rest, true
		}
	case "bun":
		if rest, ok := subcommand(args, "x"); ok {
			return npmFetcher, "bun x", rest, true
		}
	case "npm":
		for _, sub := range []string{"exec", "x"} {
			if rest, ok := subcommand(args, sub); ok {
				return npmFetcher, "npm " + sub, rest, true
			}
		}
	case "uvx":
		return uvFetcher, "uvx", args, true
	case "uv":
		if rest, ok := subcommand(args, "tool", "run"); ok {
			return uvFetcher, "uv tool run", rest, true
		}
	case "pipx":
		if rest, ok := subcommand(args, "run"); ok {
			return pipxFetcher, "pipx run", rest, true
		}
	}
	return fetcher{}, "", nil, false
}

// subcommand finds the words of a subcommand in args, allowing options
// before and between them (npm --yes exec, uv -q tool run), and returns the
// arguments after it. A word right after an option may be that option's
// value, so it does not end the search; any other word does.
func subcommand(args []string, words ...string) ([]string, bool) {
	k, afterOpt := 0, false
	for i, a := range args {
		switch {
		case a == "--":
			return nil, false
		case strings.HasPrefix(a, "-"):
			afterOpt = !strings.Contains(a, "=")
		case a == words[k]:
			k++
			afterOpt = false
			if k == len(words) {
				return args[i+1:], true
			}
		case afterOpt:
			afterOpt = false
		default:
			return nil, false
		}
	}
	return nil, false
}

// checkFetcher requires every package a runtime fetcher runs to carry an
// exact version.
func checkFetcher(ps *problems, p, command string, args []string) {
	_, _, err := FetchedPackages(command, args)
	if err != nil {
		ps.add(p+".args", RuleRuntimeFetchUnpinned, "%v", err)
	}
}

// FetchedPackages returns the packages a command downloads at start, with
// an error when one of them is not pinned to an exact version.
func FetchedPackages(command string, args []string) ([]RuntimeFetch, bool, error) {
	f, tool, rest, ok := detectFetch(command, args)
	if !ok {
		return nil, false, nil
	}
	var pkgs []string
	explicit := false
	positional := ""
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			if i+1 < len(rest) && positional == "" {
				positional = rest[i+1]
			}
			break
		}
		if strings.HasPrefix(a, "-") {
			name, val, hasVal := strings.Cut(a, "=")
			switch {
			case f.shellOpts[name]:
				return nil, true, fmt.Errorf("%s %s runs a shell command line, which cannot be pinned or reviewed; run the package directly with an exact version", tool, name)
			case f.uncheckedOpts[name]:
				return nil, true, fmt.Errorf("%s %s installs packages that berth cannot check for exact versions; name each one with an exact version instead", tool, name)
			case f.pkgOpts[name]:
				if !hasVal {
					if i+1 >= len(rest) {
						return nil, true, fmt.Errorf("%s %s needs a package argument", tool, name)
					}
					i++
					val = rest[i]
				}
				pkgs = append(pkgs, val)
				if name != "--with" && name != "-w" {
					explicit = true
				}
			case f.valueOpts[name]:
				if !hasVal {
					i++
				}
			case f.flags[name], hasVal:
			default:
				return nil, true, fmt.Errorf("berth does not know the %s option %q, so it cannot tell which package runs; write an option that takes a value as %s=VALUE, put options after the package, or remove it", tool, name, name)
			}
			continue
		}
		positional = a
		break
	}
	if !explicit {
		if positional == "" {
			return nil, true, fmt.Errorf("%s is given no package to run; name the package with an exact version", tool)
		}
		pkgs = append([]string{positional}, pkgs...)
	}
	var out []RuntimeFetch
	for _, pkg := range pkgs {
		if err := pinned(f.python, pkg); err != nil {
			return nil, true, fmt.Errorf("%s runs %q, %v; pin it like %s", tool, pkg, err, pinExample(f.python, pkg))
		}
		out = append(out, RuntimeFetch{Tool: tool, Package: pkg})
	}
	return out, true, nil
}

func pinned(python bool, spec string) error {
	if python {
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
	at := strings.LastIndex(spec, "@")
	if at <= 0 {
		return fmt.Errorf("which has no version")
	}
	name, ver := spec[:at], spec[at+1:]
	if !npmName.MatchString(name) {
		return fmt.Errorf("which is not a plain npm package name (URLs, paths, git and aliases cannot be pinned by version)")
	}
	if !semverRe.MatchString(ver) {
		return fmt.Errorf("whose version %q is not an exact semver version (no ranges, tags or \"latest\")", ver)
	}
	return nil
}

func pinExample(python bool, spec string) string {
	if python {
		name, _, _ := strings.Cut(spec, "==")
		name, _, _ = strings.Cut(name, "@")
		return fmt.Sprintf("%q", name+"==1.2.3")
	}
	name := spec
	if at := strings.LastIndex(spec, "@"); at > 0 {
		name = spec[:at]
	}
	return fmt.Sprintf("%q", name+"@1.2.3")
}
