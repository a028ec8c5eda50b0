package bundle

import (
	"slices"
	"strings"
	"testing"
)

func TestFetchedPackages(t *testing.T) {
	for _, c := range []struct {
		argv string // command and args, split on spaces
		want string // the pinned packages, or "!" and a part of the error
	}{
		{"node server.js", ""},
		{"npx -y @acme/notes@1.2.3 stdio", "@acme/notes@1.2.3"},
		{"npx --registry https://r.example -y acme@1.2.3", "acme@1.2.3"},
		{"npx --package=acme@1.2.3 -p tool@2.0.0-rc.1 notes", "acme@1.2.3 tool@2.0.0-rc.1"},
		{"npx -- acme@1.2.3", "acme@1.2.3"},
		{"npx -y acme@latest", "!\"latest\" is not an exact semver"},
		{"npx acme@^1.2", "!not an exact semver"},
		{"npx acme@1.0.0-..", "!not an exact semver"},
		{"npx acme@01.2.3", "!not an exact semver"},
		{"npx acme", "!has no version"},
		{"npx -y", "!no package to run"},
		{"npx -c evil", "!shell command line"},
		{"pnpm dlx --shell-mode evil", "!shell command line"},
		// An option berth does not know may take the next argument as its
		// value; then the package that runs is the one after it.
		{"npx --foo acme@1.2.3 evil", "!does not know the npx option \"--foo\""},
		{"npx --foo=bar acme@1.2.3", "acme@1.2.3"},
		{"npx --prefix x@1.2.3 evil", "!runs \"evil\", which has no version"},
		// Global options before the subcommand, aliases, and the spellings
		// that run the same program on macOS and Windows.
		{"pnpm --silent dlx evil", "!pnpm dlx runs \"evil\""},
		{"npm --yes exec evil@latest", "!npm exec runs \"evil@latest\""},
		{"npm --registry https://r.example x evil", "!npm x runs \"evil\""},
		{"npm run start", ""},
		{"yarn dlx acme@1.2.3", "acme@1.2.3"},
		{"pnpx evil", "!pnpx runs \"evil\""},
		{"bun x evil", "!bun x runs \"evil\""},
		{"bunx --bun acme@1.2.3", "acme@1.2.3"},
		{"NPX evil", "!npx runs \"evil\""},
		{"npx.cmd evil", "!npx runs \"evil\""},
		{"uvx mcp-server-fetch==2025.4.7", "mcp-server-fetch==2025.4.7"},
		{"uvx tool@1.0 --with evil", "tool@1.0"},
		{"uvx --with dep==1.0 tool==2.0", "tool==2.0 dep==1.0"},
		{"uvx --from tool==1.0 cmd", "tool==1.0"},
		{"uvx tool@latest", "!\"latest\" is not one exact version"},
		{"uvx tool>=1", "!has no version"},
		{"uvx git+https://github.com/acme/tool", "!has no version"},
		{"uvx --refresh-package x==1.0 evil", "!uvx runs \"evil\""},
		{"uvx --unknown x==1.0 evil", "!does not know the uvx option"},
		{"uvx --with-requirements req.txt tool==1.0", "!cannot check"},
		{"uv -q tool run evil", "!uv tool run runs \"evil\""},
		{"uv tool --quiet run evil", "!uv tool run runs \"evil\""},
		{"uv run server.py", ""},
		{"pipx run --spec tool==1.0 cmd", "tool==1.0"},
		{"pipx --verbose run evil", "!pipx run runs \"evil\""},
		{"pipx run --pip-args=evil tool==1.0", "!cannot check"},
	} {
		argv := strings.Fields(c.argv)
		pkgs, _, err := FetchedPackages(argv[0], argv[1:])
		if msg, ok := strings.CutPrefix(c.want, "!"); ok {
			if err == nil || !strings.Contains(err.Error(), msg) {
				t.Errorf("%s: error %v, want one containing %q", c.argv, err, msg)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.argv, err)
			continue
		}
		var got []string
		for _, p := range pkgs {
			got = append(got, p.Package)
		}
		if want := strings.Fields(c.want); !slices.Equal(got, want) {
			t.Errorf("%s: packages %q, want %q", c.argv, got, want)
		}
	}
}
