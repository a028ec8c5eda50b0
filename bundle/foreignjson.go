package bundle

import (
	"encoding/json"

	"github.com/berth-mcp/berth/internal/strictjson"
)

// This file is what the importers (foreign.go and the formats) use of
// strictjson, in the shape they were written against. When they read
// strictjson.Node directly, it goes.

// node is a parsed JSON value that keeps object keys in document order.
type node struct {
	kind  byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	keys  []string
	vals  []*node
	elems []*node
	str   string
	num   json.Number
	b     bool
}

// parser parses one JSON value from dec (which has UseNumber set), adding
// a RuleDuplicateKey problem to ps for each duplicate key.
type parser struct {
	dec *json.Decoder
	ps  *problems
}

func (p *parser) value(string) (*node, error) {
	root, dups, err := strictjson.ParseNext(p.dec, strictjson.Options{MaxDepth: maxDepth})
	for _, d := range dups {
		p.ps.add(d.Path, RuleDuplicateKey, "key %q appears more than once in this object; keep one (JSON readers disagree on which wins)", d.Key)
	}
	if err != nil {
		return nil, err
	}
	return fromStrict(root), nil
}

func fromStrict(s *strictjson.Node) *node {
	n := &node{kind: byte(s.Kind), keys: s.Keys, str: s.Str, num: s.Num, b: s.Bool}
	for _, v := range s.Values {
		n.vals = append(n.vals, fromStrict(v))
	}
	for _, e := range s.Elems {
		n.elems = append(n.elems, fromStrict(e))
	}
	return n
}

func kindName(n *node) string { return strictjson.Kind(n.kind).String() }

// joinPath appends an object key to a JSON path: a.b for simple keys,
// a["x.y"] otherwise.
func joinPath(path, key string) string { return strictjson.JoinPath(path, key) }

func lineCol(data []byte, off int) (line, col int) { return strictjson.LineCol(data, off) }

func invalidUTF8Offset(data []byte) int { return strictjson.InvalidUTF8Offset(data) }

func syntaxDetail(data []byte, dec *json.Decoder, err error) string {
	return syntaxAt(data, int(dec.InputOffset()), err)
}
