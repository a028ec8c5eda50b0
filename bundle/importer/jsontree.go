package importer

// The JSON reader of the importers: a document tree that keeps object keys
// in document order and reports duplicate keys. It is package bundle's
// reader of berth.json (bundle/decode.go), which that package keeps
// unexported.
// TODO(issue 18): share one reader with bundle (internal/strictjson).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"unicode/utf8"

	"github.com/berth-mcp/berth/bundle"
)

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

// maxDepth is how deeply objects and arrays may nest, as in berth.json. A
// manifest v1 needs six levels; the cap keeps a hostile document (a
// megabyte of "[") from costing memory quadratic in its depth.
const maxDepth = 32

type parser struct {
	dec   *json.Decoder
	ps    *problems
	depth int
}

func (p *parser) value(path string) (*node, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if p.depth++; p.depth > maxDepth {
			return nil, fmt.Errorf("objects and arrays nest deeper than %d levels", maxDepth)
		}
		defer func() { p.depth-- }()
		switch t {
		case '{':
			n := &node{kind: 'o'}
			seen := map[string]bool{}
			for p.dec.More() {
				kt, err := p.dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key is not a string")
				}
				kp := joinPath(path, key)
				v, err := p.value(kp)
				if err != nil {
					return nil, err
				}
				if seen[key] {
					p.ps.add(kp, bundle.RuleDuplicateKey, "key %q appears more than once in this object; keep one (JSON readers disagree on which wins)", key)
					continue
				}
				seen[key] = true
				n.keys = append(n.keys, key)
				n.vals = append(n.vals, v)
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, err
			}
			return n, nil
		case '[':
			n := &node{kind: 'a'}
			for i := 0; p.dec.More(); i++ {
				v, err := p.value(fmt.Sprintf("%s[%d]", path, i))
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, v)
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, err
			}
			return n, nil
		}
		return nil, fmt.Errorf("unexpected %q", t)
	case string:
		return &node{kind: 's', str: t}, nil
	case json.Number:
		return &node{kind: 'n', num: t}, nil
	case bool:
		return &node{kind: 'b', b: t}, nil
	case nil:
		return &node{kind: 'z'}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

func kindName(n *node) string {
	switch n.kind {
	case 'o':
		return "an object"
	case 'a':
		return "an array"
	case 's':
		return "a string"
	case 'n':
		return "a number"
	case 'b':
		return "a boolean"
	}
	return "null"
}

var simpleKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// joinPath appends an object key to a JSON path: a.b for simple keys,
// a["x.y"] otherwise.
func joinPath(path, key string) string {
	if !simpleKey.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func syntaxDetail(data []byte, dec *json.Decoder, err error) string {
	off := int(dec.InputOffset())
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = int(se.Offset)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the document ends too early"
	}
	line, col := lineCol(data, off)
	return fmt.Sprintf("%v (near line %d, column %d)", err, line, col)
}

func lineCol(data []byte, off int) (line, col int) {
	if off > len(data) {
		off = len(data)
	}
	line = 1 + bytes.Count(data[:off], []byte("\n"))
	col = off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

func invalidUTF8Offset(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(data)
}
