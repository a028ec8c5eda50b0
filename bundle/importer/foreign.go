package importer

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/strictjson"
)

// foreignRules are the rule IDs a format uses for problems of its files'
// shape.
type foreignRules struct {
	syntax, unknown, wrongType, required string
}

var (
	mcpbRules     = foreignRules{bundle.RuleMCPBSyntax, bundle.RuleMCPBUnknownField, bundle.RuleMCPBWrongType, bundle.RuleMCPBRequiredField}
	claudeRules   = foreignRules{bundle.RuleClaudeSyntax, bundle.RuleClaudeUnknownField, bundle.RuleClaudeWrongType, bundle.RuleClaudeRequiredField}
	registryRules = foreignRules{bundle.RuleRegistrySyntax, bundle.RuleRegistryUnknownField, bundle.RuleRegistryWrongType, bundle.RuleRegistryRequiredField}
)

// doc is one parsed file of another format. Every problem is added to ps,
// located as "file: json.path".
type doc struct {
	file  string
	rules foreignRules
	ps    *problems
}

func (d *doc) loc(path string) string {
	if path == "" {
		return d.file
	}
	return d.file + ": " + path
}

func (d *doc) add(path, rule, format string, args ...any) {
	d.ps.add(d.loc(path), rule, format, args...)
}

// maxForeignSize is the largest manifest of another format berth reads.
const maxForeignSize = bundle.MaxManifestSize

// parse parses data as one JSON document with no duplicate keys, nested
// at most strictjson's default 32 levels (as berth.json). It returns nil,
// with the problem added, when data is not such a document.
func (d *doc) parse(data []byte) *strictjson.Node {
	name := filepath.Base(d.file)
	root, ps := strictjson.Parse(data, strictjson.Options{MaxSize: maxForeignSize})
	var dups []strictjson.Problem
	for _, p := range ps {
		switch p.Kind {
		case strictjson.TooLarge:
			d.add("", d.rules.syntax, "%s is %d bytes, over the limit of %d (1 MiB)", name, len(data), maxForeignSize)
			return nil
		case strictjson.BOM:
			d.add("", d.rules.syntax, "%s starts with a UTF-8 byte-order mark; save it as UTF-8 without BOM", name)
			return nil
		case strictjson.InvalidUTF8:
			line, col := strictjson.LineCol(data, p.Offset)
			d.add("", d.rules.syntax, "%s is not valid UTF-8 (first bad byte at line %d, column %d); save it as UTF-8", name, line, col)
			return nil
		case strictjson.Syntax:
			d.add("", d.rules.syntax, "%s is not well-formed JSON: %s", name, strictjson.SyntaxAt(data, p.Offset, p.Err))
			return nil
		case strictjson.Trailing:
			line, col := strictjson.LineCol(data, p.Offset)
			d.add("", d.rules.syntax, "%s has data after its JSON value (near line %d, column %d); keep exactly one JSON value in the file", name, line, col)
			return nil
		default: // DuplicateKey: reported only when the document is otherwise whole
			dups = append(dups, p)
		}
	}
	for _, p := range dups {
		d.add(p.Path, d.rules.syntax, "key %q appears more than once in this object; keep one (JSON readers disagree on which wins)", p.Key)
	}
	if len(dups) > 0 {
		return nil
	}
	return root
}

// obj is a JSON object of a foreign document, with its path.
type obj struct {
	d    *doc
	path string
	n    *strictjson.Node
	keys map[string]*strictjson.Node
	// spell maps a key of keys to how the document spells it, when the
	// two differ (a server.json of 2025-07-09 spells registryType as
	// registry_type); locations and messages use the document's spelling.
	spell map[string]string
}

// object checks that n is an object whose keys are all in allowed, and
// returns it. Unknown keys are problems; ok is false when n is not an
// object. A nil n (an absent value) gives an empty object.
func (d *doc) object(n *strictjson.Node, path string, allowed ...string) (obj, bool) {
	o := obj{d: d, path: path, n: n, keys: map[string]*strictjson.Node{}}
	if n == nil {
		return o, true
	}
	if n.Kind != strictjson.Object {
		d.wrong(path, "an object", n)
		return o, false
	}
	set := map[string]bool{}
	for _, a := range allowed {
		set[a] = true
	}
	for i, k := range n.Keys {
		if allowed != nil && !set[k] {
			d.add(strictjson.JoinPath(path, k), d.rules.unknown, "unknown field %q; %s does not define it here (strict, as its own tools are)", k, d.format())
			continue
		}
		o.keys[k] = n.Values[i]
	}
	return o, true
}

func (d *doc) format() string {
	switch d.rules.syntax {
	case bundle.RuleMCPBSyntax:
		return "this MCPB manifest version"
	case bundle.RuleClaudeSyntax:
		return "a Claude Code plugin"
	}
	return "server.json"
}

func (d *doc) wrong(path, want string, n *strictjson.Node) {
	d.add(path, d.rules.wrongType, "must be %s, not %s", want, n.Kind)
}

// members returns the object's entries in document order.
func (o obj) members() ([]string, []*strictjson.Node) {
	if o.n == nil || o.n.Kind != strictjson.Object {
		return nil, nil
	}
	var ks []string
	var vs []*strictjson.Node
	for i, k := range o.n.Keys {
		if _, ok := o.keys[k]; ok {
			ks = append(ks, k)
			vs = append(vs, o.n.Values[i])
		}
	}
	return ks, vs
}

func (o obj) has(key string) bool { _, ok := o.keys[key]; return ok }

func (o obj) at(key string) string { return strictjson.JoinPath(o.path, o.name(key)) }

// name is key as the document spells it.
func (o obj) name(key string) string {
	if s, ok := o.spell[key]; ok {
		return s
	}
	return key
}

// str returns a string field; a missing required one is a problem.
func (o obj) str(key string, required bool) (string, bool) {
	n, ok := o.keys[key]
	if !ok {
		if required {
			o.d.add(o.at(key), o.d.rules.required, "%s is required", o.name(key))
		}
		return "", false
	}
	if n.Kind != strictjson.String {
		o.d.wrong(o.at(key), "a string", n)
		return "", false
	}
	return n.Str, true
}

func (o obj) boolean(key string) (bool, bool) {
	n, ok := o.keys[key]
	if !ok {
		return false, false
	}
	if n.Kind != strictjson.Bool {
		o.d.wrong(o.at(key), "a boolean", n)
		return false, false
	}
	return n.Bool, true
}

func (o obj) number(key string) (string, bool) {
	n, ok := o.keys[key]
	if !ok {
		return "", false
	}
	if n.Kind != strictjson.Number {
		o.d.wrong(o.at(key), "a number", n)
		return "", false
	}
	return string(n.Num), true
}

// strs returns an array of strings.
func (o obj) strs(key string) ([]string, bool) {
	n, ok := o.keys[key]
	if !ok {
		return nil, false
	}
	return o.d.strList(n, o.at(key))
}

func (d *doc) strList(n *strictjson.Node, path string) ([]string, bool) {
	if n.Kind != strictjson.Array {
		d.wrong(path, "an array of strings", n)
		return nil, false
	}
	out := make([]string, 0, len(n.Elems))
	ok := true
	for i, e := range n.Elems {
		if e.Kind != strictjson.String {
			d.wrong(fmt.Sprintf("%s[%d]", path, i), "a string", e)
			ok = false
			continue
		}
		out = append(out, e.Str)
	}
	return out, ok
}

// strMap returns an object of strings, keys in document order.
func (o obj) strMap(key string) ([]string, map[string]string, bool) {
	n, ok := o.keys[key]
	if !ok {
		return nil, nil, false
	}
	if n.Kind != strictjson.Object {
		o.d.wrong(o.at(key), "an object of strings", n)
		return nil, nil, false
	}
	m := map[string]string{}
	var keys []string
	good := true
	for i, k := range n.Keys {
		v := n.Values[i]
		if v.Kind != strictjson.String {
			o.d.wrong(strictjson.JoinPath(o.at(key), k), "a string", v)
			good = false
			continue
		}
		keys = append(keys, k)
		m[k] = v.Str
	}
	return keys, m, good
}

// array returns the elements of an array field.
func (o obj) array(key string) ([]*strictjson.Node, bool) {
	n, ok := o.keys[key]
	if !ok {
		return nil, false
	}
	if n.Kind != strictjson.Array {
		o.d.wrong(o.at(key), "an array", n)
		return nil, false
	}
	return n.Elems, true
}

// index is a JSON path of an array element.
func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// scalarText renders a string, number or boolean as text, the way a
// substitution would.
func scalarText(n *strictjson.Node) (string, bool) {
	switch n.Kind {
	case strictjson.String:
		return n.Str, true
	case strictjson.Number:
		return string(n.Num), true
	case strictjson.Bool:
		return strconv.FormatBool(n.Bool), true
	}
	return "", false
}

// envPrefix turns a bundle name into the prefix of the environment
// variables its inputs are read from: upper case, every character outside
// [A-Z0-9] replaced with '_'.
func envPrefix(name string) string { return envWord(name) }

// envWord upper-cases s and replaces every character outside [A-Z0-9_]
// with '_'.
func envWord(s string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// inputEnvName is the host environment variable an input of a bundle is
// read from: <BUNDLE>_<KEY>, as envWord writes both
// (docs/manifest.md, "Inputs become environment sources").
func inputEnvName(bundleName, key string) string {
	return envPrefix(bundleName) + "_" + envWord(key)
}
