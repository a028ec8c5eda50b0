package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/berth-mcp/berth/bundle"
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

// parse parses data as one JSON document with no duplicate keys. It
// returns nil, with the problem added, when data is not such a document.
func (d *doc) parse(data []byte) *node {
	name := filepath.Base(d.file)
	switch {
	case len(data) > maxForeignSize:
		d.add("", d.rules.syntax, "%s is %d bytes, over the limit of %d (1 MiB)", name, len(data), maxForeignSize)
		return nil
	case bytes.HasPrefix(data, []byte("\xef\xbb\xbf")):
		d.add("", d.rules.syntax, "%s starts with a UTF-8 byte-order mark; save it as UTF-8 without BOM", name)
		return nil
	case !utf8.Valid(data):
		line, col := lineCol(data, invalidUTF8Offset(data))
		d.add("", d.rules.syntax, "%s is not valid UTF-8 (first bad byte at line %d, column %d); save it as UTF-8", name, line, col)
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var dup problems
	p := &parser{dec: dec, ps: &dup}
	root, err := p.value("")
	if err != nil {
		d.add("", d.rules.syntax, "%s is not well-formed JSON: %s", name, syntaxDetail(data, dec, err))
		return nil
	}
	if _, err := dec.Token(); err != io.EOF {
		line, col := lineCol(data, int(dec.InputOffset()))
		d.add("", d.rules.syntax, "%s has data after its JSON value (near line %d, column %d); keep exactly one JSON value in the file", name, line, col)
		return nil
	}
	for _, q := range dup.list {
		d.add(q.Path, d.rules.syntax, "%s", q.Message)
	}
	if len(dup.list) > 0 {
		return nil
	}
	return root
}

// obj is a JSON object of a foreign document, with its path.
type obj struct {
	d    *doc
	path string
	n    *node
	keys map[string]*node
}

// object checks that n is an object whose keys are all in allowed, and
// returns it. Unknown keys are problems; ok is false when n is not an
// object. A nil n (an absent value) gives an empty object.
func (d *doc) object(n *node, path string, allowed ...string) (obj, bool) {
	o := obj{d: d, path: path, n: n, keys: map[string]*node{}}
	if n == nil {
		return o, true
	}
	if n.kind != 'o' {
		d.wrong(path, "an object", n)
		return o, false
	}
	set := map[string]bool{}
	for _, a := range allowed {
		set[a] = true
	}
	for i, k := range n.keys {
		if allowed != nil && !set[k] {
			d.add(joinPath(path, k), d.rules.unknown, "unknown field %q; %s does not define it here (strict, as its own tools are)", k, d.format())
			continue
		}
		o.keys[k] = n.vals[i]
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
	return "server.json (2025-12-11)"
}

func (d *doc) wrong(path, want string, n *node) {
	d.add(path, d.rules.wrongType, "must be %s, not %s", want, kindName(n))
}

// members returns the object's entries in document order.
func (o obj) members() ([]string, []*node) {
	if o.n == nil || o.n.kind != 'o' {
		return nil, nil
	}
	var ks []string
	var vs []*node
	for i, k := range o.n.keys {
		if _, ok := o.keys[k]; ok {
			ks = append(ks, k)
			vs = append(vs, o.n.vals[i])
		}
	}
	return ks, vs
}

func (o obj) has(key string) bool { _, ok := o.keys[key]; return ok }

func (o obj) at(key string) string { return joinPath(o.path, key) }

// str returns a string field; a missing required one is a problem.
func (o obj) str(key string, required bool) (string, bool) {
	n, ok := o.keys[key]
	if !ok {
		if required {
			o.d.add(o.at(key), o.d.rules.required, "%s is required", key)
		}
		return "", false
	}
	if n.kind != 's' {
		o.d.wrong(o.at(key), "a string", n)
		return "", false
	}
	return n.str, true
}

func (o obj) boolean(key string) (bool, bool) {
	n, ok := o.keys[key]
	if !ok {
		return false, false
	}
	if n.kind != 'b' {
		o.d.wrong(o.at(key), "a boolean", n)
		return false, false
	}
	return n.b, true
}

func (o obj) number(key string) (string, bool) {
	n, ok := o.keys[key]
	if !ok {
		return "", false
	}
	if n.kind != 'n' {
		o.d.wrong(o.at(key), "a number", n)
		return "", false
	}
	return string(n.num), true
}

// strs returns an array of strings.
func (o obj) strs(key string) ([]string, bool) {
	n, ok := o.keys[key]
	if !ok {
		return nil, false
	}
	return o.d.strList(n, o.at(key))
}

func (d *doc) strList(n *node, path string) ([]string, bool) {
	if n.kind != 'a' {
		d.wrong(path, "an array of strings", n)
		return nil, false
	}
	out := make([]string, 0, len(n.elems))
	ok := true
	for i, e := range n.elems {
		if e.kind != 's' {
			d.wrong(fmt.Sprintf("%s[%d]", path, i), "a string", e)
			ok = false
			continue
		}
		out = append(out, e.str)
	}
	return out, ok
}

// strMap returns an object of strings, keys in document order.
func (o obj) strMap(key string) ([]string, map[string]string, bool) {
	n, ok := o.keys[key]
	if !ok {
		return nil, nil, false
	}
	if n.kind != 'o' {
		o.d.wrong(o.at(key), "an object of strings", n)
		return nil, nil, false
	}
	m := map[string]string{}
	var keys []string
	good := true
	for i, k := range n.keys {
		v := n.vals[i]
		if v.kind != 's' {
			o.d.wrong(joinPath(o.at(key), k), "a string", v)
			good = false
			continue
		}
		keys = append(keys, k)
		m[k] = v.str
	}
	return keys, m, good
}

// array returns the elements of an array field.
func (o obj) array(key string) ([]*node, bool) {
	n, ok := o.keys[key]
	if !ok {
		return nil, false
	}
	if n.kind != 'a' {
		o.d.wrong(o.at(key), "an array", n)
		return nil, false
	}
	return n.elems, true
}

// index is a JSON path of an array element.
func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// scalarText renders a string, number or boolean as text, the way a
// substitution would.
func scalarText(n *node) (string, bool) {
	switch n.kind {
	case 's':
		return n.str, true
	case 'n':
		return string(n.num), true
	case 'b':
		return strconv.FormatBool(n.b), true
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
