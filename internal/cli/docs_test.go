package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/cli.md from the command tree")

// TestCLIDocs keeps docs/cli.md equal to what the command tree says: every
// command, its usage, its help text and its flags.
func TestCLIDocs(t *testing.T) {
	a := &app{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }}
	root := newRootCmd(a)
	root.SetContext(context.Background())
	var b bytes.Buffer
	b.WriteString("# berth command reference\n\n")
	b.WriteString("Generated from the command tree by `go test ./internal/cli -run TestCLIDocs -update-docs`; a test fails when it is out of date.\n\n")
	b.WriteString("```\n" + strings.TrimSpace(root.Long) + "\n```\n\n")
	b.WriteString("Every command takes `-h`/`--help` and `--no-progress`. `BERTH_HOME` sets the state root. Progress bars show only on a terminal, never with `--json`; `NO_COLOR` turns their colours off.\n")
	pd := &payloadDocs{t: t, pkgs: map[string]*docPackage{}}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			fmt.Fprintf(&b, "\n## `%s`\n\n", sub.CommandPath())
			fmt.Fprintf(&b, "%s.\n\n", strings.TrimSuffix(sub.Short, "."))
			fmt.Fprintf(&b, "```\n%s\n```\n", sub.UseLine())
			if sub.Long != "" {
				fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(sub.Long))
			}
			if sub.Example != "" {
				fmt.Fprintf(&b, "\nExamples:\n\n```\n%s\n```\n", sub.Example)
			}
			var flags []string
			sub.LocalFlags().VisitAll(func(f *pflag.Flag) {
				if f.Hidden || f.Name == "help" {
					return
				}
				name := "--" + f.Name
				if f.Shorthand != "" {
					name = "-" + f.Shorthand + ", " + name
				}
				if t := f.Value.Type(); t != "bool" {
					name += " " + strings.ToUpper(t)
				}
				line := fmt.Sprintf("- `%s`: %s", name, f.Usage)
				if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" {
					line += fmt.Sprintf(" (default `%s`)", f.DefValue)
				}
				flags = append(flags, line)
			})
			if len(flags) > 0 {
				b.WriteString("\nFlags:\n\n" + strings.Join(flags, "\n") + "\n")
			}
			if pt, ok := a.payloads[sub]; ok {
				pd.render(&b, pt)
			}
			walk(sub)
		}
	}
	walk(root)
	const path = "../../docs/cli.md"
	if *updateDocs {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(want, b.Bytes()) {
		t.Fatalf("docs/cli.md is out of date; run: go test ./internal/cli -run TestCLIDocs -update-docs")
	}
}

// TestEveryCommandHasExamples walks the command tree: every command,
// including those added later, has an Examples section in its help, and
// every --json flag was added with jsonFlag, so that docs/cli.md
// documents its payload.
func TestEveryCommandHasExamples(t *testing.T) {
	a := &app{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }}
	root := newRootCmd(a)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no Examples in its help: set Example on the command", c.CommandPath())
		}
		if f := c.LocalFlags().Lookup("json"); f != nil {
			if _, ok := a.payloads[c]; !ok {
				t.Errorf("%s has --json, but not through jsonFlag: docs/cli.md cannot describe its payload", c.CommandPath())
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"status", "--help"})
	if err := root.Execute(); err != nil || !strings.Contains(out.String(), "Examples:\n  berth status") {
		t.Fatalf("berth status --help: %v\n%s", err, out.String())
	}
}
