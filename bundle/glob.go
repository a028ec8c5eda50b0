package bundle

// MatchGlob reports whether name matches pattern, where '*' matches any
// run of characters (also none) and '?' exactly one; every other
// character matches itself. It is the glob of a manifest's tool filters
// (tools.allow and tools.deny) and of the operator's tool policy.
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
