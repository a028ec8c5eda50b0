package runtimefetch

import (
	"strings"
	"testing"
)

// TestRead reads commands the way berth runs them: the accepted
// forms give their one package; everything else of a package manager,
// package runner or runtime that downloads code, and every shell or
// wrapper, is refused with its own rule.
func TestRead(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, c := range []struct {
		argv string // command and args, split on spaces
		want string // "tool|package|registry", "" for a plain program, or "!rule" and a part of the message
	}{
		{"node server.js", ""},
		{"${bundle}/bin/notes-server --root", ""},
		{"python3 -u ${bundle}/server.py", ""},
		{"python -c print(1)", "!inline-code (\"-c\")"},

		// npx and npm exec.
		{"npx -y @acme/notes@1.2.3 stdio --flag", "npx|@acme/notes@1.2.3|https://registry.npmjs.org/"},
		{"npx -y -- acme@1.2.3 --registry=x", "npx|acme@1.2.3|https://registry.npmjs.org/"},
		{"npx --package=acme@1.2.3 notes --any", "npx|acme@1.2.3|https://registry.npmjs.org/"},
		{"npx -p acme@1.2.3 notes", "npx|acme@1.2.3|https://registry.npmjs.org/"},
		{"npx -y acme@latest", "!runtime-fetch-unpinned \"latest\" is not an exact semver"},
		{"npx acme@^1.2", "!runtime-fetch-unpinned not an exact semver"},
		{"npx acme@01.2.3", "!runtime-fetch-unpinned not an exact semver"},
		{"npx acme", "!runtime-fetch-unpinned has no version"},
		{"npx x@npm:evil@1.0.0", "!runtime-fetch-unpinned not a plain npm package name"},
		{"npx -y", "!runtime-fetch-packages no package to run"},
		{"npx --package=a@1.0.0 -p b@1.0.0 notes", "!runtime-fetch-packages more than one package"},
		{"npx --package=a@1.0.0 b@latest", "!runtime-fetch-packages not the plain name of a program"},
		{"npx --package=a@1.0.0", "!runtime-fetch-packages no program of it"},
		{"npx -c evil", "!runtime-fetch-option shell command line"},
		{"npx --registry=https://r.example acme@1.2.3", "!runtime-fetch-option where the package comes from"},
		{"npx --userconfig ./npmrc acme@1.2.3", "!runtime-fetch-option npm configuration"},
		{"npx --node-options=--require=${workspace}/inject.js acme@1.0.0", "!runtime-fetch-option --node-options is refused"},
		{"npx --script-shell=/bin/sh acme@1.0.0", "!runtime-fetch-option --script-shell is refused"},
		{"npx --shell sh acme@1.0.0", "!runtime-fetch-option --shell is refused"},
		{"npx --reg=https://r.example acme@1.0.0", "!runtime-fetch-option \"--reg\" is not an option berth accepts"},
		{"npx --yes=true acme@1.0.0", "!runtime-fetch-option takes no value"},
		{"npx -yq acme@1.0.0", "!runtime-fetch-option -yq"},
		{"npx --foo acme@1.2.3 evil", "!runtime-fetch-option --foo"},
		{"NPX evil@1.0.0", "npx|evil@1.0.0|https://registry.npmjs.org/"},
		{"npx.cmd evil", "!runtime-fetch-unpinned npx runs \"evil\""},
		{"NPX.EXE -y a@latest", "!runtime-fetch-unpinned"},
		{"${workspace}/node_modules/.bin/npx -y a@latest", "!runtime-fetch-unpinned"},
		{"${bundle}/bin/npx -y a@1.0.0", "npx|a@1.0.0|https://registry.npmjs.org/"},
		{"npm exec -y -- acme@1.2.3 --flag", "npm exec|acme@1.2.3|https://registry.npmjs.org/"},
		{"npm x -- acme@1.2.3", "npm x|acme@1.2.3|https://registry.npmjs.org/"},
		{"npm exec --package=acme@1.2.3 -- notes", "npm exec|acme@1.2.3|https://registry.npmjs.org/"},
		{"npm exe -y cowsay@latest", "!runtime-fetch-form the subcommand \"exe\""},
		{"npm exe -y cowsay@1.0.0", "!runtime-fetch-form the subcommand \"exe\""},
		{"npm -- exec cowsay@1.0.0", "!runtime-fetch-form the option \"--\" before the subcommand"},
		{"npm --yes exec -- evil@1.0.0", "!runtime-fetch-form before the subcommand"},
		{"npm create x", "!runtime-fetch-form the subcommand \"create\""},
		{"npm init x", "!runtime-fetch-form the subcommand \"init\""},
		{"npm run start", "!runtime-fetch-form the subcommand \"run\""},
		{"npm start", "!runtime-fetch-form the subcommand \"start\""},
		{"npm", "!runtime-fetch-form no subcommand"},
		{"npm exec a@1.0.0 --package=b@latest", "!runtime-fetch-form must follow \"--\""},
		{"npm exec -y a@1.0.0", "!runtime-fetch-form must follow \"--\""},

		// pnpm, yarn, bun.
		{"pnpm dlx acme@1.2.3 --silent", "pnpm dlx|acme@1.2.3|https://registry.npmjs.org/"},
		{"pnpx acme@1.2.3", "pnpx|acme@1.2.3|https://registry.npmjs.org/"},
		{"pnpm --silent dlx evil", "!runtime-fetch-form before the subcommand"},
		{"pnpm dlx --shell-mode evil", "!runtime-fetch-option shell command line"},
		{"pnpm exec acme", "!runtime-fetch-form the subcommand \"exec\""},
		{"yarn dlx acme@1.2.3", "yarn dlx|acme@1.2.3|https://registry.npmjs.org/"},
		{"yarn dlx -p acme@1.2.3 notes", "yarn dlx|acme@1.2.3|https://registry.npmjs.org/"},
		{"yarn start", "!runtime-fetch-form the subcommand \"start\""},
		{"bunx --bun acme@1.2.3", "bunx|acme@1.2.3|https://registry.npmjs.org/"},
		{"bun x evil", "!runtime-fetch-unpinned bun x runs \"evil\""},
		{"bun ${bundle}/server.js", "!runtime-fetch-form the subcommand"},
		{"bun run ${bundle}/server.js", "!runtime-fetch-form the subcommand \"run\""},

		// deno.
		{"deno run -A npm:acme@1.2.3 --port=1", "deno run|npm:acme@1.2.3|https://registry.npmjs.org/"},
		{"deno run --allow-net=api.example --allow-read jsr:@acme/notes@1.2.3", "deno run|jsr:@acme/notes@1.2.3|https://jsr.io/"},
		{"deno run npm:x", "!runtime-fetch-unpinned has no version"},
		{"deno run ${bundle}/server.ts", "!runtime-fetch-unpinned not an npm: or jsr: package"},
		{"deno run https://deno.land/x/evil/mod.ts", "!runtime-fetch-unpinned not an npm: or jsr: package"},
		{"deno run --allow-import npm:acme@1.2.3", "!runtime-fetch-option --allow-import is refused"},
		{"deno run --config=x.json npm:acme@1.2.3", "!runtime-fetch-option --config is refused"},
		{"deno npm:acme@1.2.3", "!runtime-fetch-form the subcommand \"npm:acme@1.2.3\""},
		{"deno x acme@1.2.3", "!runtime-fetch-form the subcommand \"x\""},
		{"dx acme@1.2.3", "!runtime-fetch-form berth accepts no form of \"dx\""},

		// uv, pipx.
		{"uvx mcp-server-fetch==2025.4.7", "uvx|mcp-server-fetch==2025.4.7|https://pypi.org/simple/"},
		{"uvx tool@1.0 --with evil", "uvx|tool@1.0|https://pypi.org/simple/"},
		{"uvx --from tool==1.0 cmd --x", "uvx|tool==1.0|https://pypi.org/simple/"},
		{"uvx -q --python 3.12 tool==1.0", "uvx|tool==1.0|https://pypi.org/simple/"},
		{"uvx --python=/usr/bin/python3 tool==1.0", "!runtime-fetch-option only a Python version"},
		{"uvx --with dep==1.0 tool==2.0", "!runtime-fetch-option --with is refused"},
		{"uvx --index-url https://evil tool==2.0", "!runtime-fetch-option --index-url is refused"},
		{"uvx --extra-index-url=https://evil tool==2.0", "!runtime-fetch-option --extra-index-url is refused"},
		{"uvx --find-links ./wheels tool==2.0", "!runtime-fetch-option --find-links is refused"},
		{"uvx --overrides o.txt tool==2.0", "!runtime-fetch-option --overrides is refused"},
		{"uvx --constraints c.txt tool==2.0", "!runtime-fetch-option --constraints is refused"},
		{"uvx --config-file ./uv.toml tool==2.0", "!runtime-fetch-option --config-file is refused"},
		{"uvx --with-requirements req.txt tool==1.0", "!runtime-fetch-option --with-requirements is refused"},
		{"uvx tool@latest", "!runtime-fetch-unpinned \"latest\" is not one exact version"},
		{"uvx tool>=1", "!runtime-fetch-unpinned has no version"},
		{"uvx git+https://github.com/acme/tool", "!runtime-fetch-unpinned has no version"},
		{"uvx --from tool==1.0", "!runtime-fetch-packages no program of it"},
		{"uv tool run tool==1.0", "uv tool run|tool==1.0|https://pypi.org/simple/"},
		{"uv -q tool run evil", "!runtime-fetch-form before the subcommand"},
		{"uv tool --quiet run evil", "!runtime-fetch-form"},
		{"uv run server.py", "!runtime-fetch-form the subcommand \"run\""},
		{"uv run --with evil server.py", "!runtime-fetch-form the subcommand \"run\""},
		{"pipx run --spec tool==1.0 cmd", "pipx run|tool==1.0|https://pypi.org/simple/"},
		{"pipx run tool==1.0", "pipx run|tool==1.0|https://pypi.org/simple/"},
		{"pipx --verbose run evil", "!runtime-fetch-form before the subcommand"},
		{"pipx run --pip-args=evil tool==1.0", "!runtime-fetch-option --pip-args is refused"},
		{"pipx run --index-url https://evil tool==1.0", "!runtime-fetch-option --index-url is refused"},
		{"pip install evil", "!runtime-fetch-form berth accepts no form of \"pip\""},
		{"pip3.12 install evil", "!runtime-fetch-form berth accepts no form of \"pip3.12\""},
		{"poetry run server", "!runtime-fetch-form berth accepts no form"},
		{"python3 -m pip install evil", "!runtime-fetch-form -m \"pip\" runs a package manager"},
		{"python3.12 -Im pip install evil", "!runtime-fetch-form -m \"pip\""},
		{"python -mpipx run evil", "!runtime-fetch-form -m \"pipx\""},
		{"python -X dev -m uv tool run evil", "!runtime-fetch-form -m \"uv\""},
		{"python -m http.server", ""},

		// go, cargo, gem, corepack.
		{"go run golang.org/x/tools/gopls@v0.16.0 serve", "go run|golang.org/x/tools/gopls@v0.16.0|https://proxy.golang.org/"},
		{"go run example.com/m/v2/cmd/x@v2.0.0-20240101000000-abcdefabcdef", "go run|example.com/m/v2/cmd/x@v2.0.0-20240101000000-abcdefabcdef|https://proxy.golang.org/"},
		{"go run x@latest", "!runtime-fetch-unpinned not a module import path"},
		{"go run example.com/x@latest", "!runtime-fetch-unpinned not one exact module version"},
		{"go run example.com/x@v1.2", "!runtime-fetch-unpinned not one exact module version"},
		{"go run example.com/x@master", "!runtime-fetch-unpinned not one exact module version"},
		{"go run ./cmd/server", "!runtime-fetch-unpinned has no version"},
		{"go run -exec=evil example.com/x@v1.0.0", "!runtime-fetch-option -exec is refused"},
		{"go run -mod=mod example.com/x@v1.0.0", "!runtime-fetch-option -mod is refused"},
		{"go install example.com/x@v1.0.0", "!runtime-fetch-form the subcommand \"install\""},
		{"go1.22.0 run example.com/x@latest", "!runtime-fetch-unpinned"},
		{"cargo run", "!runtime-fetch-form berth accepts no form of \"cargo\""},
		{"gem exec evil", "!runtime-fetch-form berth accepts no form of \"gem\""},
		{"corepack pnpm@9.0.0 dlx x@1.0.0", "!runtime-fetch-form berth accepts no form of \"corepack\""},
		{"node /usr/lib/node_modules/npm/bin/npx-cli.js -y x@latest", "!runtime-fetch-form package manager's own entry script"},
		{"node --report-dir /tmp /usr/lib/node_modules/npm/bin/npx-cli.js -y x@latest", "!runtime-fetch-form package manager's own entry script"},
		{"node --future-option /usr/lib/node_modules/npm/bin/npm-cli.js exec x@latest", "!runtime-fetch-form package manager's own entry script"},
		{"node --require ${bundle}/x.js ${workspace}/node_modules/pnpm/bin/pnpm.cjs dlx x", "!runtime-fetch-form package manager's own entry script"},

		// containers.
		{"docker run -i --rm ghcr.io/acme/notes@" + digest + " --x", "docker run|ghcr.io/acme/notes@" + digest + "|ghcr.io"},
		{"docker run -i --rm -e NOTES_TOKEN -v ${workspace}:/ws:ro -w /ws mcp/fetch:1.0@" + digest, "docker run|mcp/fetch:1.0@" + digest + "|docker.io"},
		{"podman run -i localhost:5000/acme@" + digest, "podman run|localhost:5000/acme@" + digest + "|localhost:5000"},
		{"docker run -i img:latest", "!runtime-fetch-image-digest by its tag \"latest\""},
		{"docker run -i img", "!runtime-fetch-image-digest names no digest"},
		{"docker run -i img@sha256:abc", "!runtime-fetch-image-digest not sha256: and 64"},
		{"docker run --rm ghcr.io/acme/notes@" + digest, "!runtime-fetch-form needs -i"},
		{"docker run -i --privileged img@" + digest, "!runtime-fetch-option --privileged is refused"},
		{"docker run -i -v /:/host img@" + digest, "!runtime-fetch-option mounts something other than the workspace"},
		{"docker run -i -v /var/run/docker.sock:/var/run/docker.sock img@" + digest, "!runtime-fetch-option mounts something other"},
		{"docker run -i -e TOKEN=secret img@" + digest, "!runtime-fetch-option only -e NAME"},
		{"docker run -i --network=host img@" + digest, "!runtime-fetch-option only none, bridge"},
		{"docker run -it img@" + digest, "!runtime-fetch-option -it"},
		{"docker -H tcp://evil run -i img@" + digest, "!runtime-fetch-form before the subcommand"},
		{"docker compose up", "!runtime-fetch-form the subcommand \"compose\""},

		// Shells and wrappers.
		{"sh -c npx -y x@latest", "!inline-code \"sh\" is a shell"},
		{"bash ${bundle}/start.sh", "!command-wrapper"},
		{"env npx -y x@1.0.0", "!command-wrapper \"env\""},
		{"/usr/bin/env node", "!command-wrapper"},
		{"nice npx x@1.0.0", "!command-wrapper"},
		{"nohup x", "!command-wrapper"},
		{"timeout 10 npx x@1.0.0", "!command-wrapper"},
		{"xargs npx", "!command-wrapper"},
		{"stdbuf -o0 npx", "!command-wrapper"},
		{"setsid npx", "!command-wrapper"},
		{"sudo npx", "!command-wrapper"},
		{"doas npx", "!command-wrapper"},
		{"busybox sh -c x", "!command-wrapper"},
		{"zsh", "!command-wrapper"},
		{"dash", "!command-wrapper"},
		{"fish", "!command-wrapper"},
		{"pwsh -c x", "!inline-code command-wrapper"},
		{"cmd.exe /c npx x@latest", "!inline-code command-wrapper"},
		{"CMD /c npx", "!inline-code command-wrapper"},
		{"powershell.exe -Command x", "!inline-code command-wrapper"},
		{"${bundle}/bin/sh -c x", "!inline-code \"${bundle}/bin/sh\" is a shell"},
		{"mise exec node@22 -- node x", "!command-wrapper"},
	} {
		argv := strings.Fields(c.argv)
		f, err := Read(argv[0], argv[1:])
		if rest, ok := strings.CutPrefix(c.want, "!"); ok {
			rule, msg, _ := strings.Cut(rest, " ")
			ce, isCE := err.(*CommandError)
			if !isCE || ce.Rule != rule || !strings.Contains(ce.Message, msg) {
				t.Errorf("%s: error %v, want [%s] containing %q", c.argv, err, rule, msg)
			}
			if isCE && strings.ContainsFunc(ce.Message, func(r rune) bool { return r < ' ' }) {
				t.Errorf("%s: message has a control character: %q", c.argv, ce.Message)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.argv, err)
			continue
		}
		got := ""
		if f != nil {
			got = f.Tool + "|" + f.Package + "|" + f.Registry
		}
		if got != c.want {
			t.Errorf("%s: got %q, want %q", c.argv, got, c.want)
		}
	}
}

// TestPackages: the entry point of a slice reports the same.
func TestPackages(t *testing.T) {
	pkgs, isFetch, err := Packages("npx", []string{"-y", "a@1.0.0"})
	if err != nil || !isFetch || len(pkgs) != 1 || pkgs[0].Package != "a@1.0.0" || pkgs[0].Ecosystem != EcosystemNPM {
		t.Fatalf("Packages = %v, %v, %v", pkgs, isFetch, err)
	}
	if pkgs, isFetch, err := Packages("node", []string{"x.js"}); err != nil || isFetch || pkgs != nil {
		t.Fatalf("Packages(node) = %v, %v, %v", pkgs, isFetch, err)
	}
	if _, isFetch, err := Packages("sh", []string{"-c", "x"}); err == nil || !isFetch {
		t.Fatalf("Packages(sh) = %v, %v", isFetch, err)
	}
}

// Read gives the runner's options, the program named after a package
// option and the arguments after the package: what a staged server runs.
func TestReadArgs(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		args []string
		opts []string
		prog string
		rest []string
	}{
		{"npx", []string{"-y", "@acme/notes@1.2.3", "--root", "/x"}, []string{"-y"}, "", []string{"--root", "/x"}},
		{"npx", []string{"-y", "--package", "@acme/notes@1.2.3", "notes-cli", "serve"}, []string{"-y"}, "notes-cli", []string{"serve"}},
		{"npx", []string{"--package=@acme/notes@1.2.3", "-y", "notes-cli"}, []string{"-y"}, "notes-cli", []string{}},
		{"npm", []string{"exec", "-y", "--", "a@1.0.0", "b"}, []string{"-y"}, "", []string{"b"}},
		{"bunx", []string{"--bun", "a@1.0.0"}, []string{"--bun"}, "", []string{}},
	} {
		f, err := Read(c.cmd, c.args)
		if err != nil || f == nil {
			t.Fatalf("%s %q: %v", c.cmd, c.args, err)
		}
		if strings.Join(f.Options, " ") != strings.Join(c.opts, " ") || f.Program != c.prog || strings.Join(f.Args, " ") != strings.Join(c.rest, " ") {
			t.Errorf("%s %q: options %q program %q args %q, want %q %q %q", c.cmd, c.args, f.Options, f.Program, f.Args, c.opts, c.prog, c.rest)
		}
	}
}
