package bundle

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecodeManifest checks that strict decoding never panics, that every
// problem is well-formed, and that what decodes cleanly survives a round
// trip through encoding/json unchanged.
func FuzzDecodeManifest(f *testing.F) {
	for _, d := range []string{"stdio-bundled", "remote", "remote-oauth", "native-tool", "host-program", "sandboxed"} {
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
		"control-char-nul", "control-char-arg", "remote-port-range",
		"oauth-bearer", "oauth-scope-space", "oauth-client-id-secret", "oauth-issuer-query", "oauth-unknown-field"} {
		data, err := os.ReadFile(filepath.Join(fixtures, "bad", name, ManifestFile))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"manifestVersion":1e0,"name":"a","version":"1.0.0","description":"d\u0000","mcpServers":{"s":{"stdio":{"command":"npx","args":["-y","a@1.0.0"]}}}}`))
	// Sandbox declarations (issue 22): every field, unknown fields, wrong
	// types, nulls.
	for _, sb := range []string{
		`{"filesystem":{"read":["${home}/.config/a","${workspace}"],"write":["${cache}","${tmp}"]},"network":{"mode":"hosts","hosts":["api.example.com:443","*.x.example:8443","[::1]:1"]}}`,
		`{"network":{"mode":"unrestricted","reason":"crawls"}}`,
		`{"network":{"mode":"none","hosts":[]},"filesystem":{}}`,
		`{"filesystem":{"exec":["${bundle}"]}}`,
		`{"network":{"mode":1}}`,
		`{"network":null}`,
		`{"filesystem":{"write":"${bundle}"}}`,
	} {
		f.Add([]byte(`{"manifestVersion":1,"name":"a","version":"1.0.0","description":"d","mcpServers":{"s":{"stdio":{"command":"node"},"sandbox":` + sb + `}},"nativeTools":{"t":{"executable":"${bundle}/t","sandbox":` + sb + `}}}`))
	}
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
