package lexical

import "testing"

func TestRules(t *testing.T) {
	for _, c := range []struct {
		f    func(string) bool
		name string
		in   string
		want bool
	}{
		{StrictSemver, "StrictSemver", "1.4.2", true},
		{StrictSemver, "StrictSemver", "2.0.0-rc.1+build.5", true},
		{StrictSemver, "StrictSemver", "v1.4.2", false},
		{StrictSemver, "StrictSemver", "1.04.2", false},
		{StrictSemver, "StrictSemver", "1.4", false},
		{EnvName, "EnvName", "API_KEY", true},
		{EnvName, "EnvName", "_x1", true},
		{EnvName, "EnvName", "1X", false},
		{EnvName, "EnvName", "A-B", false},
		{EnvName, "EnvName", "", false},
		{CleanRel, "CleanRel", "bin/server", true},
		{CleanRel, "CleanRel", "../x", false},
		{CleanRel, "CleanRel", "a//b", false},
		{CleanRel, "CleanRel", "a/", false},
		{CleanRel, "CleanRel", "/a", false},
		{CleanRel, "CleanRel", ".", false},
		{CleanRel, "CleanRel", `a\b`, false},
	} {
		if got := c.f(c.in); got != c.want {
			t.Errorf("%s(%q) = %v, want %v", c.name, c.in, got, c.want)
		}
	}
}
