package strictjson

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Bind assigns the tree n to v (a non-nil pointer) by the exact JSON names
// of its fields (the json tag's name, or the Go name), collecting every
// problem instead of stopping at the first. Only Nulls, RequireFields and
// Hook of opts matter.
//
// It handles structs, pointers, maps with string keys, slices, strings,
// booleans, integers (written as plain digits), floats, any (as
// encoding/json decodes it, numbers as float64), and types implementing
// encoding.TextUnmarshaler (from a string; it is tried first) or
// json.Unmarshaler. It panics
// on other types: a program error, not a document's.
func Bind(v any, n *Node, opts Options) []Problem {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic(fmt.Sprintf("strictjson: Bind needs a non-nil pointer, not %T", v))
	}
	b := &binder{opts: opts}
	b.bind(rv.Elem(), n, "", false)
	return b.problems
}

type binder struct {
	opts     Options
	problems []Problem
}

func (b *binder) add(p Problem) { b.problems = append(b.problems, p) }

var (
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	timeType            = reflect.TypeFor[time.Time]()
	plainUint           = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)
	plainInt            = regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`)
)

// bind sets v from n. optional says whether the value is a field tagged
// omitempty or omitzero.
func (b *binder) bind(v reflect.Value, n *Node, path string, optional bool) {
	if b.opts.Hook != nil && b.opts.Hook(v, n, path) {
		return
	}
	if n.Kind == Null {
		k := v.Kind()
		switch {
		case b.opts.Nulls == NullAnywhere,
			b.opts.Nulls == NullOptional && (optional || k == reflect.Slice || k == reflect.Map || k == reflect.Interface):
			v.SetZero()
		default:
			b.add(Problem{Kind: NullValue, Path: path, Type: v.Type(), Got: n, Message: fmt.Sprintf("is null, where %s is required", typeName(v.Type()))})
		}
		return
	}
	pt := reflect.PointerTo(v.Type())
	if pt.Implements(textUnmarshalerType) {
		if n.Kind != String {
			b.wrongType(path, v.Type(), "a string", n)
			return
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Str)); err != nil {
			b.add(Problem{Kind: InvalidValue, Path: path, Type: v.Type(), Got: n, Err: err, Message: fmt.Sprintf("%q is not %s (%v)", n.Str, typeName(v.Type()), err)})
		}
		return
	}
	if pt.Implements(jsonUnmarshalerType) {
		if err := v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(Marshal(n)); err != nil {
			b.add(Problem{Kind: InvalidValue, Path: path, Type: v.Type(), Got: n, Err: err, Message: fmt.Sprintf("is not %s (%v)", typeName(v.Type()), err)})
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		b.bind(e.Elem(), n, path, false)
		v.Set(e)
	case reflect.Struct:
		b.object(v, n, path)
	case reflect.Map:
		if n.Kind != Object {
			b.wrongType(path, v.Type(), "an object", n)
			return
		}
		if v.Type().Key().Kind() != reflect.String {
			panic(fmt.Sprintf("strictjson: cannot decode into %s", v.Type()))
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.Keys))
		for i, key := range n.Keys {
			e := reflect.New(v.Type().Elem()).Elem()
			b.bind(e, n.Values[i], JoinPath(path, key), false)
			m.SetMapIndex(reflect.ValueOf(key).Convert(v.Type().Key()), e)
		}
		v.Set(m)
	case reflect.Slice:
		if n.Kind != Array {
			b.wrongType(path, v.Type(), "an array", n)
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Elems), len(n.Elems))
		for i, e := range n.Elems {
			b.bind(s.Index(i), e, fmt.Sprintf("%s[%d]", path, i), false)
		}
		v.Set(s)
	case reflect.String:
		if n.Kind != String {
			b.wrongType(path, v.Type(), "a string", n)
			return
		}
		v.SetString(n.Str)
	case reflect.Bool:
		if n.Kind != Bool {
			b.wrongType(path, v.Type(), "true or false", n)
			return
		}
		v.SetBool(n.Bool)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.Kind != Number || !plainUint.MatchString(string(n.Num)) {
			b.wrongType(path, v.Type(), "a whole number written as plain digits", n)
			return
		}
		u, err := strconv.ParseUint(string(n.Num), 10, v.Type().Bits())
		if err != nil {
			b.outOfRange(path, v.Type(), n)
			return
		}
		v.SetUint(u)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n.Kind != Number || !plainInt.MatchString(string(n.Num)) {
			b.wrongType(path, v.Type(), "an integer written as plain digits", n)
			return
		}
		i, err := strconv.ParseInt(string(n.Num), 10, v.Type().Bits())
		if err != nil {
			b.outOfRange(path, v.Type(), n)
			return
		}
		v.SetInt(i)
	case reflect.Float32, reflect.Float64:
		if n.Kind != Number {
			b.wrongType(path, v.Type(), "a number", n)
			return
		}
		f, err := strconv.ParseFloat(string(n.Num), v.Type().Bits())
		if err != nil {
			b.outOfRange(path, v.Type(), n)
			return
		}
		v.SetFloat(f)
	case reflect.Interface:
		if v.NumMethod() != 0 {
			panic(fmt.Sprintf("strictjson: cannot decode into %s at %s", v.Type(), path))
		}
		var x any
		if err := json.Unmarshal(Marshal(n), &x); err != nil {
			b.outOfRange(path, v.Type(), n) // a number beyond float64
			return
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
	default:
		panic(fmt.Sprintf("strictjson: cannot decode into %s at %s", v.Type(), path))
	}
}

func (b *binder) object(v reflect.Value, n *Node, path string) {
	if n.Kind != Object {
		b.wrongType(path, v.Type(), "an object", n)
		return
	}
	fields, order := fieldsOf(v.Type())
	present := map[string]bool{}
	for i, key := range n.Keys {
		kp := JoinPath(path, key)
		f, ok := fields[key]
		if !ok {
			b.add(Problem{Kind: UnknownField, Path: kp, Key: key, Message: fmt.Sprintf("unknown field %q", key)})
			continue
		}
		present[key] = true
		b.bind(v.Field(f.index), n.Values[i], kp, f.optional)
	}
	if !b.opts.RequireFields {
		return
	}
	for _, f := range order {
		if !f.optional && !present[f.name] && f.kind != reflect.Slice && f.kind != reflect.Map {
			b.add(Problem{Kind: MissingField, Path: JoinPath(path, f.name), Key: f.name, Message: "is missing"})
		}
	}
}

func (b *binder) wrongType(path string, t reflect.Type, want string, n *Node) {
	got := n.Kind.String()
	if n.Kind == Number {
		got = "the number " + string(n.Num)
	}
	b.add(Problem{Kind: WrongType, Path: path, Type: t, Got: n, Message: fmt.Sprintf("must be %s, not %s", want, got)})
}

func (b *binder) outOfRange(path string, t reflect.Type, n *Node) {
	b.add(Problem{Kind: OutOfRange, Path: path, Type: t, Got: n, Message: fmt.Sprintf("%s is out of range", n.Num)})
}

// typeName names what a value of t is written as in JSON.
func typeName(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return "a time"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() == reflect.Slice:
		return "an array"
	case t.Kind() == reflect.Struct, t.Kind() == reflect.Map:
		return "an object"
	case t.Kind() == reflect.Interface:
		return "a value"
	}
	return "a number"
}

type field struct {
	name     string
	index    int
	optional bool // omitempty or omitzero: may be missing or null
	kind     reflect.Kind
}

// fieldsOf maps the JSON names of t's exported fields to their fields, and
// lists them in the order of t.
func fieldsOf(t reflect.Type) (map[string]field, []field) {
	m := make(map[string]field, t.NumField())
	var order []field
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		opts = "," + opts + ","
		m[name] = field{name: name, index: i, optional: strings.Contains(opts, ",omitempty,") || strings.Contains(opts, ",omitzero,"), kind: f.Type.Kind()}
		order = append(order, m[name])
	}
	return m, order
}

// Marshal returns n as compact JSON, keys in document order.
func Marshal(n *Node) []byte {
	var buf []byte
	return appendNode(buf, n)
}

func appendNode(buf []byte, n *Node) []byte {
	switch n.Kind {
	case Object:
		buf = append(buf, '{')
		for i, k := range n.Keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			kb, _ := json.Marshal(k)
			buf = append(append(buf, kb...), ':')
			buf = appendNode(buf, n.Values[i])
		}
		return append(buf, '}')
	case Array:
		buf = append(buf, '[')
		for i, e := range n.Elems {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendNode(buf, e)
		}
		return append(buf, ']')
	case String:
		sb, _ := json.Marshal(n.Str)
		return append(buf, sb...)
	case Number:
		return append(buf, n.Num...)
	case Bool:
		return strconv.AppendBool(buf, n.Bool)
	}
	return append(buf, "null"...)
}
