package bundle

import "testing"

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pat, name string
		want      bool
	}{
		{"*", "", true}, {"*", "abc", true}, {"a*", "abc", true}, {"a*c", "abbbc", true}, {"a*c", "abcd", false},
		{"?", "a", true}, {"?", "", false}, {"a?c", "abc", true}, {"*b*", "abc", true}, {"a**c", "ac", true},
		{"acme-*__read_*", "acme-notes__read_note", true}, {"acme-*__read_*", "acme-notes__write", false},
		{"[a]", "a", false}, {"[a]", "[a]", true}, {"v?.*", "v1.x", true},
	} {
		if got := MatchGlob(tc.pat, tc.name); got != tc.want {
			t.Errorf("MatchGlob(%q, %q) = %v", tc.pat, tc.name, got)
		}
	}
}
