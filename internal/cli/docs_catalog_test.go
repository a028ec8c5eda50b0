package cli

import (
	"os"
	"strings"
	"testing"
)

// TestDocsCatalogFreshCommands checks that every berth command line in
// docs/marketplace.md's "Keeping a catalog fresh" (the cron, systemd and
// CI examples) names a real command with real flags and the arguments it
// takes.
func TestDocsCatalogFreshCommands(t *testing.T) {
	data, err := os.ReadFile("../../docs/marketplace.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Keeping a catalog fresh\n")
	if !ok {
		t.Fatal(`docs/marketplace.md has no section "## Keeping a catalog fresh"`)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	lines := docCommandLines(section)
	if len(lines) < 4 {
		t.Fatalf("found %d berth command lines in the section, want the plain, cron, systemd and CI ones: %q", len(lines), lines)
	}
	for _, args := range lines {
		if err := parsesAsCommand(args); err != nil {
			t.Errorf("docs/marketplace.md: berth %s: %v", strings.Join(args, " "), err)
		}
	}
}

// docCommandLines finds the berth command lines in the fenced blocks of
// md: each "berth " (or ".../berth ") word up to the end of its shell
// command, its words unquoted.
func docCommandLines(md string) [][]string {
	var out [][]string
	in := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if !in || strings.HasPrefix(strings.TrimSpace(line), "#") || strings.HasPrefix(line, "Description=") {
			continue
		}
		words := strings.Fields(line)
		for i, w := range words {
			w = strings.TrimPrefix(w, "ExecStart=")
			if w != "berth" && !strings.HasSuffix(w, "/berth") {
				continue
			}
			var args []string
			for _, a := range words[i+1:] {
				if a == "&&" || a == "||" || a == ";" || a == "|" || strings.HasPrefix(a, ">") || strings.HasPrefix(a, "#") {
					break
				}
				args = append(args, strings.Trim(a, `"'`))
			}
			if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
				out = append(out, args)
			}
		}
	}
	return out
}

// parsesAsCommand finds the command of args in berth's tree, parses its
// flags and checks its positional arguments, running nothing.
func parsesAsCommand(args []string) error {
	root := newRootCmd(&app{getenv: func(string) string { return "" }})
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	if cmd.Args != nil {
		return cmd.Args(cmd, cmd.Flags().Args())
	}
	return nil
}
