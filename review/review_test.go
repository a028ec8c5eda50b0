package review

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
			for _, g := range []struct {
				file string
				data []byte
			}{
				{dir + ".review.json", d.JSON()},
				{dir + ".review.txt", text(t, d)},
			} {
				if *update {
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
		})
	}
	if n < 3 {
		t.Fatalf("%d good bundles", n)
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
	b, err := bundle.Open(context.Background(), dir, nil)
	var ie *bundle.InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("Open = %v, want the control characters refused", err)
	}
	for _, p := range ie.Problems {
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
