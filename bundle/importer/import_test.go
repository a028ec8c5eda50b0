package importer

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
)

const importFixtures = "../../testdata/import"

// TestBadImports opens every source of another format in
// testdata/import/bad and compares its problems with its .want file.
func TestBadImports(t *testing.T) {
	wants, err := filepath.Glob(filepath.Join(importFixtures, "bad", "*.want"))
	if err != nil {
		t.Fatal(err)
	}
	if len(wants) < 40 {
		t.Fatalf("only %d bad imports", len(wants))
	}
	for _, w := range wants {
		t.Run(strings.TrimSuffix(filepath.Base(w), ".want"), func(t *testing.T) {
			want, opts := wantFile(t, w)
			src := badSource(t, w)
			b, problems, err := bundle.Load(context.Background(), src, opts)
			if err != nil {
				t.Fatalf("Load(%s): %v, want problems", src, err)
			}
			defer b.Close()
			if len(problems) == 0 {
				t.Fatalf("Load(%s) found no problems", src)
			}
			checkProblems(t, &bundle.InvalidError{Source: src, Problems: problems}, want)
		})
	}
}

// TestImportRulesHaveFixtures: every rule of the importers has a bad
// fixture that breaks it.
func TestImportRulesHaveFixtures(t *testing.T) {
	wants, _ := filepath.Glob(filepath.Join(importFixtures, "bad", "*.want"))
	covered := map[string]bool{}
	for _, w := range wants {
		lines, _ := wantFile(t, w)
		for _, l := range lines {
			rule, _, _ := strings.Cut(l, "\t")
			covered[rule] = true
		}
	}
	for _, r := range bundle.Rules() {
		for _, prefix := range []string{"mcpb-", "claude-plugin-", "registry-", "import"} {
			if strings.HasPrefix(r.ID, prefix) && !covered[r.ID] {
				t.Errorf("rule %s has no bad fixture in testdata/import/bad", r.ID)
			}
		}
	}
}

// TestGoodImports: every good source of another format is valid, and
// WriteTree writes a bundle with the same digest, which is read as a
// berth bundle with the same manifest; writing that again keeps the
// digest.
func TestGoodImports(t *testing.T) {
	srcs, _ := filepath.Glob(filepath.Join(importFixtures, "good", "*"))
	if len(srcs) < 5 {
		t.Fatalf("only %d good imports", len(srcs))
	}
	ctx := context.Background()
	for _, src := range srcs {
		t.Run(filepath.Base(src), func(t *testing.T) {
			b, err := bundle.Open(ctx, src, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if b.Import == nil || b.Manifest.ImportedFrom == nil || b.Import.Format != b.Manifest.ImportedFrom.Format {
				t.Fatalf("import %+v, manifest %+v", b.Import, b.Manifest.ImportedFrom)
			}
			out := filepath.Join(t.TempDir(), "out")
			if err := b.WriteTree(ctx, out); err != nil {
				t.Fatal(err)
			}
			again, err := bundle.Open(ctx, out, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			if again.Digest != b.Digest || again.Import != nil {
				t.Fatalf("the written bundle has digest %s (import %+v), the source %s", again.Digest, again.Import, b.Digest)
			}
			if a, c := bundle.EncodeManifest(again.Manifest), bundle.EncodeManifest(b.Manifest); !bytes.Equal(a, c) {
				t.Fatalf("the written manifest differs:\n%s\n%s", a, c)
			}
			if len(again.Notes) != 1 || !strings.Contains(again.Notes[0], "imported from") {
				t.Errorf("notes %q", again.Notes)
			}
			out2 := filepath.Join(t.TempDir(), "out")
			if err := again.WriteTree(ctx, out2); err != nil {
				t.Fatal(err)
			}
			third, err := bundle.Open(ctx, out2, nil)
			if err != nil || third.Digest != b.Digest {
				t.Fatalf("re-import: %v, digest %s", err, third.Digest)
			}
			third.Close()
			if err := b.WriteTree(ctx, out); err == nil {
				t.Fatal("WriteTree over an existing directory succeeded")
			}
		})
	}
}

// The signed and the unsigned .mcpb hold the same zip: the same bundle,
// the same digest; only the signed one reports its (self-signed, valid)
// signature block.
func TestMCPBSignature(t *testing.T) {
	ctx := context.Background()
	open := func(name string) *bundle.Bundle {
		b, err := bundle.Open(ctx, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	unsigned := open(filepath.Join(importFixtures, "good", "tiny-tools-0.4.1.mcpb"))
	signedPath := filepath.Join(importFixtures, "good", "tiny-tools-0.4.1-signed.mcpb")
	signed := open(signedPath)
	if unsigned.Digest != signed.Digest {
		t.Fatalf("digests differ: %s %s", unsigned.Digest, signed.Digest)
	}
	if unsigned.Import.Signature != nil {
		t.Fatalf("unsigned: %+v", unsigned.Import.Signature)
	}
	s := signed.Import.Signature
	if s == nil || !s.Verifies || !s.SelfSigned || !strings.Contains(s.Subject, "MCPB Self-Signed Certificate") || len(s.Fingerprint) != 64 {
		t.Fatalf("signature %+v", s)
	}

	// A byte of the zip changed after signing: the zip still reads (the
	// byte is in the archive comment area we add), the signature does not
	// verify.
	data, err := os.ReadFile(signedPath)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndex(data, []byte(mcpbSigStart))
	tampered := slices.Clone(data)
	// The zip's last central directory entry's name: "server/tiny-server".
	j := bytes.LastIndex(tampered[:i], []byte("tiny-server"))
	tampered[j+len("tiny-")] = 'S' // server/tiny-Server: same length
	name := filepath.Join(t.TempDir(), "tampered.mcpb")
	os.WriteFile(name, tampered, 0o644)
	b, ps, err := bundle.Load(ctx, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Import == nil || b.Import.Signature == nil || b.Import.Signature.Verifies || !strings.Contains(b.Import.Signature.Problem, "changed after it was signed") {
		t.Fatalf("tampered: %+v (%v)", b.Import, ps)
	}
}

// signatureVariants are .mcpb files whose signature block is broken.
func signatureVariants(t *testing.T) map[string][]byte {
	data, err := os.ReadFile(filepath.Join(importFixtures, "good", "tiny-tools-0.4.1-signed.mcpb"))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndex(data, []byte(mcpbSigStart))
	zipPart, block := data[:i], data[i:]
	doubled := append(slices.Clone(data), block...)
	// A length field that claims more than the file holds.
	lying := slices.Clone(data)
	binary.LittleEndian.PutUint32(lying[i+len(mcpbSigStart):], uint32(len(block)))
	return map[string][]byte{
		"mcpb-signature-truncated.mcpb":  data[:len(data)-100],
		"mcpb-signature-doubled.mcpb":    doubled,
		"mcpb-signature-trailed.mcpb":    append(slices.Clone(data), "trailing bytes\n"...),
		"mcpb-signature-no-end.mcpb":     append(slices.Clone(zipPart), block[:len(block)-len(mcpbSigEnd)]...),
		"mcpb-signature-bad-length.mcpb": lying,
	}
}

// mcpbEntries are the entries of the fixture's zip, for archives built
// from it.
func mcpbEntries(t *testing.T) []arEntry {
	t.Helper()
	zr, err := zip.OpenReader(filepath.Join(importFixtures, "good", "tiny-tools-0.4.1.mcpb"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var out []arEntry
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.ReadFrom(rc)
		rc.Close()
		out = append(out, arEntry{name: f.Name, typ: tar.TypeReg, mode: int64(f.Mode().Perm()), body: b.Bytes()})
	}
	return out
}

// TestGenerateImportFixtures rewrites the archive fixtures of
// testdata/import/bad with -update-fixtures; without it, it checks that
// each exists.
func TestGenerateImportFixtures(t *testing.T) {
	dir := filepath.Join(importFixtures, "bad")
	type fixture struct {
		want []string
		make func(path string)
	}
	fxs := map[string]fixture{
		"mcpb-zip-slip.mcpb": {[]string{"archive-path-traversal\t\"../../berth-evil\""}, func(p string) {
			writeZip(t, p, append(mcpbEntries(t), arEntry{name: "../../berth-evil", typ: tar.TypeReg, mode: 0o644, body: []byte("x")}), nil)
		}},
		"mcpb-symlink.mcpb": {[]string{"symlink-escapes\tserver/passwd"}, func(p string) {
			writeZip(t, p, append(mcpbEntries(t), arEntry{name: "server/passwd", typ: tar.TypeSymlink, linkname: "/etc/passwd"}), nil)
		}},
	}
	for name, data := range signatureVariants(t) {
		fxs[name] = fixture{[]string{"mcpb-signature-block\t."}, func(p string) { os.WriteFile(p, data, 0o644) }}
	}
	for file, f := range fxs {
		path := filepath.Join(dir, file)
		if *updateFixtures {
			f.make(path)
			writeWant(t, path+".want", "", f.want...)
			continue
		}
		for _, p := range []string{path, path + ".want"} {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("fixture missing (run go test ./bundle/importer -run TestGenerateImportFixtures -update-fixtures): %v", err)
			}
		}
	}
}

// A source directory is never written to: the generated berth.json goes
// into a copy.
func TestImportDoesNotWriteSource(t *testing.T) {
	src := filepath.Join(importFixtures, "good", "mcpb-node")
	before := listFiles(t, src)
	b, err := bundle.Open(context.Background(), src, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := b.Dir
	b.Close()
	if after := listFiles(t, src); !slices.Equal(before, after) {
		t.Fatalf("the source changed: %q -> %q", before, after)
	}
	if dir == src || strings.HasPrefix(dir, src) {
		t.Fatalf("the bundle was read in place: %s", dir)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Close left %s: %v", dir, err)
	}
}

func listFiles(t *testing.T, dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		out = append(out, p)
		return err
	})
	return out
}

// A server.json given as bytes (as a registry catalog has it) is the same
// bundle as the file.
func TestOpenServerJSON(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(importFixtures, "good", "registry-weather.json")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	a, err := bundle.Open(ctx, file, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenServerJSON(ctx, "io.github.acme/weather 1.4.0 from a test", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if a.Digest != b.Digest || b.Manifest.Name != "io-github-acme-weather" || b.Manifest.ImportedFrom.SourceName != "io.github.acme/weather" {
		t.Fatalf("%s %s %+v", a.Digest, b.Digest, b.Manifest)
	}
	_, err = OpenServerJSON(ctx, "broken entry", []byte(`{"name": 1}`), nil)
	var ie *bundle.InvalidError
	if !errors.As(err, &ie) || ie.Source != "broken entry" {
		t.Fatalf("err %v", err)
	}
}

func TestRegistryPluginName(t *testing.T) {
	for in, want := range map[string]string{
		"io.github.acme/weather":                           "io-github-acme-weather",
		"com.Example/My_Server":                            "com-example-my-server",
		"io.github.x/" + strings.Repeat("a", 80):           "io-github-x-" + strings.Repeat("a", 43) + "-",
		"io.github.modelcontextprotocol/server-everything": "io-github-modelcontextprotocol-server-everything",
	} {
		got, err := RegistryPluginName(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if strings.HasSuffix(want, "-") {
			if !strings.HasPrefix(got, want) || len(got) != 64 || !bundle.IsValidName(got) {
				t.Errorf("%s -> %s", in, got)
			}
			continue
		}
		if got != want {
			t.Errorf("%s -> %s, want %s", in, got, want)
		}
	}
	for _, in := range []string{"", "weather", "a/", "-/_", "io.github.acme/we/ather", "io.github.acme/wea ther", "x/" + strings.Repeat("a", 199)} {
		if got, err := RegistryPluginName(in); err == nil {
			t.Errorf("%q -> %q, want an error", in, got)
		}
	}
}

// The runtimes an MCPB declares are checked with the prober of Options.
func TestMCPBRuntimes(t *testing.T) {
	dir := t.TempDir()
	data, _ := os.ReadFile(filepath.Join(importFixtures, "bad", "mcpb-runtime", "manifest.json"))
	data = bytes.Replace(data, []byte(`"sixteen"`), []byte(`">=18.0.0"`), 1)
	os.MkdirAll(filepath.Join(dir, "server"), 0o755)
	os.WriteFile(filepath.Join(dir, "server", "index.js"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "manifest.json"), data, 0o644)
	for _, c := range []struct {
		version string
		err     error
		ok      bool
	}{{"22.3.0", nil, true}, {"16.20.0", nil, false}, {"", errors.New("node is not on PATH"), false}} {
		b, err := bundle.Open(context.Background(), dir, &bundle.Options{RuntimeVersion: func(_ context.Context, name string) (string, error) {
			if name != "node" {
				t.Errorf("probed %s", name)
			}
			return c.version, c.err
		}})
		if err == nil {
			b.Close()
		}
		if (err == nil) != c.ok {
			t.Errorf("node %q: %v", c.version, err)
		}
		if err != nil && !strings.Contains(err.Error(), "manifest.json: compatibility.runtimes.node") {
			t.Errorf("node %q: %v", c.version, err)
		}
	}
}

// An importer reads the source's files inside the bundle only: a symlink
// that leads out of it (absolute, or relative through ..) is never
// followed, so nothing of the file it points at reaches a problem, a note
// or the review. The symlink itself is a problem, as in any bundle.
func TestImportReadsNothingOutsideTheBundle(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("creating symlinks needs a privilege on Windows")
	}
	const secret = "OUTSIDE-SECRET-7f3a"
	outside := t.TempDir()
	write := func(dir, rel, data string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(outside, "plugin.json", `{"name": "`+secret+`", "version": "`+secret+`"}`)
	write(outside, "servers.json", `{"mcpServers": {"`+secret+`": {"command": "`+secret+`"}}}`)
	write(outside, "manifest.json", `{"manifest_version": "`+secret+`"}`)
	write(outside, "hooks.json", `{"hooks": {"`+secret+`": []}}`)
	write(outside, "skill-"+secret+"/SKILL.md", "x")
	plugin := `{"name": "p", "version": "1.0.0", "description": "d"}`
	cases := map[string]func(dir string) error{
		// .claude-plugin/ itself leads out.
		"plugin-dir": func(dir string) error {
			write(dir, ".mcp.json", `{"mcpServers": {}}`)
			return os.Symlink(outside, filepath.Join(dir, ".claude-plugin"))
		},
		// mcpServers names a file through a directory that leads out.
		"servers-path": func(dir string) error {
			write(dir, ".claude-plugin/plugin.json", `{"name": "p", "version": "1.0.0", "description": "d", "mcpServers": "./ext/servers.json"}`)
			rel, _ := filepath.Rel(dir, outside)
			return os.Symlink(rel, filepath.Join(dir, "ext"))
		},
		// hooks and skills through directories that lead out.
		"components": func(dir string) error {
			write(dir, ".claude-plugin/plugin.json", plugin)
			if err := os.Symlink(outside, filepath.Join(dir, "hooks")); err != nil {
				return err
			}
			return os.Symlink(outside, filepath.Join(dir, "skills"))
		},
		// An MCP Bundle whose entry point and manifest lie outside.
		"mcpb": func(dir string) error {
			if err := os.Symlink(outside, filepath.Join(dir, "server")); err != nil {
				return err
			}
			return os.Symlink(filepath.Join(outside, "manifest.json"), filepath.Join(dir, "manifest.json"))
		},
	}
	for name, build := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := build(dir); err != nil {
				t.Fatal(err)
			}
			b, ps, err := bundle.Load(context.Background(), dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			var text strings.Builder
			escapes := false
			for _, p := range ps {
				text.WriteString(p.Path + " " + p.Message + "\n")
				escapes = escapes || p.Rule == bundle.RuleSymlinkEscapes
			}
			text.WriteString(strings.Join(b.Notes, "\n"))
			if b.Manifest != nil {
				text.Write(bundle.EncodeManifest(b.Manifest))
			}
			if strings.Contains(text.String(), secret) {
				t.Fatalf("a file outside the bundle was read:\n%s", text.String())
			}
			if !escapes {
				t.Fatalf("no %s problem:\n%s", bundle.RuleSymlinkEscapes, text.String())
			}
		})
	}
}

// Every problem of the file tree is reported for a source of another
// format, also when the source's manifest could not be converted at all:
// a tree rule added later (path-windows-name) is not lost.
func TestImportKeepsTreeProblems(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows cannot create the file nul.txt")
	}
	for name, files := range map[string]map[string]string{
		"converted":     {".claude-plugin/plugin.json": `{"name": "p", "version": "1.0.0", "description": "d"}`, ".mcp.json": `{"mcpServers": {"s": {"command": "node", "args": ["a.js"]}}}`},
		"not-converted": {".mcp.json": `{"mcpServers": {}}`},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			files["share/nul.txt"] = "x"
			for rel, data := range files {
				p := filepath.Join(dir, filepath.FromSlash(rel))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			b, ps, err := bundle.Load(context.Background(), dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if !slices.ContainsFunc(ps, func(p *bundle.Problem) bool {
				return p.Rule == bundle.RulePathWindowsName && strings.Contains(p.Path, "share/nul.txt")
			}) {
				t.Fatalf("no %s problem at share/nul.txt: %v", bundle.RulePathWindowsName, &bundle.InvalidError{Source: dir, Problems: ps})
			}
		})
	}
}
