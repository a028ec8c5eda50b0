package runtimefetch

import (
	"slices"
	"strings"
	"testing"
	"unicode"
)

// FuzzRead feeds arbitrary commands to the reader of runtime
// fetches: it never panics; a refusal is a *CommandError with a known rule,
// a field and a message that prints no control character (so bundle text
// is quoted); an accepted fetch has exactly one package, which is one of
// the arguments and passes its ecosystem's pin check.
func FuzzRead(f *testing.F) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, argv := range []string{
		"npx\x00-y\x00@acme/notes@1.2.3\x00stdio", "npm\x00exe\x00-y\x00cowsay@latest", "npm\x00--\x00exec\x00cowsay@1.0.0",
		"npm\x00exec\x00a@1.0.0\x00--package=b@latest", "npm\x00exec\x00-y\x00--\x00a@1.0.0", "sh\x00-c\x00npx -y x@latest",
		"env\x00npx\x00x", "go\x00run\x00x@latest", "go\x00run\x00golang.org/x/tools/gopls@v0.16.0", "deno\x00run\x00npm:x",
		"deno\x00run\x00-A\x00jsr:@a/b@1.0.0", "docker\x00run\x00img:latest", "docker\x00run\x00-i\x00-v\x00${workspace}:/ws\x00img@" + digest,
		"uv\x00run\x00--with\x00x\x00s.py", "uvx\x00--from\x00a==1.0\x00b", "pipx\x00run\x00--spec\x00a==1\x00b",
		"npx\x00--node-options=--require=${workspace}/inject.js\x00pkg@1.0.0", "python3\x00-Im\x00pip", "node\x00npx-cli.js",
		"NPX.CMD\x00a@1.0.0", "pnpm\x00dlx\x00--package\x00a@1.0.0\x00b", "yarn\x00dlx\x00a@1.0.0", "bunx\x00--bun\x00a@1.0.0",
	} {
		f.Add(argv)
	}
	f.Fuzz(func(t *testing.T, argv string) {
		parts := strings.Split(argv, "\x00")
		fe, err := Read(parts[0], parts[1:])
		if err != nil {
			ce, ok := err.(*CommandError)
			if !ok || !strings.HasPrefix(ce.Rule, "runtime-fetch-") && ce.Rule != RuleCommandWrapper && ce.Rule != RuleInlineCode || (ce.Field != "command" && ce.Field != "args") || ce.Message == "" {
				t.Fatalf("%q: malformed refusal %#v", parts, err)
			}
			if strings.ContainsFunc(ce.Message, unicode.IsControl) {
				t.Fatalf("%q: the message prints a control character: %q", parts, ce.Message)
			}
			if fe != nil {
				t.Fatalf("%q: both a fetch and an error", parts)
			}
			return
		}
		if fe == nil {
			return
		}
		if !slices.Contains(parts[1:], fe.Package) && !slices.ContainsFunc(parts[1:], func(a string) bool { return strings.HasSuffix(a, "="+fe.Package) }) {
			t.Fatalf("%q: the package %q is none of the arguments", parts, fe.Package)
		}
		var perr error
		switch fe.Ecosystem {
		case EcosystemNPM:
			perr = pinnedNPM(fe.Package)
		case EcosystemJSR:
			perr = pinnedDeno(fe.Package)
		case EcosystemPyPI:
			perr = pinnedPython(fe.Package)
		case EcosystemGo:
			perr = pinnedGo(fe.Package)
		case EcosystemOCI:
			perr = pinnedImage(fe.Package)
		default:
			t.Fatalf("%q: unknown ecosystem %q", parts, fe.Ecosystem)
		}
		if perr != nil && !(fe.Ecosystem == EcosystemNPM && strings.HasPrefix(fe.Package, "npm:") && pinnedDeno(fe.Package) == nil) {
			t.Fatalf("%q: accepted %q, which is not pinned: %v", parts, fe.Package, perr)
		}
		if fe.Registry == "" {
			t.Fatalf("%q: no registry", parts)
		}
	})
}
