package runtimefetch

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
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
		"NPX.CMD\x00a@1.0.0", "npx\x00-y\x00--package=@a/b@next\x00b", "uvx\x00a[x]>=1,<2", "docker\x00run\x00-i\x00localhost:5000/a:v1", "pnpm\x00dlx\x00--package\x00a@1.0.0\x00b", "yarn\x00dlx\x00a@1.0.0", "bunx\x00--bun\x00a@1.0.0",
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
			if u := ce.Unpinned; u != nil {
				// Pinning writes an exact spec where the request was: the
				// command is then never refused as unpinned.
				res := "1.2.3"
				if u.Ecosystem == EcosystemOCI {
					res = "sha256:" + strings.Repeat("0", 64)
				}
				pinned := u.Apply(parts[1:], res)
				f2, err2 := Read(parts[0], pinned)
				var ce2 *CommandError
				if errors.As(err2, &ce2) && (ce2.Rule == RuleUnpinned || ce2.Rule == RuleImageDigest) {
					t.Fatalf("%q pinned as %q is still refused: %v", parts, pinned, err2)
				}
				if err2 == nil && f2 != nil {
					if err := CheckPinned(f2, u.Name+u.Extras(), u.Requested, res); err != nil {
						t.Fatalf("%q pinned as %q: %v", parts, pinned, err)
					}
				}
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

// FuzzPackument feeds arbitrary registry answers and requests to the
// packument parser and npm's pick: it never panics, and a picked version
// is one the packument lists, as strict semver.
func FuzzPackument(f *testing.F) {
	f.Add(packument("a", map[string]string{"latest": "1.0.0"}, "1.0.0", "1.1.0-rc.1"), "latest")
	f.Add(packument("a", map[string]string{"latest": "9.0.0"}, "1.0.0"), "^1")
	f.Add(`{"name":"a","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{}, "v2":{}}}`, ">=1 <3 || 4.x")
	f.Add(`{"name":"a","versions":null}`, "")
	f.Fuzz(func(t *testing.T, doc, req string) {
		p, err := ParsePackument("a", []byte(doc))
		if err != nil {
			return
		}
		v, err := PickNPM(p, req)
		if err != nil {
			return
		}
		if _, ok := p.Versions[v]; !ok || pinnedNPM("a@"+v) != nil {
			t.Fatalf("picked %q for %q, which is not a listed exact version", v, req)
		}
	})
}

// FuzzSimpleIndex feeds arbitrary PEP 691 pages and specifiers to the
// index parser and the PEP 440 pick: it never panics, and a picked version
// is one of the page's unyanked versions, exact as berth pins it.
func FuzzSimpleIndex(f *testing.F) {
	f.Add(`{"name":"a","files":[{"filename":"a-1.0-py3-none-any.whl"},{"filename":"a-2.0.tar.gz","yanked":true}]}`, ">=1")
	f.Add(`{"name":"A_b","versions":["1.0rc1"],"files":[{"filename":"a_b-1.0rc1.zip"}]}`, "~=1.0rc1")
	f.Add(`{"name":"a","files":[{"filename":"a-1.0.post1.dev2+loc-py3-none-any.whl"}]}`, "==1.*,!=1.0.1")
	f.Fuzz(func(t *testing.T, doc, req string) {
		vs, err := ParseSimpleIndex("a", []byte(doc))
		if err != nil {
			return
		}
		v, err := PickPyPI("a", vs, req)
		if err != nil {
			return
		}
		if !slices.Contains(vs, v) || !IsExactPyPIVersion(v) {
			t.Fatalf("picked %q for %q, not one of %q", v, req, vs)
		}
	})
}

// FuzzImageManifest feeds arbitrary registry answers to the manifest
// check: it never panics, and an accepted answer's digest is the sha256 of
// its bytes.
func FuzzImageManifest(f *testing.F) {
	f.Add("application/vnd.oci.image.index.v1+json", "", []byte(`{"schemaVersion":2,"manifests":[]}`))
	f.Add("application/vnd.docker.distribution.manifest.v2+json; charset=utf-8", "sha256:00", []byte(`{"schemaVersion":2}`))
	f.Fuzz(func(t *testing.T, ct, stated string, data []byte) {
		d, err := CheckImageManifest(ct, stated, data)
		if err != nil {
			return
		}
		sum := sha256.Sum256(data)
		if d != "sha256:"+hex.EncodeToString(sum[:]) {
			t.Fatalf("digest %s is not the bytes'", d)
		}
	})
}
