package bundle

import (
	"fmt"
	"slices"
	"strings"
)

// envKeyGroup is a set of environment variables a bundle may not set, with
// what they configure. A pattern ending in '*' is a prefix; any other is a
// whole name. Names are compared in upper case: Windows ignores the case of
// variable names, and npm reads npm_config_* in any case.
type envKeyGroup struct {
	what     string
	patterns []string
}

// forbiddenEnvKeys are the variables that configure the dynamic loader, a
// shell, an interpreter, a package manager or a build tool, or where
// programs find their code, their configuration and their certificates.
// Each changes which code a server runs or where that code comes from.
// docs/rules.md lists them; keep the two in step (a test compares them).
var forbiddenEnvKeys = []envKeyGroup{
	{"the dynamic loader or the C library", []string{
		"LD_*", "DYLD_*", "_RLD*", "LIBPATH", "SHLIB_PATH", "GCONV_PATH", "GLIBC_TUNABLES", "LOCPATH", "NLSPATH",
	}},
	{"where programs and their configuration are found (berth sets these)", []string{
		"PATH", "PATHEXT", "HOME", "USERPROFILE", "HOMEDRIVE", "HOMEPATH", "APPDATA", "LOCALAPPDATA", "PROGRAMDATA",
		"SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "TMPDIR", "TMP", "TEMP", "XDG_*",
	}},
	{"a shell", []string{
		"ENV", "BASH_ENV", "BASH_*", "BASHOPTS", "SHELLOPTS", "SHELL", "IFS", "PS1", "PS2", "PS3", "PS4",
		"PROMPT_COMMAND", "CDPATH", "GLOBIGNORE", "FPATH", "ZDOTDIR", "ZSH_*", "INPUTRC", "PSMODULEPATH",
		"PSEXECUTIONPOLICYPREFERENCE",
	}},
	{"an interpreter or a language runtime", []string{
		"NODE_*", "PYTHON*", "PERL*", "RUBY*", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "JAVA_OPTS",
		"CLASSPATH", "LUA_*", "PHPRC", "PHP_INI_SCAN_DIR", "R_LIBS*", "R_PROFILE*", "R_ENVIRON*", "TCLLIBPATH",
		"GUILE_*", "DOTNET_*", "COREHOST_*", "CORECLR_*", "COR_*", "COMPLUS_*", "ERL_*", "JULIA_*", "DENO_*", "BUN_*",
		"TS_NODE_*",
	}},
	{"a package manager or a build tool", []string{
		"NPM_CONFIG_*", "YARN_*", "PNPM_*", "COREPACK_*", "UV_*", "PIP_*", "PIPX_*", "POETRY_*", "PDM_*", "HATCH_*",
		"CONDA_*", "VIRTUAL_ENV", "GEM_*", "BUNDLE_*", "BUNDLER_*", "CARGO_*", "RUSTUP_*", "RUSTC*", "RUSTFLAGS",
		"RUSTDOCFLAGS", "GRADLE_*", "MAVEN_*", "DOCKER_*", "CONTAINER_HOST", "CONTAINERS_*", "BUILDKIT_*",
		"CGO_*", "CC", "CXX", "CPP", "LD", "AR", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "PKG_CONFIG*",
		"MAKEFLAGS", "MFLAGS",
		// Go's own variables (go help environment); GO* as a prefix would
		// also catch GOOGLE_API_KEY and its kin.
		"GO111MODULE", "GOARCH", "GOAUTH", "GOBIN", "GOCACHE", "GOCACHEPROG", "GOCOVERDIR", "GODEBUG", "GOENV",
		"GOEXPERIMENT", "GOFIPS140", "GOFLAGS", "GOGC", "GOINSECURE", "GOMAXPROCS", "GOMEMLIMIT", "GOMODCACHE",
		"GONOPROXY", "GONOSUMDB", "GONOSUMCHECK", "GOOS", "GOPATH", "GOPRIVATE", "GOPROXY", "GOROOT", "GOSUMDB",
		"GOTELEMETRY", "GOTELEMETRYDIR", "GOTMPDIR", "GOTOOLCHAIN", "GOTOOLDIR", "GOTRACEBACK", "GOVCS", "GOWORK",
		"GO386", "GOAMD64", "GOARM", "GOARM64", "GOMIPS", "GOMIPS64", "GOPPC64", "GORISCV64", "GOWASM", "GOLOONG64",
		"GOS390X", "GCCGO", "GCCGOTOOLDIR",
	}},
	{"git", []string{"GIT_*"}},
	{"TLS trust or OpenSSL (which certificates are trusted, which engines load)", []string{
		"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "OPENSSL_*",
	}},
}

// allowedEnvKeys are whole names a pattern of forbiddenEnvKeys would
// refuse that change no code a server runs: NODE_ENV is read by the
// server's own libraries, never by node; PYTHONUNBUFFERED only turns off
// output buffering. docs/rules.md lists them.
var allowedEnvKeys = []string{"NODE_ENV", "PYTHONUNBUFFERED"}

// forbiddenEnvKey reports whether a bundle may not set k, with the group
// and the pattern that forbid it.
func forbiddenEnvKey(k string) (what, pattern string, ok bool) {
	up := strings.ToUpper(k)
	if slices.Contains(allowedEnvKeys, up) {
		return "", "", false
	}
	for _, g := range forbiddenEnvKeys {
		for _, p := range g.patterns {
			if prefix, isPrefix := strings.CutSuffix(p, "*"); isPrefix && strings.HasPrefix(up, prefix) || up == p {
				return g.what, p, true
			}
		}
	}
	return "", "", false
}

// bundlePathKeys are the variables a stdio server may set to paths inside
// the bundle, and to nothing else ({"bundlePath": [...]}): where Python and
// Node find modules. MCPB documents PYTHONPATH=${__dirname}/server/lib as
// the way to ship a Python server's dependencies.
var bundlePathKeys = []string{"PYTHONPATH", "NODE_PATH"}

// BundlePathKey reports whether name is a variable that may be set to
// paths inside the bundle ({"bundlePath": [...]}), exactly as written:
// PYTHONPATH or NODE_PATH. From any other source they stay forbidden
// (EnvKeyForbidden).
func BundlePathKey(name string) bool { return slices.Contains(bundlePathKeys, name) }

// EnvKeyForbidden reports whether a bundle may not set the environment
// variable name (rule env-key-forbidden), and why.
func EnvKeyForbidden(name string) (string, bool) {
	what, pattern, ok := forbiddenEnvKey(name)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%s (%s) configures %s", name, pattern, what), true
}
