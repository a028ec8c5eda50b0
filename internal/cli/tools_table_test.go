package cli

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestToolTableWidth: on a terminal (review 25, S4) every line of berth
// tools fits its width, the built-in filesystem server's 51-character
// names included; names and policies are never cut. Off a terminal the
// description is cut at 70 characters as before, and --wide keeps it
// whole.
func TestToolTableWidth(t *testing.T) {
	long := strings.Repeat("Read the complete contents of a file as text. ", 6)
	rows := []toolTableRow{
		{"filesystem__filesystem__read_text_file", "ask (default)", long},
		{"filesystem__filesystem__list_directory_with_sizes", "allow", "Get a listing."},
	}
	table := func(cols int) []string {
		var b bytes.Buffer
		writeToolTable(&b, rows, cols)
		return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	}
	for _, cols := range []int{80, 120, 100} {
		lines := table(cols)
		if len(lines) != 3 {
			t.Fatalf("cols %d: %q", cols, lines)
		}
		for _, l := range lines {
			if n := utf8.RuneCountInString(strings.TrimRight(l, " ")); n > cols {
				t.Errorf("cols %d: a line of %d characters: %q", cols, n, l)
			}
		}
		if !strings.HasSuffix(lines[1], "…") || !strings.Contains(lines[2], "filesystem__filesystem__list_directory_with_sizes  allow          Get a listing.") {
			t.Errorf("cols %d:\n%s", cols, strings.Join(lines, "\n"))
		}
	}
	// Too narrow for the names: the description keeps minDesc characters.
	if l := table(40)[1]; !strings.HasSuffix(l, strings.TrimSpace(long[:minDesc-1])+"…") {
		t.Errorf("narrow: %q", l)
	}
	// Off a terminal: 70 characters, as before.
	if l := table(0)[1]; !strings.HasSuffix(l, "  "+long[:offTerminalDesc-1]+"…") {
		t.Errorf("off a terminal: %q", l)
	}
	// --wide: whole.
	if l := table(math.MaxInt)[1]; !strings.HasSuffix(l, strings.TrimSpace(long)) {
		t.Errorf("--wide: %q", l)
	}
}
