package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DecodeManifest decodes berth.json strictly: an unknown field or a
// duplicate key at any depth, a wrong type, trailing data, a byte-order mark,
// invalid UTF-8 or more than MaxManifestSize bytes are problems. Every
// problem found is returned; the manifest is nil only when the document
// could not be parsed at all. Decoding does not apply the semantic rules of
// Validate.
func DecodeManifest(data []byte) (*Manifest, []*Problem) {
	d := decodeManifest(data)
	return d.manifest, d.problems.sorted()
}

// decoded is the result of strict decoding, with the set of JSON paths that
// were present (so "missing" and "zero" can be told apart).
type decoded struct {
	manifest *Manifest
	present  map[string]bool
	// bad holds the paths whose value could not be decoded; the semantic
	// rules do not report them again.
	bad      map[string]bool
	problems problems
}

func decodeManifest(data []byte) *decoded {
	d := &decoded{present: map[string]bool{}, bad: map[string]bool{}}
	ps := &d.problems
	if len(data) > MaxManifestSize {
		ps.add(ManifestFile, RuleManifestTooLarge, "berth.json is %d bytes, over the limit of %d (1 MiB); move large data into files of the bundle", len(data), MaxManifestSize)
		return d
	}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		ps.add(ManifestFile, RuleManifestBOM, "berth.json starts with a UTF-8 byte-order mark; save it as UTF-8 without BOM")
		return d
	}
	if !utf8.Valid(data) {
		off := invalidUTF8Offset(data)
		line, col := lineCol(data, off)
		ps.add(ManifestFile, RuleManifestInvalidUTF8, "berth.json is not valid UTF-8 (first bad byte at line %d, column %d); save it as UTF-8", line, col)
		return d
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	p := &parser{dec: dec, ps: ps}
	root, err := p.value("")
	if err != nil {
		ps.add(ManifestFile, RuleManifestSyntax, "berth.json is not well-formed JSON: %s; fix the syntax (a JSON linter shows where)", syntaxDetail(data, dec, err))
		return d
	}
	if _, err := dec.Token(); err != io.EOF {
		line, col := lineCol(data, int(dec.InputOffset()))
		ps.add(ManifestFile, RuleManifestTrailing, "berth.json has data after its JSON value (near line %d, column %d); keep exactly one JSON object in the file", line, col)
	}
	m := new(Manifest)
	b := binder{ps: ps, present: d.present, bad: d.bad}
	b.bind(reflect.ValueOf(m).Elem(), root, "")
	d.manifest = m
	return d
}

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

// maxDepth is how deeply objects and arrays may nest in berth.json. A
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
					p.ps.add(kp, RuleDuplicateKey, "key %q appears more than once in this object; keep one (JSON readers disagree on which wins)", key)
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

// binder assigns a parsed document to Go values, collecting every unknown
// field and wrong type instead of stopping at the first.
type binder struct {
	ps      *problems
	present map[string]bool
	bad     map[string]bool
	// inHeaders is set while binding a remote's headers.
	inHeaders bool
}

var (
	envSourceType = reflect.TypeFor[EnvSource]()
	remoteType    = reflect.TypeFor[Remote]()
)

func (b *binder) bind(v reflect.Value, n *node, path string) {
	b.present[path] = true
	if v.Type() == envSourceType && n.kind == 's' {
		// Say exactly what to write instead; never repeat the value, it
		// may be a secret.
		rule, what := RuleEnvLiteralValue, "environment variable"
		if b.inHeaders {
			rule, what = RuleHeaderLiteralValue, "header"
		}
		b.bad[path] = true
		b.ps.add(path, rule, "%s values may not be literal strings (the value is not shown; it may be a secret); write {\"fromEnv\": \"NAME\"} and set NAME on the host", what)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if n.kind != 'o' {
			b.wrongType(path, "an object", n)
			return
		}
		e := reflect.New(v.Type().Elem())
		b.bind(e.Elem(), n, path)
		v.Set(e)
	case reflect.Struct:
		if n.kind != 'o' {
			b.wrongType(path, "an object", n)
			return
		}
		fields := jsonFields(v.Type())
		for i, key := range n.keys {
			kp := joinPath(path, key)
			idx, ok := fields[key]
			if !ok {
				b.ps.add(kp, RuleUnknownField, "unknown field %q: manifest v1 does not define it; remove it or check its spelling (docs/manifest.md lists every field)", key)
				continue
			}
			b.inHeaders = v.Type() == remoteType && key == "headers"
			b.bind(v.Field(idx), n.vals[i], kp)
			b.inHeaders = false
		}
	case reflect.Map:
		if n.kind != 'o' {
			b.wrongType(path, "an object", n)
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.keys))
		for i, key := range n.keys {
			e := reflect.New(v.Type().Elem()).Elem()
			b.bind(e, n.vals[i], joinPath(path, key))
			m.SetMapIndex(reflect.ValueOf(key), e)
		}
		v.Set(m)
	case reflect.Slice:
		if n.kind != 'a' {
			b.wrongType(path, "an array", n)
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.elems), len(n.elems))
		for i, e := range n.elems {
			b.bind(s.Index(i), e, fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case reflect.String:
		if n.kind != 's' {
			b.wrongType(path, "a string", n)
			return
		}
		if i := strings.IndexFunc(n.str, unicode.IsControl); i >= 0 {
			r, _ := utf8.DecodeRuneInString(n.str[i:])
			b.ps.add(path, RuleControlCharacter, "this string holds %s at byte %d (the value is not shown; it may be a secret); remove it: control characters can hide text from a reviewer or end a string early in other readers", describeRune(r), i)
		}
		v.SetString(n.str)
	case reflect.Bool:
		if n.kind != 'b' {
			b.wrongType(path, "a boolean", n)
			return
		}
		v.SetBool(n.b)
	case reflect.Int:
		if n.kind != 'n' {
			b.wrongType(path, "an integer", n)
			return
		}
		f, err := strconv.ParseFloat(string(n.num), 64)
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<31 {
			b.wrongType(path, "an integer", n)
			return
		}
		if !plainInteger.MatchString(string(n.num)) {
			b.ps.add(path, RuleIntegerForm, "%s is written with a fraction or an exponent; write the integer %d as plain digits: JSON readers disagree on whether %s is an integer", n.num, int64(f), n.num)
		}
		v.SetInt(int64(f))
	default:
		panic(fmt.Sprintf("bundle: binder cannot handle %s at %s", v.Type(), path))
	}
}

func (b *binder) wrongType(path, want string, n *node) {
	b.bad[path] = true
	if path == "" {
		b.ps.add(ManifestFile, RuleWrongType, "berth.json must hold %s, not %s", want, kindName(n))
		return
	}
	b.ps.add(path, RuleWrongType, "must be %s, not %s", want, kindName(n))
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

// jsonFields maps JSON names to struct field indexes.
func jsonFields(t reflect.Type) map[string]int {
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[name] = i
		}
	}
	return m
}

var simpleKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// plainInteger is a JSON number written as an integer: no fraction, no
// exponent, no "-0".
var plainInteger = regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`)

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
