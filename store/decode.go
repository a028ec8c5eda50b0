package store

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxStateFileSize caps what berth reads of state.json and config.json.
const maxStateFileSize = 64 << 20

// maxStateDepth is how deeply objects and arrays may nest in a state file
// (state.json needs six levels).
const maxStateDepth = 32

// FileError is a state file (state.json, config.json) that berth cannot
// use as it is: every problem found, each at its JSON path, and what to
// do. berth never repairs or rewrites such a file by itself.
type FileError struct {
	// Path is the file.
	Path string
	// Problems are the problems found, each starting with its JSON path.
	Problems []string
	// Fix says what to do.
	Fix string
}

func (e *FileError) Error() string {
	what := "a problem"
	if len(e.Problems) > 1 {
		what = fmt.Sprintf("%d problems", len(e.Problems))
	}
	return fmt.Sprintf("%s has %s, so berth does not use it: %s; %s", e.Path, what, strings.Join(e.Problems, "; "), e.Fix)
}

// fixDamaged is the fix for a state file berth did not write that way.
const fixDamaged = "berth writes these files itself and never like this: undo a hand edit, or restore the file from a backup (removing it starts over and loses what it holds)"

// fixUnknown is the fix for fields berth does not know.
const fixUnknown = "this berth does not know that field, and a newer berth may have written it: use that berth, or remove the field by hand if you are sure it does not matter (berth refuses to drop what it does not understand: it could be a setting that restricts something)"

// readStrict reads a state file into v (a pointer to a struct) as
// strictly as a manifest: valid UTF-8, one JSON value, no duplicate keys
// (nor keys equal but for letter case) in any object, exactly the field
// names of v's type, the right type everywhere, no null where a value is
// required, every required field present. A missing file leaves v as it
// is and reports false. Any problem is a *FileError naming the file, every
// problem and the fix.
func readStrict(path string, v any) (bool, error) {
	f, err := OpenPrivate(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxStateFileSize+1))
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	if problems, unknown := decodeStrict(data, v); len(problems) > 0 {
		fix := fixDamaged
		if unknown && len(problems) == 1 {
			fix = fixUnknown
		}
		return false, &FileError{Path: path, Problems: problems, Fix: fix}
	}
	return true, nil
}

// decodeStrict decodes data into v, returning every problem (each
// prefixed with its JSON path) and whether the only kind of problem was an
// unknown field.
func decodeStrict(data []byte, v any) (problems []string, onlyUnknown bool) {
	switch {
	case len(data) > maxStateFileSize:
		return []string{fmt.Sprintf("it is over %d MiB", maxStateFileSize>>20)}, false
	case bytes.HasPrefix(data, []byte("\xef\xbb\xbf")):
		return []string{"it starts with a UTF-8 byte-order mark"}, false
	case !utf8.Valid(data):
		return []string{"it is not valid UTF-8"}, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	p := &strictParser{dec: dec}
	root, err := p.value("")
	if err != nil {
		return []string{fmt.Sprintf("it is not well-formed JSON (%v, near byte %d)", err, dec.InputOffset())}, false
	}
	if _, err := dec.Token(); err != io.EOF {
		p.problems = append(p.problems, fmt.Sprintf("it has data after its JSON value (near byte %d)", dec.InputOffset()))
	}
	b := &strictBinder{}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		panic("store: decodeStrict needs a pointer to a struct")
	}
	if len(p.problems) == 0 {
		b.bind(rv.Elem(), root, "", false)
	}
	all := append(p.problems, b.problems...)
	return all, len(p.problems) == 0 && b.unknown == len(b.problems)
}

// snode is a parsed JSON value; objects keep their keys in order.
type snode struct {
	kind  byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	keys  []string
	vals  []*snode
	elems []*snode
	str   string
	num   json.Number
	yes   bool
}

type strictParser struct {
	dec      *json.Decoder
	depth    int
	problems []string
}

func (p *strictParser) value(path string) (*snode, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if p.depth++; p.depth > maxStateDepth {
			return nil, fmt.Errorf("objects and arrays nest deeper than %d levels", maxStateDepth)
		}
		defer func() { p.depth-- }()
		switch t {
		case '{':
			n := &snode{kind: 'o'}
			seen := map[string]string{} // folded key → key
			for p.dec.More() {
				kt, err := p.dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("an object key is not a string")
				}
				kp := jsonPath(path, key)
				v, err := p.value(kp)
				if err != nil {
					return nil, err
				}
				if prev, dup := seen[strings.ToLower(key)]; dup {
					if prev == key {
						p.problems = append(p.problems, fmt.Sprintf("%s: the key %q appears more than once (JSON readers disagree on which one wins)", kp, key))
					} else {
						p.problems = append(p.problems, fmt.Sprintf("%s: the keys %q and %q differ only in letter case (some JSON readers take them for one key)", kp, prev, key))
					}
					continue
				}
				seen[strings.ToLower(key)] = key
				n.keys = append(n.keys, key)
				n.vals = append(n.vals, v)
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, err
			}
			return n, nil
		case '[':
			n := &snode{kind: 'a'}
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
		return &snode{kind: 's', str: t}, nil
	case json.Number:
		return &snode{kind: 'n', num: t}, nil
	case bool:
		return &snode{kind: 'b', yes: t}, nil
	case nil:
		return &snode{kind: 'z'}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// strictBinder assigns a parsed document to Go values by their exact JSON
// field names, collecting every problem.
type strictBinder struct {
	problems []string
	unknown  int
}

func (b *strictBinder) add(path, format string, args ...any) {
	if path == "" {
		path = "the document"
	}
	b.problems = append(b.problems, path+": "+fmt.Sprintf(format, args...))
}

var textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()

// bind sets v from n. nullable says whether null is allowed here (and
// means the zero value): for optional fields, and for slices and maps
// (null is an empty one). A map value or an array element is never
// nullable.
func (b *strictBinder) bind(v reflect.Value, n *snode, path string, nullable bool) {
	if n.kind == 'z' {
		if !nullable && v.Kind() != reflect.Slice && v.Kind() != reflect.Map {
			b.add(path, "is null, where %s is required", typeName(v.Type()))
		}
		v.SetZero()
		return
	}
	if reflect.PointerTo(v.Type()).Implements(textUnmarshalerType) {
		if n.kind != 's' {
			b.wrongType(path, "a string", n)
			return
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.str)); err != nil {
			b.add(path, "%q is not %s (%v)", n.str, typeName(v.Type()), err)
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		b.bind(e.Elem(), n, path, false)
		v.Set(e)
	case reflect.Struct:
		if n.kind != 'o' {
			b.wrongType(path, "an object", n)
			return
		}
		fields := strictFields(v.Type())
		present := map[string]bool{}
		for i, key := range n.keys {
			kp := jsonPath(path, key)
			f, ok := fields[key]
			if !ok {
				b.unknown++
				b.add(kp, "unknown field %q", key)
				continue
			}
			present[key] = true
			b.bind(v.Field(f.index), n.vals[i], kp, f.optional)
		}
		for name, f := range fields {
			if !f.optional && !present[name] && f.kind != reflect.Slice && f.kind != reflect.Map {
				b.add(jsonPath(path, name), "is missing")
			}
		}
	case reflect.Map:
		if n.kind != 'o' {
			b.wrongType(path, "an object", n)
			return
		}
		if v.Type().Key().Kind() != reflect.String {
			panic(fmt.Sprintf("store: strict decoding of %s", v.Type()))
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.keys))
		for i, key := range n.keys {
			e := reflect.New(v.Type().Elem()).Elem()
			b.bind(e, n.vals[i], jsonPath(path, key), false)
			m.SetMapIndex(reflect.ValueOf(key).Convert(v.Type().Key()), e)
		}
		v.Set(m)
	case reflect.Slice:
		if n.kind != 'a' {
			b.wrongType(path, "an array", n)
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.elems), len(n.elems))
		for i, e := range n.elems {
			b.bind(s.Index(i), e, fmt.Sprintf("%s[%d]", path, i), false)
		}
		v.Set(s)
	case reflect.String:
		if n.kind != 's' {
			b.wrongType(path, "a string", n)
			return
		}
		v.SetString(n.str)
	case reflect.Bool:
		if n.kind != 'b' {
			b.wrongType(path, "true or false", n)
			return
		}
		v.SetBool(n.yes)
	case reflect.Uint64, reflect.Uint32, reflect.Uint:
		if n.kind != 'n' || !plainUint.MatchString(string(n.num)) {
			b.wrongType(path, "a whole number written as plain digits", n)
			return
		}
		u, err := strconv.ParseUint(string(n.num), 10, v.Type().Bits())
		if err != nil {
			b.add(path, "%s is out of range", n.num)
			return
		}
		v.SetUint(u)
	case reflect.Int64, reflect.Int32, reflect.Int:
		if n.kind != 'n' || !plainInt.MatchString(string(n.num)) {
			b.wrongType(path, "an integer written as plain digits", n)
			return
		}
		i, err := strconv.ParseInt(string(n.num), 10, v.Type().Bits())
		if err != nil {
			b.add(path, "%s is out of range", n.num)
			return
		}
		v.SetInt(i)
	default:
		panic(fmt.Sprintf("store: strict decoding of %s at %s", v.Type(), path))
	}
}

var (
	plainUint = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)
	plainInt  = regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`)
)

func (b *strictBinder) wrongType(path, want string, n *snode) {
	got := map[byte]string{'o': "an object", 'a': "an array", 's': "a string", 'n': "a number", 'b': "a boolean", 'z': "null"}[n.kind]
	if n.kind == 'n' {
		got = "the number " + string(n.num)
	}
	b.add(path, "must be %s, not %s", want, got)
}

var timeType = reflect.TypeFor[time.Time]()

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
	}
	return "a number"
}

type strictField struct {
	index    int
	optional bool // omitempty: may be missing or null
	kind     reflect.Kind
}

// strictFields maps the JSON names of t's fields to their indexes.
func strictFields(t reflect.Type) map[string]strictField {
	m := make(map[string]strictField, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = strictField{index: i, optional: strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,"), kind: f.Type.Kind()}
	}
	return m
}

var simpleJSONKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// jsonPath appends a key to a JSON path: a.b, or a["/x y"] for keys that
// are not simple.
func jsonPath(path, key string) string {
	if !simpleJSONKey.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}
