package bundle

// MatchGlob reports whether name matches pattern, where '*' matches any
// run of characters (also none) and '?' exactly one; every other
// character matches itself. It is the glob of a manifest's tool filters
// (tools.allow and tools.deny) and of the operator's tool policy.
//
// It is not path.Match, whose semantics differ on names berth matches:
// path.Match's '*' and '?' never match '/', which an upstream server's
// tool name may hold (pool filters the names as the server reports them,
// before berth checks them); its '[' starts a character class and '\\'
// escapes, where here both match themselves (TestGlobMatch pins "[a]");
// and its '?' matches a rune, not a byte.
func MatchGlob(pattern, name string) bool {
	// Iterative matching with one backtrack point, linear in practice.
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == name[n]):
			p++
			n++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case star >= 0:
			p = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
