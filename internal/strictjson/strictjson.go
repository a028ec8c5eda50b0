// Package strictjson decodes JSON more strictly than encoding/json and
// reports every problem at once, each at its JSON path: a duplicate key
// (and, if asked, keys equal but for letter case) in any object, an unknown
// field, a null where a value is required, a wrong type, a number out of
// range, data after the value, invalid UTF-8 or a byte-order mark.
//
// It is written for files a person may edit and a program must not
// misread: berth.json, berth's state files, its secret index, a catalog, a
// lock file. encoding/json accepts duplicate keys (the last one wins, where
// other readers keep the first) and stops at the first error;
// encoding/json/v2 rejects duplicates but also stops at the first error.
//
// Decoding is two steps, usable apart: Parse turns bytes into a tree of
// Nodes (finding duplicate keys and syntax errors), Bind assigns a tree to a
// Go value by its exact JSON field names. Decode does both, Unmarshal does
// both and returns an error. Each Problem has a Kind and the facts a caller
// needs to word it in its own terms (bundle maps them to rule IDs); its
// Message is a plain wording of its own.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind is the kind of a JSON value.
type Kind byte

// The kinds of JSON values.
const (
	Object Kind = 'o'
	Array  Kind = 'a'
	String Kind = 's'
	Number Kind = 'n'
	Bool   Kind = 'b'
	Null   Kind = 'z'
)

// String returns the kind with its article: "an object", "a number", "null".
func (k Kind) String() string {
	switch k {
	case Object:
		return "an object"
	case Array:
		return "an array"
	case String:
		return "a string"
	case Number:
		return "a number"
	case Bool:
		return "a boolean"
	}
	return "null"
}

// Node is a parsed JSON value. Objects keep their keys in document order,
// without the duplicates.
type Node struct {
	Kind Kind
	// Keys and Values are an object's members.
	Keys   []string
	Values []*Node
	// Elems are an array's elements.
	Elems []*Node
	// Str is a string's value, Num a number as written, Bool a boolean's.
	Str  string
	Num  json.Number
	Bool bool
}

// ProblemKind says what is wrong.
type ProblemKind int

// The kinds of problems. The first five concern the document as a whole
// and end parsing (but Trailing, which still gives a tree).
const (
	// TooLarge: the document is over Options.MaxSize bytes (Limit).
	TooLarge ProblemKind = iota + 1
	// BOM: the document starts with a UTF-8 byte-order mark.
	BOM
	// InvalidUTF8: the document is not UTF-8; Offset is the first bad byte.
	InvalidUTF8
	// Syntax: the document is not well-formed JSON, or nests deeper than
	// Options.MaxDepth; Err says how, Offset is where the reader stopped.
	Syntax
	// Trailing: there is data after the JSON value, near Offset.
	Trailing
	// DuplicateKey: Key appears more than once in one object; the first
	// is kept.
	DuplicateKey
	// FoldedKey: Key and OtherKey (the earlier) differ only in letter case
	// (Options.FoldCase).
	FoldedKey
	// UnknownField: the object has a member Key that its Go type does not.
	UnknownField
	// MissingField: a required member Key is absent
	// (Options.RequireFields); Path is where it would be.
	MissingField
	// NullValue: null where a value of Type is required.
	NullValue
	// WrongType: Got is of the wrong kind for Type, or a number is not
	// written as Type needs (a fraction or exponent for an integer).
	WrongType
	// OutOfRange: the integer Got does not fit Type.
	OutOfRange
	// InvalidValue: Type's UnmarshalText or UnmarshalJSON refused Got
	// with Err.
	InvalidValue
)

// Problem is one thing wrong with a document.
type Problem struct {
	Kind ProblemKind
	// Path is the JSON path of the value: "" for the document,
	// "a.b[2].c", or a["x y"] for a key that is not letters, digits, "-"
	// and "_".
	Path string
	// Key is the member concerned (DuplicateKey, FoldedKey, UnknownField,
	// MissingField); OtherKey is the earlier one of FoldedKey.
	Key, OtherKey string
	// Type is the Go type a value was to be decoded into.
	Type reflect.Type
	// Got is the value found (WrongType, NullValue, OutOfRange,
	// InvalidValue).
	Got *Node
	// Offset is a byte offset into the document (InvalidUTF8, Syntax,
	// Trailing); Limit is Options.MaxSize (TooLarge).
	Offset, Limit int
	// Err is the cause (Syntax, InvalidValue).
	Err error
	// Message says what is wrong, without the path. It may quote a
	// string of the document (InvalidValue) or a number.
	Message string
}

// String returns the message prefixed with the path ("the document" for
// the root), or the message alone for a problem of the whole document.
func (p Problem) String() string {
	if p.Kind <= Trailing {
		return p.Message
	}
	path := p.Path
	if path == "" {
		path = "the document"
	}
	return path + ": " + p.Message
}

// Error lists every problem of a document.
type Error struct {
	// Name names the document in the message ("catalog.json"); it may be
	// empty.
	Name     string
	Problems []Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Name != "" {
		b.WriteString(e.Name)
		b.WriteString(": ")
	}
	if len(e.Problems) > 1 {
		fmt.Fprintf(&b, "%d problems: ", len(e.Problems))
	}
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Nulls says where null is allowed.
type Nulls int

// The null rules.
const (
	// NullOptional allows null for a field tagged omitempty or omitzero
	// and for a slice or a map anywhere (an empty one); it decodes to the
	// zero value.
	NullOptional Nulls = iota
	// NullNever makes every null a problem.
	NullNever
	// NullAnywhere allows null everywhere, as encoding/json does; it
	// decodes to the zero value.
	NullAnywhere
)

// Options tune Parse, Bind and Decode. The zero value is strict: no case
// folding, null only where NullOptional allows, missing fields allowed,
// no size limit, depth 32.
type Options struct {
	// MaxSize caps the document's size in bytes; 0 means no cap.
	MaxSize int
	// MaxDepth caps how deeply objects and arrays nest; 0 means 32. The
	// cap keeps a hostile document (a megabyte of "[") from costing memory
	// quadratic in its depth.
	MaxDepth int
	// FoldCase makes keys that differ only in letter case a problem
	// (FoldedKey), as they are for readers that match fields without
	// regard to case (encoding/json among them).
	FoldCase bool
	// Nulls says where null is allowed.
	Nulls Nulls
	// RequireFields makes a missing field a problem unless it is tagged
	// omitempty or omitzero, or is a slice or a map.
	RequireFields bool
	// Hook, if set, is offered every value before Bind's own rules, with
	// the Go value to set, the node and its path. It returns true when it
	// has dealt with the value (set it, or reported a problem its own way).
	Hook func(v reflect.Value, n *Node, path string) bool
}

const defaultMaxDepth = 32

// Unmarshal decodes data into v (a non-nil pointer) as Decode does; name
// names the document in the error. The error is an *Error listing every
// problem with its JSON path, or nil.
func Unmarshal(name string, data []byte, v any, opts Options) error {
	if ps := Decode(data, v, opts); len(ps) > 0 {
		return &Error{Name: name, Problems: ps}
	}
	return nil
}

// Decode parses data and, when it could be parsed without problems, binds
// it to v (a non-nil pointer). It returns every problem found. When the
// document cannot be parsed at all, that is the only problem returned.
func Decode(data []byte, v any, opts Options) []Problem {
	root, ps := Parse(data, opts)
	if root == nil {
		return ps[len(ps)-1:]
	}
	if len(ps) > 0 {
		return ps
	}
	return Bind(v, root, opts)
}

// Parse parses data as one JSON value. It returns the tree, or nil if data
// is not one well-formed JSON value (the last problem says why), and the
// problems found: duplicate keys, keys equal but for case (FoldCase), data
// after the value.
func Parse(data []byte, opts Options) (*Node, []Problem) {
	switch {
	case opts.MaxSize > 0 && len(data) > opts.MaxSize:
		return nil, []Problem{{Kind: TooLarge, Limit: opts.MaxSize, Message: "it is over " + size(opts.MaxSize)}}
	case bytes.HasPrefix(data, []byte("\xef\xbb\xbf")):
		return nil, []Problem{{Kind: BOM, Message: "it starts with a UTF-8 byte-order mark"}}
	case !utf8.Valid(data):
		return nil, []Problem{{Kind: InvalidUTF8, Offset: InvalidUTF8Offset(data), Message: "it is not valid UTF-8"}}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	root, ps, err := ParseNext(dec, opts)
	if err != nil {
		off := int(dec.InputOffset())
		return nil, append(ps, Problem{Kind: Syntax, Offset: off, Err: err, Message: fmt.Sprintf("it is not well-formed JSON (%v, near byte %d)", err, off)})
	}
	if _, err := dec.Token(); err != io.EOF {
		off := int(dec.InputOffset())
		ps = append(ps, Problem{Kind: Trailing, Offset: off, Message: fmt.Sprintf("it has data after its JSON value (near byte %d)", off)})
	}
	return root, ps
}

// ParseNext parses the next JSON value of dec, which must have UseNumber
// set. It returns the tree and the duplicate keys found; err is the
// decoder's error if the value is not well-formed (or nests deeper than
// MaxDepth), and then the tree is nil. Only FoldCase and MaxDepth of opts
// matter.
func ParseNext(dec *json.Decoder, opts Options) (*Node, []Problem, error) {
	p := &parser{dec: dec, fold: opts.FoldCase, maxDepth: opts.MaxDepth}
	if p.maxDepth <= 0 {
		p.maxDepth = defaultMaxDepth
	}
	n, err := p.value("")
	if err != nil {
		return nil, p.problems, err
	}
	return n, p.problems, nil
}

type parser struct {
	dec             *json.Decoder
	fold            bool
	depth, maxDepth int
	problems        []Problem
}

func (p *parser) value(path string) (*Node, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if p.depth++; p.depth > p.maxDepth {
			return nil, fmt.Errorf("objects and arrays nest deeper than %d levels", p.maxDepth)
		}
		defer func() { p.depth-- }()
		switch t {
		case '{':
			return p.object(path)
		case '[':
			n := &Node{Kind: Array}
			for i := 0; p.dec.More(); i++ {
				v, err := p.value(fmt.Sprintf("%s[%d]", path, i))
				if err != nil {
					return nil, err
				}
				n.Elems = append(n.Elems, v)
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, err
			}
			return n, nil
		}
		return nil, fmt.Errorf("unexpected %q", t)
	case string:
		return &Node{Kind: String, Str: t}, nil
	case json.Number:
		return &Node{Kind: Number, Num: t}, nil
	case bool:
		return &Node{Kind: Bool, Bool: t}, nil
	case nil:
		return &Node{Kind: Null}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

func (p *parser) object(path string) (*Node, error) {
	n := &Node{Kind: Object}
	seen := map[string]string{} // key, or folded key → key
	for p.dec.More() {
		kt, err := p.dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := kt.(string)
		if !ok {
			return nil, errors.New("an object key is not a string")
		}
		kp := JoinPath(path, key)
		v, err := p.value(kp)
		if err != nil {
			return nil, err
		}
		fk := key
		if p.fold {
			fk = strings.ToLower(key)
		}
		if prev, dup := seen[fk]; dup {
			if prev == key {
				p.problems = append(p.problems, Problem{Kind: DuplicateKey, Path: kp, Key: key, Message: fmt.Sprintf("the key %q appears more than once (JSON readers disagree on which one wins)", key)})
			} else {
				p.problems = append(p.problems, Problem{Kind: FoldedKey, Path: kp, Key: key, OtherKey: prev, Message: fmt.Sprintf("the keys %q and %q differ only in letter case (some JSON readers take them for one key)", prev, key)})
			}
			continue
		}
		seen[fk] = key
		n.Keys = append(n.Keys, key)
		n.Values = append(n.Values, v)
	}
	if _, err := p.dec.Token(); err != nil {
		return nil, err
	}
	return n, nil
}

var simpleKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// JoinPath appends an object key to a JSON path: a.b for a key of
// letters, digits, "-" and "_", a["x.y"] for any other.
func JoinPath(path, key string) string {
	if !simpleKey.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// LineCol returns the line and column (both from 1) of byte offset off in
// data.
func LineCol(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	line = 1 + bytes.Count(data[:off], []byte("\n"))
	col = off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

// SyntaxAt describes the Syntax problem err, which the reader reported at
// byte offset off of data: "the document ends too early", or the error
// with its line and column.
func SyntaxAt(data []byte, off int, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = int(se.Offset)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the document ends too early"
	}
	line, col := LineCol(data, off)
	return fmt.Sprintf("%v (near line %d, column %d)", err, line, col)
}

// InvalidUTF8Offset returns the offset of the first byte of data that is
// not UTF-8, or len(data).
func InvalidUTF8Offset(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(data)
}

func size(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
