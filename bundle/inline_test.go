package bundle

import (
	"errors"
	"strings"
	"testing"
)

// TestInlineCodeValidation: berth.json validation refuses an interpreter
// given its code in argv (inline-code, at args) and git as a command
// (runtime-fetch-form, at command); the same letters after the script are
// the script's arguments, and pass.
func TestInlineCodeValidation(t *testing.T) {
	for _, c := range []struct {
		command string
		args    []string
		rule    string // "" for valid
		path    string
	}{
		{"node", []string{"-e", "1"}, RuleInlineCode, "args"},
		{"node", []string{"--eval=1"}, RuleInlineCode, "args"},
		{"node", []string{"-pe", "1"}, RuleInlineCode, "args"},
		{"nodejs", []string{"--print", "1"}, RuleInlineCode, "args"},
		{"bun", []string{"-e", "1"}, RuleInlineCode, "args"},
		{"deno", []string{"eval", "1"}, RuleInlineCode, "args"},
		{"python3", []string{"-c", "1"}, RuleInlineCode, "args"},
		{"python3.12", []string{"-Ic", "1"}, RuleInlineCode, "args"},
		{"python", []string{"-c", "1"}, RuleInlineCode, "args"},
		{"perl", []string{"-e", "1"}, RuleInlineCode, "args"},
		{"perl", []string{"-E", "say 1"}, RuleInlineCode, "args"},
		{"perl", []string{"-lne", "1"}, RuleInlineCode, "args"},
		{"ruby", []string{"-e", "1"}, RuleInlineCode, "args"},
		{"php", []string{"-r", "1"}, RuleInlineCode, "args"},
		{"sh", []string{"-c", "x"}, RuleInlineCode, "args"},
		{"bash", []string{"-lc", "x"}, RuleInlineCode, "args"},
		{"zsh", []string{"-c", "x"}, RuleInlineCode, "args"},
		{"dash", []string{"-c", "x"}, RuleInlineCode, "args"},
		{"pwsh", []string{"-Command", "x"}, RuleInlineCode, "args"},
		{"powershell.exe", []string{"-c", "x"}, RuleInlineCode, "args"},
		{"node", []string{"--report-dir", "/tmp", "-e", "1"}, RuleInlineCode, "args"},
		{"node", []string{"--some-future-option", "x", "-e", "1"}, RuleInlineCode, "args"},
		{"perl", []string{"-MPOSIX;system('id')"}, RuleInlineCode, "args"},
		{"python3", []string{"-m", "timeit", "-s", "1", "pass"}, RuleInlineCode, "args"},
		{"php", []string{"-d", "auto_prepend_file=/tmp/x.php"}, RuleInlineCode, "args"},
		{"npx", []string{"-y", "node@20.11.1", "-e", "1"}, RuleInlineCode, "args"},
		{"uvx", []string{"python@3.12.1", "-c", "1"}, RuleInlineCode, "args"},
		{"lua", []string{"-e", "1"}, RuleInlineCode, "args"},
		{"awk", []string{"BEGIN{system(\"id\")}"}, RuleInlineCode, "args"},
		{"git", []string{"clone", "https://github.com/acme/x"}, RuleRuntimeFetchForm, "command"},
		{"env", []string{"node", "-e", "1"}, RuleCommandWrapper, "command"},
		// Lookalikes: options after the script belong to the script.
		{"node", []string{"${bundle}/server.js", "-e", "1"}, "", ""},
		{"node", []string{"${bundle}/server.js", "--eval=1", "-p"}, "", ""},
		{"python3", []string{"-u", "${bundle}/server.py", "-c", "x"}, "", ""},
		{"perl", []string{"${bundle}/server.pl", "-e"}, "", ""},
		{"ruby", []string{"-E", "UTF-8", "${bundle}/server.rb"}, "", ""},
		{"php", []string{"${bundle}/server.php", "-r"}, "", ""},
		{"python3", []string{"-m", "mypkg.server"}, "", ""},
		{"python3", []string{"${bundle}/server.py", "-c", "cfg"}, "", ""},
		{"node", []string{"--no-warnings", "${bundle}/server.js", "-e", "x"}, "", ""},
		{"npx", []string{"-y", "node@20.11.1", "${bundle}/server.js", "-e", "x"}, "", ""},
	} {
		_, err := openManifest(t, map[string]any{
			"manifestVersion": 1, "name": "x", "version": "1.0.0", "description": "d",
			"mcpServers": map[string]any{"s": map[string]any{"stdio": map[string]any{"command": c.command, "args": c.args}}},
		})
		what := c.command + " " + strings.Join(c.args, " ")
		var ie *InvalidError
		if c.rule == "" {
			if errors.As(err, &ie) {
				for _, p := range ie.Problems {
					if p.Rule == RuleInlineCode {
						t.Errorf("%s: refused: %v", what, err)
					}
				}
			}
			continue
		}
		if !errors.As(err, &ie) || len(ie.Problems) != 1 || ie.Problems[0].Rule != c.rule || ie.Problems[0].Path != "mcpServers.s.stdio."+c.path {
			t.Errorf("%s: %v, want [%s] at %s", what, err, c.rule, c.path)
		}
	}
}
