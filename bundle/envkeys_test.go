package bundle

import (
	"os"
	"strings"
	"testing"
)

func TestForbiddenEnvKey(t *testing.T) {
	for _, k := range []string{
		"LD_AUDIT", "ld_preload", "DYLD_INSERT_LIBRARIES", "BASH_ENV", "ENV", "NODE_PATH", "NODE_OPTIONS",
		"NPM_CONFIG_NODE_OPTIONS", "npm_config_registry", "GIT_SSH_COMMAND", "git_config_global", "PYTHONPATH",
		"PYTHONSTARTUP", "PERL5OPT", "PERLLIB", "RUBYOPT", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "PATH", "Path",
		"HOME", "TMPDIR", "XDG_CONFIG_HOME", "IFS", "PS4", "PROMPT_COMMAND", "SHELLOPTS", "ZDOTDIR", "BUN_INSTALL",
		"DENO_DIR", "UV_INDEX_URL", "PIP_INDEX_URL", "YARN_RC_FILENAME", "PNPM_HOME", "GEM_HOME", "BUNDLE_GEMFILE",
		"CARGO_HOME", "GOFLAGS", "GOPROXY", "goproxy", "GOTOOLCHAIN", "CGO_LDFLAGS", "CC", "DOCKER_HOST",
		"DOTNET_STARTUP_HOOKS", "GCONV_PATH", "GLIBC_TUNABLES", "SSL_CERT_FILE", "OPENSSL_CONF", "RUSTC_WRAPPER",
	} {
		if _, _, ok := forbiddenEnvKey(k); !ok {
			t.Errorf("%s is allowed; it configures code that runs", k)
		}
	}
	for _, k := range []string{
		"NOTES_TOKEN", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "GOTIFY_TOKEN", "LANG", "LC_ALL", "TZ",
		"TERM", "HTTPS_PROXY", "no_proxy", "NPM_TOKEN", "GITHUB_TOKEN", "OPENAI_API_KEY", "ENVIRONMENT", "PATHS_FILE",
		"CCACHE_DIR", "NODEJS_ORG_TOKEN",
	} {
		if what, p, ok := forbiddenEnvKey(k); ok {
			t.Errorf("%s is refused as %s (%s); it configures none of them", k, p, what)
		}
	}
}

// TestForbiddenEnvKeysDocumented: every pattern is listed in the
// env-key-forbidden section of docs/rules.md, and that section lists no
// other.
func TestForbiddenEnvKeysDocumented(t *testing.T) {
	data, err := os.ReadFile("../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(data), "### `"+RuleEnvKeyForbidden+"`")
	if !ok {
		t.Fatal("no env-key-forbidden section")
	}
	sec, _, _ = strings.Cut(sec, "\n**Violation:**")
	table := ""
	for _, line := range strings.Split(sec, "\n") {
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| what") {
			table += line + "\n"
		}
	}
	listed := map[string]bool{}
	for _, f := range strings.Split(table, "`") {
		if f != "" && !strings.ContainsAny(f, " |,") {
			listed[f] = true
		}
	}
	code := map[string]bool{}
	for _, g := range forbiddenEnvKeys {
		if !strings.Contains(table, "| "+g.what+" |") {
			t.Errorf("docs/rules.md has no row for %q", g.what)
		}
		for _, p := range g.patterns {
			code[p] = true
			if !listed[p] {
				t.Errorf("%s is refused but not listed in docs/rules.md", p)
			}
		}
	}
	for p := range listed {
		if !code[p] {
			t.Errorf("docs/rules.md lists %s, which berth does not refuse", p)
		}
	}
}
