package importer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/strictjson"
)

// registrySchemaURL is the $schema URL of a published server.json schema
// version (a date such as "2025-12-11").
func registrySchemaURL(date string) string {
	return "https://static.modelcontextprotocol.io/schemas/" + date + "/server.schema.json"
}

// registryVersion is one server.json schema version the MCP Registry has
// published (its CHANGELOG, docs/reference/server-json/CHANGELOG.md of
// modelcontextprotocol/registry). berth reads each into one model; the
// versions differ only in the names of their fields (docs/manifest.md,
// "server.json schema versions").
type registryVersion struct {
	date string
	// snake: the field names are snake_case (registry_type, is_secret);
	// 2025-09-16 renamed them to camelCase.
	snake bool
	// status: the server has a top-level status, which 2025-09-29 left
	// to the registry (API metadata, not the publisher's file).
	status bool
	// titleIcons: the server has title and icons (added after
	// 2025-09-29).
	titleIcons bool
	// remoteVariables: a remote has variables for {placeholders} in its
	// url (2025-12-11).
	remoteVariables bool
}

// registryVersions are the published versions, oldest first.
var registryVersions = []*registryVersion{
	{date: "2025-07-09", snake: true, status: true},
	{date: "2025-09-16", status: true},
	{date: "2025-09-29"},
	{date: "2025-10-11", titleIcons: true},
	{date: "2025-10-17", titleIcons: true},
	{date: "2025-12-11", titleIcons: true, remoteVariables: true},
}

// RegistrySchemaVersions are the dates of the server.json schema versions
// berth reads, oldest first.
func RegistrySchemaVersions() []string {
	var out []string
	for _, v := range registryVersions {
		out = append(out, v.date)
	}
	return out
}

// registryVersionOf returns the version a $schema URL names: the schema
// URL of a published version, alone or with the fragment
// #/definitions/ServerDetail (the schema's root definition, so the same
// version).
func registryVersionOf(schema string) *registryVersion {
	u := strings.TrimSuffix(schema, "#/definitions/ServerDetail")
	for _, v := range registryVersions {
		if u == registrySchemaURL(v.date) {
			return v
		}
	}
	return nil
}

// The kinds of objects of a server.json, each with the fields every
// version defines (in camelCase, as berth reads them).
type registryKind int

const (
	kindRoot registryKind = iota
	kindRepo
	kindIcon
	kindPackage
	kindTransport
	kindRemote
	kindArg
	kindKeyValue
	kindInput
	kindCount
)

func (k registryKind) base() []string {
	return [...][]string{
		kindRoot:      {"$schema", "name", "description", "version", "websiteUrl", "repository", "packages", "remotes", "_meta"},
		kindRepo:      registryFields.repo,
		kindIcon:      registryFields.icon,
		kindPackage:   registryFields.pkg,
		kindTransport: registryFields.transport,
		kindRemote:    {"type", "url", "headers"},
		kindArg:       registryFields.arg,
		kindKeyValue:  registryFields.kv,
		kindInput:     registryFields.input,
	}[k]
}

// snakeNames are the fields 2025-09-16 renamed, as 2025-07-09 spells
// them.
var snakeNames = map[string]string{
	"registryType":         "registry_type",
	"registryBaseUrl":      "registry_base_url",
	"fileSha256":           "file_sha256",
	"runtimeHint":          "runtime_hint",
	"runtimeArguments":     "runtime_arguments",
	"packageArguments":     "package_arguments",
	"environmentVariables": "environment_variables",
	"isRequired":           "is_required",
	"isSecret":             "is_secret",
	"valueHint":            "value_hint",
	"isRepeated":           "is_repeated",
	"websiteUrl":           "website_url",
}

// fields returns the fields v defines in an object of kind k, in berth's
// (camelCase) names.
func (v *registryVersion) fields(k registryKind) []string {
	out := slices.Clone(k.base())
	switch k {
	case kindRoot:
		if v.status {
			out = append(out, "status")
		}
		if v.titleIcons {
			out = append(out, "title", "icons")
		}
	case kindRemote:
		if v.remoteVariables {
			out = append(out, "variables")
		}
	}
	return out
}

// spelling is how v spells the field f.
func (v *registryVersion) spelling(f string) string {
	if s, ok := snakeNames[f]; ok && v.snake {
		return s
	}
	return f
}

// definedBy returns the versions other than v that define the field
// spelled key in an object of kind k.
func (v *registryVersion) definedBy(k registryKind, key string) []string {
	var out []string
	for _, o := range registryVersions {
		if o == v {
			continue
		}
		for _, f := range o.fields(k) {
			if o.spelling(f) == key {
				out = append(out, o.date)
				break
			}
		}
	}
	return out
}

// object reads the object n at path as an object of kind k of the
// document's schema version. Its keys are in berth's (camelCase) names. A
// field that this version does not define and another published version
// does is a problem (RuleRegistryUnknownField): the label and the content
// disagree, and berth does not guess which was meant. Any other field is
// accepted and listed as not carried over; it changes nothing that runs.
func (x *registryImport) object(n *strictjson.Node, path string, k registryKind) (obj, bool) {
	o, ok := x.d.object(n, path)
	if !ok || n == nil {
		return o, ok
	}
	spelled := map[string]string{}
	for _, f := range x.v.fields(k) {
		s := x.v.spelling(f)
		spelled[s] = f
		if s != f {
			if o.spell == nil {
				o.spell = map[string]string{}
			}
			o.spell[f] = s
		}
	}
	keys := map[string]*strictjson.Node{}
	var unknown [][2]string // key, path
	foreign := false
	for _, key := range n.Keys {
		if f, ok := spelled[key]; ok {
			keys[f] = o.keys[key]
			continue
		}
		p := strictjson.JoinPath(path, key)
		if others := x.v.definedBy(k, key); len(others) > 0 {
			x.d.add(p, bundle.RuleRegistryUnknownField, "%q is a field of server.json %s, not of %s, the version $schema names: the label and the content disagree, and berth does not guess which is meant; set $schema to the version the file is written in, or write the field as %s does", key, strings.Join(others, ", "), x.v.date, x.v.date)
			foreign = true
			continue
		}
		unknown = append(unknown, [2]string{key, p})
	}
	if foreign {
		// The object is not read further: what else it says is as
		// uncertain as the field.
		return o, false
	}
	for _, u := range unknown {
		x.notCarried(x.d.loc(u[1]), "unknown-field", u[0], "server.json "+x.v.date+" does not define it; berth reads only the fields the schema defines, and this one changes nothing that runs")
	}
	o.keys = keys
	return o, true
}

// shapeRules are the rules of a document's shape: a document is valid
// under a version when berth's reading of it as that version reports no
// problem of these rules.
var shapeRules = []string{bundle.RuleRegistryWrongType, bundle.RuleRegistryRequiredField, bundle.RuleRegistryUnknownField}

// shapeProblems returns the problems of c that are of shapeRules.
func shapeProblems(c *conversion) []*bundle.Problem {
	var out []*bundle.Problem
	for _, p := range c.ps.list {
		if slices.Contains(shapeRules, p.Rule) {
			out = append(out, p)
		}
	}
	return out
}

// inferRegistry reads a document whose $schema is empty or absent. It is
// read as the one published version it is valid under: every field it
// has is one that version defines (or one no version defines), and
// berth's reading as that version finds no field of the wrong type or
// outside its enum or pattern and no required field missing. Under none,
// or under more than one, it is refused (RuleRegistrySchemaUnknown),
// naming the candidates: berth does not guess.
func inferRegistry(file string, root *strictjson.Node, how string) *conversion {
	var fits []string
	var fit, closest *conversion
	fewest := -1
	for _, v := range registryVersions {
		c := readRegistry(file, root, v)
		n := len(shapeProblems(c))
		if n == 0 {
			fits = append(fits, v.date)
			fit = c
		}
		if fewest < 0 || n <= fewest {
			fewest, closest = n, c
		}
	}
	if len(fits) == 1 {
		fit.manifest.ImportedFrom.FormatVersionInferred = true
		return fit
	}
	c := newConversion()
	d := &doc{file: file, rules: registryRules, ps: &c.ps}
	if len(fits) == 0 {
		d.add("$schema", bundle.RuleRegistrySchemaUnknown, "$schema is %s, and the document is valid under no published server.json version (%s), so berth cannot tell which it is; set $schema to the version it is written in (its problems as the closest version follow)", how, strings.Join(RegistrySchemaVersions(), ", "))
		c.ps.list = append(c.ps.list, shapeProblems(closest)...)
		return c
	}
	d.add("$schema", bundle.RuleRegistrySchemaUnknown, "$schema is %s, and the document is valid under %d published server.json versions (%s); berth reads a file that names no version only when exactly one fits, and does not guess: set $schema to the version it is written in, for example %q", how, len(fits), strings.Join(fits, ", "), registrySchemaURL(fits[len(fits)-1]))
	return c
}

// schemaProblem is the problem of a $schema that names no published
// version.
func schemaProblem(d *doc, schema string) {
	d.add("$schema", bundle.RuleRegistrySchema, "$schema is %q, which is not a server.json schema the MCP Registry has published (berth reads %s, as %s); berth does not guess at the fields of another version", schema, strings.Join(RegistrySchemaVersions(), ", "), fmt.Sprintf("%q", registrySchemaURL("DATE")))
}
