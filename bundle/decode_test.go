package bundle

import (
	"strings"
	"testing"
	"time"
)

// TestDecodeDeepNesting: a megabyte of "[" or {"a": is refused at once,
// not after building paths whose total length is quadratic in the depth.
func TestDecodeDeepNesting(t *testing.T) {
	n := MaxManifestSize / 5
	for _, doc := range []string{
		strings.Repeat("[", 2*n) + strings.Repeat("]", 2*n),
		strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n),
	} {
		doc = doc[:min(len(doc), MaxManifestSize)]
		start := time.Now()
		_, ps := DecodeManifest([]byte(doc))
		if len(ps) != 1 || ps[0].Rule != RuleManifestSyntax || !strings.Contains(ps[0].Message, "nest deeper than") {
			t.Fatalf("problems %v", ps)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("decoding took %v", d)
		}
	}
	// Nesting within the cap is decoded, and reported by the usual rules.
	doc := `{"x":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + "}"
	if _, ps := DecodeManifest([]byte(doc)); len(ps) != 1 || ps[0].Rule != RuleUnknownField {
		t.Fatalf("problems %v", ps)
	}
}

// TestLiteralValueRule: a literal value is a header-literal-value exactly
// when it is in a remote's headers, whatever the names around it.
func TestLiteralValueRule(t *testing.T) {
	for _, c := range []struct{ doc, path, rule string }{
		{`{"mcpServers":{"s":{"remote":{"headers":{"X.Team":"v"}}}}}`, `mcpServers.s.remote.headers["X.Team"]`, RuleHeaderLiteralValue},
		{`{"mcpServers":{"s":{"remote":{"headers":{"X-Team":"v"}}}}}`, `mcpServers.s.remote.headers.X-Team`, RuleHeaderLiteralValue},
		{`{"mcpServers":{"headers":{"stdio":{"env":{"K":"v"}}}}}`, `mcpServers.headers.stdio.env.K`, RuleEnvLiteralValue},
		{`{"mcpServers":{"s":{"stdio":{"env":{"headers":"v"}}}}}`, `mcpServers.s.stdio.env.headers`, RuleEnvLiteralValue},
	} {
		_, ps := DecodeManifest([]byte(c.doc))
		if len(ps) != 1 || ps[0].Path != c.path || ps[0].Rule != c.rule {
			t.Errorf("%s: problems %v, want %s at %s", c.doc, ps, c.rule, c.path)
		}
	}
}
