package bundle

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// FuzzDecodeManifest checks that strict decoding never panics, that every
// problem is well-formed, and that what decodes cleanly survives a round
// trip through encoding/json unchanged.
func FuzzDecodeManifest(f *testing.F) {
	for _, d := range []string{"stdio-bundled", "remote", "native-tool", "host-program"} {
		data, err := os.ReadFile(filepath.Join(fixtures, "good", d, ManifestFile))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte("\xef\xbb\xbf{}"))
	f.Add([]byte(`{"mcpServers":{"x":{"stdio":{"env":{"K":"literal"}}}}} trailing`))
	// The forms of issue 9: runtime fetches, wrappers, env keys, numbers,
	// control characters, ports.
	for _, name := range []string{"fetch-npm-exe-abbrev", "fetch-sh-c-npx", "fetch-npx-node-options", "fetch-docker-run-tag",
		"fetch-uv-run-with", "fetch-npx-cwd-workspace", "env-kin", "manifest-version-fraction", "manifest-version-exponent",
		"control-char-nul", "control-char-arg", "remote-port-range"} {
		data, err := os.ReadFile(filepath.Join(fixtures, "bad", name, ManifestFile))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"manifestVersion":1e0,"name":"a","version":"1.0.0","description":"d\u0000","mcpServers":{"s":{"stdio":{"command":"npx","args":["-y","a@1.0.0"]}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, ps := DecodeManifest(data)
		for _, p := range ps {
			if p.Rule == "" || p.Message == "" || p.Path == "" {
				t.Fatalf("malformed problem %+v", p)
			}
		}
		if len(ps) > 0 || m == nil {
			return
		}
		// A clean decode must agree with encoding/json on the same input.
		var std Manifest
		if err := json.Unmarshal(data, &std); err != nil {
			t.Fatalf("strict decode accepted what encoding/json rejects: %v", err)
		}
		a, _ := json.Marshal(m)
		b, _ := json.Marshal(&std)
		if string(a) != string(b) {
			t.Fatalf("strict decode differs from encoding/json:\n%s\n%s", a, b)
		}
		again, ps2 := DecodeManifest(a)
		if len(ps2) > 0 {
			t.Fatalf("re-encoded manifest does not decode: %v", ps2)
		}
		c, _ := json.Marshal(again)
		if string(a) != string(c) {
			t.Fatalf("round trip changed the manifest:\n%s\n%s", a, c)
		}
	})
}

// FuzzExtract feeds arbitrary archives to Extract and checks that nothing
// is ever written outside the destination, and that an archive extracted
// without problems stays within the size cap. (Symlink targets are checked
// by ReadTree, after extraction.)
func FuzzExtract(f *testing.F) {
	for _, name := range []string{"archive-traversal.tar.gz", "archive-traversal.zip", "archive-write-through-symlink.tar.gz", "archive-duplicate.zip", "archive-hard-link.tar.gz", "archive-symlink-escapes.zip",
		"archive-windows-reserved.zip", "archive-windows-reserved-dir.tar.gz", "archive-trailing-dot.tar.gz", "archive-trailing-space.zip", "archive-colon.tar.gz"} {
		data, err := os.ReadFile(filepath.Join(fixtures, "bad", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, strings.HasSuffix(name, ".zip"))
	}
	f.Fuzz(func(t *testing.T, data []byte, isZip bool) {
		parent := t.TempDir()
		name := filepath.Join(parent, "in.tar.gz")
		if isZip {
			name = filepath.Join(parent, "in.zip")
		}
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
		dest := filepath.Join(parent, "dest")
		os.Mkdir(dest, 0o755)
		lim := &Limits{MaxTotalSize: 4 << 20, MaxEntries: 1000}
		ps, err := Extract(context.Background(), name, dest, lim)
		if err != nil {
			t.Skip(err)
		}
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			if e.Name() != "dest" && e.Name() != filepath.Base(name) {
				t.Fatalf("extraction wrote %s outside the destination", e.Name())
			}
		}
		if len(ps) > 0 {
			return
		}
		tree, _, err := ReadTree(context.Background(), dest, lim)
		if err != nil {
			t.Fatal(err)
		}
		if tree.Listing != nil && tree.Listing.TotalSize() > lim.MaxTotalSize {
			t.Fatalf("extracted %d bytes past the cap", tree.Listing.TotalSize())
		}
	})
}

// FuzzStdioFetch feeds arbitrary commands to the reader of runtime
// fetches: it never panics; a refusal is a *CommandError with a known rule,
// a field and a message that prints no control character (so bundle text
// is quoted); an accepted fetch has exactly one package, which is one of
// the arguments and passes its ecosystem's pin check.
func FuzzStdioFetch(f *testing.F) {
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
		fe, err := StdioFetch(&Stdio{Command: parts[0], Args: parts[1:]})
		if err != nil {
			ce, ok := err.(*CommandError)
			if !ok || !strings.HasPrefix(ce.Rule, "runtime-fetch-") && ce.Rule != RuleCommandWrapper || (ce.Field != "command" && ce.Field != "args") || ce.Message == "" {
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
