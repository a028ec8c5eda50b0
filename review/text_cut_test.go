package review

import "testing"

// Cut keeps text within n bytes, never splitting a character, and marks
// a cut.
func TestCut(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijk", 5, "abcde…"},
		{"aé", 2, "a…"}, // é is 2 bytes: not split
		{"日本語", 4, "日…"},
		{"日本語", 0, "…"},
	} {
		if got := Cut(c.in, c.n); got != c.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
