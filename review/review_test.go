package review

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/berth-mcp/berth/bundle"
)

var update = flag.Bool("update", false, "rewrite the golden review files")

const good = "../testdata/bundles/good"

func TestGoldenReviews(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(good, "*"))
	n := 0
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		n++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			b, err := bundle.Open(context.Background(), dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			d := New(b)
			checkGolden(t, dir, d)
		})
	}
	if n < 3 {
		t.Fatalf("%d good bundles", n)
	}
}

// checkGolden compares d's JSON and text with base.review.json and
// base.review.txt, or writes them under -update.
func checkGolden(t *testing.T, base string, d *Disclosure) {
	t.Helper()
	for _, g := range []struct {
		file string
		data []byte
	}{
		{base + ".review.json", d.JSON()},
		{base + ".review.txt", text(t, d)},
	} {
		if *update {
			if err := os.MkdirAll(filepath.Dir(g.file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(g.file, g.data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(g.file)
		if err != nil {
			t.Fatalf("%v (run go test ./review -update)", err)
		}
		if !bytes.Equal(g.data, want) {
			t.Errorf("%s differs (run go test ./review -update and read the diff):\n%s", g.file, g.data)
		}
	}
}

func text(t *testing.T, d *Disclosure) []byte {
	var buf bytes.Buffer
	if err := d.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestNoSecretValues sets every variable the fixtures name to a known
// secret and checks that neither form of the review shows it.
func TestNoSecretValues(t *testing.T) {
	const secret = "s3cr3t-value-that-must-never-print"
	for _, v := range []string{"ACME_NOTES_TOKEN", "ACME_TEAM", "ACME_TOKEN"} {
		t.Setenv(v, secret)
	}
	dirs, _ := filepath.Glob(filepath.Join(good, "*"))
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		b, err := bundle.Open(context.Background(), dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := New(b)
		for _, out := range [][]byte{d.JSON(), text(t, d)} {
			if strings.Contains(string(out), secret) {
				t.Fatalf("%s: the review shows a secret value", dir)
			}
		}
		b.Close()
	}
}

func TestHashChangesWithDisclosure(t *testing.T) {
	b, err := bundle.Open(context.Background(), filepath.Join(good, "stdio-bundled"), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := New(b)
	h := d.Hash()
	if !strings.HasPrefix(h, "sha256:") || h != New(b).Hash() {
		t.Fatalf("hash %q not stable", h)
	}
	d.Servers[0].Stdio.Env = append(d.Servers[0].Stdio.Env, EnvVar{Name: "X", FromEnv: "Y"})
	if d.Hash() == h {
		t.Fatal("hash did not change with the disclosure")
	}
}

// TestTextEscapesTerminalControls: a bundle's own strings cannot send
// escape sequences or line breaks to the terminal that shows its review.
func TestTextEscapesTerminalControls(t *testing.T) {
	const evil = "ok\x1b[2J\r\nIt asks for nothing.\u202e\x07"
	m := map[string]any{
		"manifestVersion": 1, "name": "evil", "version": "1.0.0",
		"description": evil, "license": evil,
		"publisher": map[string]any{"name": evil},
		"mcpServers": map[string]any{"s": map[string]any{
			"description": evil,
			"stdio":       map[string]any{"command": "node", "args": []string{"\x1b[8m", evil}},
		}},
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "berth.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	// Validation refuses the control characters (control-character); the
	// review escapes them anyway, and U+202E, which validation lets pass.
	b, problems, err := bundle.Load(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) == 0 {
		t.Fatal("Load found no problem, want the control characters refused")
	}
	for _, p := range problems {
		if p.Rule != bundle.RuleControlCharacter {
			t.Fatalf("unexpected problem %v", p)
		}
	}
	defer b.Close()
	out := string(text(t, New(b)))
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "It asks") {
			t.Errorf("a forged line: %q", line)
		}
		for _, r := range line {
			if r != ' ' && !unicode.IsPrint(r) {
				t.Fatalf("the review prints %U:\n%q", r, out)
			}
		}
	}
	if !strings.Contains(out, `ok\x1b[2J\r\nIt asks for nothing.\u202e\a`) {
		t.Errorf("the escaped text is not shown:\n%s", out)
	}
}

// TestFetchDisclosure: the review says what is downloaded, from where, who
// resolves its dependencies, and that it runs in a directory of berth's.
func TestFetchDisclosure(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	m := map[string]any{
		"manifestVersion": 1, "name": "fetch", "version": "1.0.0", "description": "d",
		"mcpServers": map[string]any{
			"a": map[string]any{"stdio": map[string]any{"command": "npx", "args": []string{"-y", "@acme/notes@1.2.3"}}},
			"b": map[string]any{"stdio": map[string]any{"command": "go", "args": []string{"run", "golang.org/x/tools/gopls@v0.16.0"}}},
			"c": map[string]any{"stdio": map[string]any{"command": "docker", "args": []string{"run", "-i", "--rm", "ghcr.io/acme/notes@" + digest}}},
		},
	}
	data, _ := json.Marshal(m)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "berth.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Open(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	d := New(b)
	want := map[string]Fetch{
		"a": {Tool: "npx", Package: "@acme/notes@1.2.3", Ecosystem: "npm", Registry: "https://registry.npmjs.org/", Dependencies: stagedDependencies, Staged: true},
		"b": {Tool: "go run", Package: "golang.org/x/tools/gopls@v0.16.0", Ecosystem: "go", Registry: "https://proxy.golang.org/", Dependencies: dependencies["go"]},
		"c": {Tool: "docker run", Package: "ghcr.io/acme/notes@" + digest, Ecosystem: "oci", Registry: "ghcr.io", Dependencies: dependencies["oci"]},
	}
	for _, s := range d.Servers {
		if len(s.Stdio.RuntimeFetch) != 1 || s.Stdio.RuntimeFetch[0] != want[s.Name] {
			t.Errorf("server %s: %+v, want %+v", s.Name, s.Stdio.RuntimeFetch, want[s.Name])
		}
		if s.Stdio.Cwd != fetchDir {
			t.Errorf("server %s: directory %q", s.Name, s.Stdio.Cwd)
		}
	}
	out := string(text(t, d))
	for _, line := range []string{
		"from         the npm registry, https://registry.npmjs.org/, unless the operator set a mirror",
		"downloads    @acme/notes@1.2.3 at trust (berth trust, berth install), staged; the server starts offline",
		"dependencies resolved at trust, recorded in the fetch lock",
		"downloads    golang.org/x/tools/gopls@v0.16.0 with go run when it starts, and runs it",
		"from         the Go module proxy, https://proxy.golang.org/",
		"dependencies fixed by the module's go.mod and checked against the Go checksum database",
		"from         the container registry ghcr.io",
		"directory    a new empty directory of berth's",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("the review lacks %q:\n%s", line, out)
		}
	}
}
