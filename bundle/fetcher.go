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
	exactSemver = regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	// pyVersion is an exact PEP 440 version: no wildcards, no ranges.
	pyVersion = regexp.MustCompile(`^\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?(\+[A-Za-z0-9.]+)?$`)
	npmName   = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$`)
	pyName    = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\[[A-Za-z0-9._,-]+\])?$`)
)

type fetcher struct {
	tool      string
	python    bool
	valueOpts map[string]bool // options that take a separate value
	pkgOpts   map[string]bool // options whose value is a package spec
}

var (
	npmFetcher = fetcher{
		valueOpts: map[string]bool{"--registry": true, "--cache": true, "--userconfig": true, "-w": true, "--workspace": true},
		pkgOpts:   map[string]bool{"-p": true, "--package": true},
	}
	uvFetcher = fetcher{
		python:    true,
		valueOpts: map[string]bool{"--python": true, "-p": true, "--index": true, "--index-url": true, "--extra-index-url": true, "--default-index": true, "-i": true, "--directory": true, "--cache-dir": true, "--constraints": true, "-c": true, "--overrides": true, "--with-editable": true, "--with-requirements": true, "--env-file": true, "--python-preference": true},
		pkgOpts:   map[string]bool{"--from": true, "--with": true, "-w": true},
	}
	pipxFetcher = fetcher{
		python:    true,
		valueOpts: map[string]bool{"--python": true, "--index-url": true, "-i": true, "--pip-args": true},
		pkgOpts:   map[string]bool{"--spec": true},
	}
)

// DetectFetch recognizes a runtime fetcher. rest are the arguments after the
// fetcher's own subcommand.
func detectFetch(command string, args []string) (fetcher, string, []string, bool) {
	switch command {
	case "npx", "bunx":
		f := npmFetcher
		return f, command, args, true
	case "pnpm", "yarn":
		if len(args) > 0 && args[0] == "dlx" {
			return npmFetcher, command + " dlx", args[1:], true
		}
	case "npm":
		if len(args) > 0 && (args[0] == "exec" || args[0] == "x") {
			return npmFetcher, "npm " + args[0], args[1:], true
		}
	case "uvx":
		return uvFetcher, "uvx", args, true
	case "uv":
		if len(args) > 1 && args[0] == "tool" && args[1] == "run" {
			return uvFetcher, "uv tool run", args[2:], true
		}
	case "pipx":
		if len(args) > 0 && args[0] == "run" {
			return pipxFetcher, "pipx run", args[1:], true
		}
	}
	return fetcher{}, "", nil, false
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
			case !f.python && (name == "-c" || name == "--call"):
				return nil, true, fmt.Errorf("%s %s runs a shell command line, which cannot be pinned or reviewed; run the package directly with an exact version", tool, name)
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
			case f.valueOpts[name] && !hasVal:
				i++
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
	if !exactSemver.MatchString(ver) {
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
