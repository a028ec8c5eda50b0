package bundle

import (
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/berth-mcp/berth/internal/strictjson"
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
	root, sps := strictjson.Parse(data, strictjson.Options{MaxSize: MaxManifestSize, MaxDepth: maxDepth})
	for _, p := range sps {
		switch p.Kind {
		case strictjson.TooLarge:
			ps.add(ManifestFile, RuleManifestTooLarge, "berth.json is %d bytes, over the limit of %d (1 MiB); move large data into files of the bundle", len(data), MaxManifestSize)
		case strictjson.BOM:
			ps.add(ManifestFile, RuleManifestBOM, "berth.json starts with a UTF-8 byte-order mark; save it as UTF-8 without BOM")
		case strictjson.InvalidUTF8:
			line, col := strictjson.LineCol(data, p.Offset)
			ps.add(ManifestFile, RuleManifestInvalidUTF8, "berth.json is not valid UTF-8 (first bad byte at line %d, column %d); save it as UTF-8", line, col)
		case strictjson.Syntax:
			ps.add(ManifestFile, RuleManifestSyntax, "berth.json is not well-formed JSON: %s; fix the syntax (a JSON linter shows where)", strictjson.SyntaxAt(data, p.Offset, p.Err))
		case strictjson.Trailing:
			line, col := strictjson.LineCol(data, p.Offset)
			ps.add(ManifestFile, RuleManifestTrailing, "berth.json has data after its JSON value (near line %d, column %d); keep exactly one JSON object in the file", line, col)
		default:
			ps.add(p.Path, RuleDuplicateKey, "key %q appears more than once in this object; keep one (JSON readers disagree on which wins)", p.Key)
		}
	}
	if root == nil {
		return d
	}
	m := new(Manifest)
	b := &binder{ps: ps, present: d.present, bad: d.bad}
	for _, p := range strictjson.Bind(m, root, strictjson.Options{Nulls: strictjson.NullNever, Hook: b.hook}) {
		switch p.Kind {
		case strictjson.UnknownField:
			ps.add(p.Path, RuleUnknownField, "unknown field %q: manifest v1 does not define it; remove it or check its spelling (docs/manifest.md lists every field)", p.Key)
		case strictjson.WrongType, strictjson.NullValue:
			b.wrongType(p.Path, want(p.Type), p.Got.Kind)
		default: // not for the types of a manifest
			ps.add(p.Path, RuleWrongType, "%s", p.Message)
		}
	}
	d.manifest = m
	return d
}

// maxDepth is how deeply objects and arrays may nest in berth.json. A
// manifest v1 needs six levels.
const maxDepth = 32

// binder holds the manifest's own rules on top of strictjson.Bind: which
// paths are present, which could not be decoded, and the rules strictjson
// does not know (literal environment values, control characters, integers
// with a fraction or exponent).
type binder struct {
	ps      *problems
	present map[string]bool
	bad     map[string]bool
	// remote is the path of the last remote bound, to tell its headers
	// from a server's environment.
	remote string
}

var (
	envSourceType = reflect.TypeFor[EnvSource]()
	remoteType    = reflect.TypeFor[Remote]()
)

// hook is offered every value before strictjson's rules; it returns true
// for those it decoded itself.
func (b *binder) hook(v reflect.Value, n *strictjson.Node, path string) bool {
	b.present[path] = true
	switch {
	case v.Type() == remoteType:
		b.remote = path
	case v.Type() == envSourceType && n.Kind == strictjson.String:
		// Say exactly what to write instead; never repeat the value, it
		// may be a secret.
		rule, what := RuleEnvLiteralValue, "environment variable"
		if b.remote != "" && strings.HasPrefix(path, b.remote+".headers") {
			rule, what = RuleHeaderLiteralValue, "header"
		}
		b.bad[path] = true
		b.ps.add(path, rule, "%s values may not be literal strings (the value is not shown; it may be a secret); write {\"fromEnv\": \"NAME\"} and set NAME on the host", what)
		return true
	case v.Kind() == reflect.String && n.Kind == strictjson.String:
		if i := strings.IndexFunc(n.Str, unicode.IsControl); i >= 0 {
			r, _ := utf8.DecodeRuneInString(n.Str[i:])
			b.ps.add(path, RuleControlCharacter, "this string holds %s at byte %d (the value is not shown; it may be a secret); remove it: control characters can hide text from a reviewer or end a string early in other readers", describeRune(r), i)
		}
	case v.Kind() == reflect.Int:
		b.integer(v, n, path)
		return true
	}
	return false
}

// integer decodes an int as JSON readers that read every number as a
// float64 would, and flags 1.0 and 1e0 (RuleIntegerForm).
func (b *binder) integer(v reflect.Value, n *strictjson.Node, path string) {
	if n.Kind != strictjson.Number {
		b.wrongType(path, "an integer", n.Kind)
		return
	}
	f, err := strconv.ParseFloat(string(n.Num), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<31 {
		b.wrongType(path, "an integer", n.Kind)
		return
	}
	if !plainInteger.MatchString(string(n.Num)) {
		b.ps.add(path, RuleIntegerForm, "%s is written with a fraction or an exponent; write the integer %d as plain digits: JSON readers disagree on whether %s is an integer", n.Num, int64(f), n.Num)
	}
	v.SetInt(int64(f))
}

func (b *binder) wrongType(path, want string, got strictjson.Kind) {
	b.bad[path] = true
	if path == "" {
		b.ps.add(ManifestFile, RuleWrongType, "berth.json must hold %s, not %s", want, got)
		return
	}
	b.ps.add(path, RuleWrongType, "must be %s, not %s", want, got)
}

// want names what a value of Go type t is in a manifest.
func want(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int:
		return "an integer"
	}
	return "an object"
}

// plainInteger is a JSON number written as an integer: no fraction, no
// exponent, no "-0".
var plainInteger = regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`)
