package schemas_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/schemas"
)

const fixtures = "../testdata/bundles"

// contractRequired mirrors the manifest v1 contract: the fields that must be
// present in each object. In Go, requiredness is enforced by the validator,
// not by the types, so it is written out here and compared with the
// schema's "required" lists. A struct type not listed has no required
// fields.
var contractRequired = map[reflect.Type][]string{
	reflect.TypeFor[bundle.Manifest]():       {"manifestVersion", "name", "version", "description"},
	reflect.TypeFor[bundle.Publisher]():      {"name"},
	reflect.TypeFor[bundle.Stdio]():          {"command"},
	reflect.TypeFor[bundle.Remote]():         {"transport", "url", "network"},
	reflect.TypeFor[bundle.Network]():        {"hosts"},
	reflect.TypeFor[bundle.NativeTool]():     {"executable"},
	reflect.TypeFor[bundle.SandboxNetwork](): {"mode"},
	// importedFrom, written by berth import.
	reflect.TypeFor[bundle.ImportedFrom](): {"format", "manifest"},
	reflect.TypeFor[bundle.ImportInput]():  {"name", "becomes"},
	reflect.TypeFor[bundle.DeclaredItem](): {"name"},
	reflect.TypeFor[bundle.NotCarried]():   {"field", "kind", "reason"},
	reflect.TypeFor[bundle.PinnedFetch]():  {"server", "package", "resolved"},
}

// schemaRules are the rules whose every violation in the bad fixtures the
// schema rejects by itself. A bad bundle whose .want names only these rules
// must fail the schema. The other rules need the bundle's file tree, compare
// fields with each other, or are policy lists that live in one place (Go):
//
//   - decoding rules (manifest-bom, -syntax, duplicate-key, ...) concern
//     bytes that are not a JSON document a schema could see;
//   - requires-constraint and requires-unsatisfied need the Masterminds
//     constraint grammar and berth's own version;
//   - timeout-range, command-form, variable-*, bundle-path-*,
//     cwd-not-directory, runtime-fetch-unpinned, command-not-executable and
//     native-executable need the tree or a parser of the value;
//   - env-key-forbidden and header-forbidden are case-insensitive policy
//     lists kept only in bundle/validate.go, so they cannot drift;
//   - remote-url and remote-url-scheme (http only for loopback literals),
//     remote-url-secret-query and network-hosts-mismatch need the URL parsed
//     and its host normalized.
//
// Some rules below are expressed only as far as syntax goes; their fixtures
// stay within that part: https-url (url.Parse errors beyond "format": "uri"
// are left to Go) and timeout-format (a duration that overflows int64 is
// left to Go).
var schemaRules = map[string]bool{
	bundle.RuleUnknownField:         true,
	bundle.RuleWrongType:            true,
	bundle.RuleRequiredField:        true,
	bundle.RuleManifestVersion:      true,
	bundle.RuleNoComponents:         true,
	bundle.RuleNameFormat:           true,
	bundle.RuleVersionSemver:        true,
	bundle.RuleDescriptionLength:    true,
	bundle.RuleHTTPSURL:             true,
	bundle.RuleServerNameFormat:     true,
	bundle.RuleServerTransport:      true,
	bundle.RuleTimeoutFormat:        true,
	bundle.RuleCommandRequired:      true,
	bundle.RuleEnvLiteralValue:      true,
	bundle.RuleEnvNameFormat:        true,
	bundle.RuleRemoteTransport:      true,
	bundle.RuleRemoteURLUserinfo:    true,
	bundle.RuleRemoteURLFragment:    true,
	bundle.RuleHeaderLiteralValue:   true,
	bundle.RuleHeaderNameFormat:     true,
	bundle.RuleNetworkHostsMissing:  true,
	bundle.RuleToolPattern:          true,
	bundle.RuleNativeToolNameFormat: true,
	bundle.RuleOAuthScope:           true,
	bundle.RuleOAuthRedirectPort:    true,
}

func TestSchemaMatchesGoTypes(t *testing.T) {
	doc := loadSchemaDoc(t, schemas.Berth())
	if got := doc.root["$schema"]; got != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema is %v, want draft 2020-12", got)
	}
	if got := doc.root["$id"]; got != schemas.BerthURL {
		t.Errorf("$id is %v, want %s", got, schemas.BerthURL)
	}
	for _, p := range checkDrift(doc, reflect.TypeFor[bundle.Manifest](), contractRequired) {
		t.Error(p)
	}
}

func TestBerthReturnsCopy(t *testing.T) {
	a := schemas.Berth()
	a[0] = 'x'
	if b := schemas.Berth(); b[0] == 'x' {
		t.Fatal("Berth() returned the embedded slice itself")
	}
}

func TestSchemaRulesAreRules(t *testing.T) {
	known := map[string]bool{}
	for _, r := range bundle.Rules() {
		known[r.ID] = true
	}
	for id := range schemaRules {
		if !known[id] {
			t.Errorf("schemaRules names %q, which is not in bundle.Rules", id)
		}
	}
}

func TestGoodBundlesPassSchema(t *testing.T) {
	sch := compileSchema(t)
	manifests, err := filepath.Glob(filepath.Join(fixtures, "good", "*", bundle.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(manifests) < 3 {
		t.Fatalf("only %d good bundles", len(manifests))
	}
	for _, m := range manifests {
		t.Run(filepath.Base(filepath.Dir(m)), func(t *testing.T) {
			if err := sch.Validate(readInstance(t, m)); err != nil {
				t.Errorf("the schema rejects a good bundle:\n%v", err)
			}
		})
	}
}

func TestBadBundlesFailSchema(t *testing.T) {
	sch := compileSchema(t)
	wants, err := filepath.Glob(filepath.Join(fixtures, "bad", "*.want"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, w := range wants {
		want := readWant(t, w)
		if len(want) == 0 || slices.ContainsFunc(want, func(p wantProblem) bool { return !schemaRules[p.rule] }) {
			continue
		}
		checked++
		name := strings.TrimSuffix(filepath.Base(w), ".want")
		t.Run(name, func(t *testing.T) {
			m := filepath.Join(strings.TrimSuffix(w, ".want"), bundle.ManifestFile)
			if _, err := os.Stat(m); err != nil {
				t.Fatalf("%s names only schema rules but has no %s: %v", w, m, err)
			}
			verr := sch.Validate(readInstance(t, m))
			if verr == nil {
				t.Fatalf("the schema accepts %s, which berth rejects with %v", m, want)
			}
			for _, p := range want {
				if !locates(verr, p.path) {
					t.Errorf("berth reports %s at %s, but no schema error points there:\n%v", p.rule, p.path, verr)
				}
			}
		})
	}
	t.Logf("%d bad bundles break only rules the schema expresses", checked)
	if checked < 30 {
		t.Errorf("only %d bad bundles were checked against the schema; the fixtures or schemaRules lost coverage", checked)
	}
}

// TestSchemaAgreesWithBerth runs manifests through both bundle.Open and the
// schema. A manifest berth accepts must pass the schema (the schema is never
// stricter than berth); one that breaks a schema rule must fail it; one that
// breaks only rules left to Go must pass it (so schemaRules stays honest).
func TestSchemaAgreesWithBerth(t *testing.T) {
	sch := compileSchema(t)
	long := func(n int) string { return strings.Repeat("é", n) }
	name64 := "a" + strings.Repeat("b-", 31) + "c"
	cases := []struct {
		name  string
		patch string // merged over the base manifest; null deletes
		want  []string
	}{
		{"minimal", `{}`, nil},
		{"manifest version 1.0", `{"manifestVersion": 1.0}`, []string{bundle.RuleIntegerForm}},
		{"manifest version 1e0", `{"manifestVersion": 1e0}`, []string{bundle.RuleIntegerForm}},
		{"upper-case https", `{"homepage": "HTTPS://Acme.Example/x", "publisher": {"name": "Acme", "url": "https://acme.example:8443"}}`, nil},
		{"description 1024 characters", fmt.Sprintf(`{"description": %q}`, long(1024)), nil},
		{"name 64 characters", fmt.Sprintf(`{"name": %q}`, name64), nil},
		{"prerelease and build", `{"version": "1.0.0-alpha.1+build.5"}`, nil},
		{"native tools only", `{"mcpServers": {}, "nativeTools": {"fmt_x-1": {"executable": "${bundle}/bin/tool"}}}`, nil},
		{"loopback remote", `{"mcpServers": {"ev": {"remote": {"transport": "sse", "url": "HTTP://LOCALHOST:8080/sse", "network": {"hosts": ["localhost"]}}}}}`, nil},
		{"remote with headers and auth", `{"mcpServers": {"r": {"remote": {"transport": "streamable-http", "url": "https://mcp.example.com/v1?region=eu", "headers": {"X-Api.Version~1": {"fromEnv": "_v"}}, "auth": {"bearerFromEnv": "TOKEN"}, "network": {"hosts": ["mcp.example.com"]}}}}}`, nil},
		{"durations", `{"mcpServers": {"s": {"stdio": {"command": "node"}, "timeouts": {"startup": "+10m", "call": ".5h"}}}}`, nil},
		{"tool globs", `{"mcpServers": {"s": {"stdio": {"command": "node"}, "tools": {"allow": ["a.b-c*?", "*"], "deny": []}}}}`, nil},
		{"env and workspace", `{"mcpServers": {"a_b-9": {"stdio": {"command": "node", "args": ["${workspace}/x", "--root=${workspace}"], "env": {"_x9": {"fromEnv": "lower_ok"}}, "cwd": "${workspace}/sub"}}}}`, nil},
		{"requires", `{"requires": {"berth": "^0.1"}}`, nil},
		{"oauth empty", `{"mcpServers": {"r": {"remote": {"transport": "sse", "url": "https://mcp.example.com/", "auth": {"oauth": {}}, "network": {"hosts": ["mcp.example.com"]}}}}}`, nil},
		{"oauth full", `{"mcpServers": {"r": {"remote": {"transport": "streamable-http", "url": "https://mcp.example.com/", "headers": {"X-Team": {"fromEnv": "T"}}, "auth": {"oauth": {"scopes": ["repo", "read:org", "https://www.googleapis.com/auth/drive"], "clientId": "Ov23liAbCdEf0123456789", "redirectPort": 65535, "issuer": "https://login.example.com/tenant"}}, "network": {"hosts": ["mcp.example.com"]}}}}}`, nil},
		{"oauth loopback issuer", `{"mcpServers": {"r": {"remote": {"transport": "sse", "url": "http://127.0.0.1:9/", "auth": {"oauth": {"issuer": "http://127.0.0.1:8080", "redirectPort": 1024}}, "network": {"hosts": ["127.0.0.1"]}}}}}`, nil},
		{"oauth scope with space", `{"mcpServers": {"r": {"remote": {"transport": "sse", "url": "https://mcp.example.com/", "auth": {"oauth": {"scopes": ["a b"]}}, "network": {"hosts": ["mcp.example.com"]}}}}}`, []string{bundle.RuleOAuthScope}},
		{"oauth scope twice", `{"mcpServers": {"r": {"remote": {"transport": "sse", "url": "https://mcp.example.com/", "auth": {"oauth": {"scopes": ["a", "a"]}}, "network": {"hosts": ["mcp.example.com"]}}}}}`, []string{bundle.RuleOAuthScope}},
		{"oauth redirect port 1023", `{"mcpServers": {"r": {"remote": {"transport": "sse", "url": "https://mcp.example.com/", "auth": {"oauth": {"redirectPort": 1023}}, "network": {"hosts": ["mcp.example.com"]}}}}}`, []string{bundle.RuleOAuthRedirectPort}},
		{"oauth client secret field", `{"mcpServers": {"r": {"remote": {"transport": "sse", "url": "https://mcp.example.com/", "auth": {"oauth": {"clientSecret": "x"}}, "network": {"hosts": ["mcp.example.com"]}}}}}`, []string{bundle.RuleUnknownField}},
		{"oauth secret client id", `{"mcpServers": {"r": {"remote": {"transport": "sse", "url": "https://mcp.example.com/", "auth": {"oauth": {"clientId": "ghp_abcdefghij"}}, "network": {"hosts": ["mcp.example.com"]}}}}}`, []string{bundle.RuleOAuthClientID}},
		{"oauth beside an authorization header", `{"mcpServers": {"r": {"remote": {"transport": "sse", "url": "https://mcp.example.com/", "headers": {"authorization": {"fromEnv": "T"}}, "auth": {"oauth": {}}, "network": {"hosts": ["mcp.example.com"]}}}}}`, []string{bundle.RuleOAuthExclusive}},
		{"oauth loopback http issuer on a real host", `{"mcpServers": {"r": {"remote": {"transport": "sse", "url": "https://mcp.example.com/", "auth": {"oauth": {"issuer": "http://login.example.com"}}, "network": {"hosts": ["mcp.example.com"]}}}}}`, []string{bundle.RuleOAuthIssuer}},
		{"oauth on a stdio server", `{"mcpServers": {"s": {"stdio": {"command": "node", "auth": {"oauth": {}}}}}}`, []string{bundle.RuleUnknownField}},

		{"empty servers", `{"mcpServers": {}}`, []string{bundle.RuleNoComponents}},
		{"empty servers and tools", `{"mcpServers": {}, "nativeTools": {}}`, []string{bundle.RuleNoComponents}},
		{"header name", `{"mcpServers": {"r": {"remote": {"transport": "sse", "url": "https://mcp.example.com/", "headers": {"X Team": {"fromEnv": "T"}}, "network": {"hosts": ["mcp.example.com"]}}}}}`, []string{bundle.RuleHeaderNameFormat}},
		{"empty bearer", `{"mcpServers": {"r": {"remote": {"transport": "sse", "url": "https://mcp.example.com/", "auth": {"bearerFromEnv": ""}, "network": {"hosts": ["mcp.example.com"]}}}}}`, []string{bundle.RuleEnvNameFormat}},
		{"no fromEnv", `{"mcpServers": {"s": {"stdio": {"command": "node", "env": {"A": {}}}}}}`, []string{bundle.RuleEnvNameFormat}},
		{"empty publisher name", `{"publisher": {"name": ""}}`, []string{bundle.RuleRequiredField}},
		{"empty executable", `{"nativeTools": {"fmt": {"executable": ""}}}`, []string{bundle.RuleRequiredField}},
		{"fractional manifest version", `{"manifestVersion": 1.5}`, []string{bundle.RuleWrongType}},
		{"description 1025 characters", fmt.Sprintf(`{"description": %q}`, long(1025)), []string{bundle.RuleDescriptionLength}},
		{"name 65 characters", fmt.Sprintf(`{"name": %q}`, name64+"d"), []string{bundle.RuleNameFormat}},
		{"duration without unit", `{"mcpServers": {"s": {"stdio": {"command": "node"}, "timeouts": {"call": "5"}}}}`, []string{bundle.RuleTimeoutFormat}},
		{"empty command", `{"mcpServers": {"s": {"stdio": {"command": ""}}}}`, []string{bundle.RuleCommandRequired}},
		{"null stdio", `{"mcpServers": {"s": {"stdio": null}}}`, []string{bundle.RuleWrongType, bundle.RuleServerTransport}},
		{"nested unknown field", `{"mcpServers": {"r": {"remote": {"transport": "sse", "url": "https://mcp.example.com/", "auth": {"basic": "x"}, "network": {"hosts": ["mcp.example.com"]}}}}}`, []string{bundle.RuleUnknownField}},
		{"https userinfo", `{"homepage": "https://user@acme.example/"}`, []string{bundle.RuleHTTPSURL}},

		{"forbidden env key", `{"mcpServers": {"s": {"stdio": {"command": "node", "env": {"Path": {"fromEnv": "P"}}}}}}`, []string{bundle.RuleEnvKeyForbidden}},
		{"forbidden header", `{"mcpServers": {"r": {"remote": {"transport": "sse", "url": "https://mcp.example.com/", "headers": {"Cookie": {"fromEnv": "C"}}, "network": {"hosts": ["mcp.example.com"]}}}}}`, []string{bundle.RuleHeaderForbidden}},
		{"http remote", `{"mcpServers": {"r": {"remote": {"transport": "sse", "url": "http://mcp.example.com/", "network": {"hosts": ["mcp.example.com"]}}}}}`, []string{bundle.RuleRemoteURLScheme}},
		{"secret query", `{"mcpServers": {"r": {"remote": {"transport": "sse", "url": "https://mcp.example.com/?api_key=x", "network": {"hosts": ["mcp.example.com"]}}}}}`, []string{bundle.RuleRemoteURLSecretQuery}},
		{"hosts mismatch", `{"mcpServers": {"r": {"remote": {"transport": "sse", "url": "https://mcp.example.com/", "network": {"hosts": ["MCP.example.com"]}}}}}`, []string{bundle.RuleNetworkHostsMismatch}},
		{"unpinned npx", `{"mcpServers": {"s": {"stdio": {"command": "npx", "args": ["-y", "pkg"]}}}}`, []string{bundle.RuleRuntimeFetchUnpinned}},
		{"unknown variable", `{"mcpServers": {"s": {"stdio": {"command": "node", "args": ["${HOME}"]}}}}`, []string{bundle.RuleVariableUnknown}},
		{"timeout range", `{"mcpServers": {"s": {"stdio": {"command": "node"}, "timeouts": {"startup": "0.5s"}}}}`, []string{bundle.RuleTimeoutRange}},
		{"unsatisfied requires", `{"requires": {"berth": ">=99"}}`, []string{bundle.RuleRequiresUnsatisfied}},
		{"host command", `{"mcpServers": {"s": {"stdio": {"command": "/usr/bin/node"}}}}`, []string{bundle.RuleCommandForm}},
		{"missing executable", `{"nativeTools": {"fmt": {"executable": "${bundle}/bin/missing"}}}`, []string{bundle.RuleBundlePathMissing}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := patchManifest(t, c.patch)
			got := berthRules(t, data)
			slices.Sort(got)
			want := slices.Sorted(slices.Values(c.want))
			if !slices.Equal(got, want) {
				t.Fatalf("berth reports %q, the case expects %q; fix the case or the rules\n%s", got, want, data)
			}
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			verr := sch.Validate(inst)
			wantReject := slices.ContainsFunc(want, func(r string) bool { return schemaRules[r] })
			switch {
			case wantReject && verr == nil:
				t.Errorf("the schema accepts a manifest that breaks %q\n%s", want, data)
			case !wantReject && len(want) == 0 && verr != nil:
				t.Errorf("the schema rejects a manifest that berth accepts:\n%v\n%s", verr, data)
			case !wantReject && verr != nil:
				t.Errorf("the schema rejects a manifest that berth rejects only with rules left to Go, %q; add the rule to schemaRules if the schema now expresses it:\n%v\n%s", want, verr, data)
			}
		})
	}
}

// TestManifestDocExample checks that the complete example in
// docs/manifest.md passes the schema and berth's strict decoding.
func TestManifestDocExample(t *testing.T) {
	data, err := os.ReadFile("../docs/manifest.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "```json\n{\n  \"manifestVersion\"")
	example, _, ok2 := strings.Cut(rest, "\n```")
	if !ok || !ok2 {
		t.Fatal("docs/manifest.md has no complete example (a json block starting with manifestVersion)")
	}
	example = "{\n  \"manifestVersion\"" + example
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(example))
	if err != nil {
		t.Fatalf("the example is not JSON: %v", err)
	}
	if err := compileSchema(t).Validate(inst); err != nil {
		t.Errorf("the schema rejects the example:\n%v", err)
	}
	m, problems := bundle.DecodeManifest([]byte(example))
	for _, p := range problems {
		t.Errorf("berth cannot decode the example: %v", p)
	}
	if m != nil && (len(m.MCPServers) == 0 || len(m.NativeTools) == 0) {
		t.Errorf("the example should show servers and native tools")
	}
}

// TestDriftWalker shows that checkDrift notices drift on either side, on a
// small pair of types and schema.
func TestDriftWalker(t *testing.T) {
	type inner struct {
		A string `json:"a"`
	}
	type outer struct {
		N  int              `json:"n"`
		S  string           `json:"s,omitempty"`
		In *inner           `json:"in,omitempty"`
		M  map[string]inner `json:"m,omitempty"`
		L  []string         `json:"l,omitempty"`
	}
	type outerRenamed struct {
		N  int              `json:"n"`
		S  string           `json:"size,omitempty"`
		In *inner           `json:"in,omitempty"`
		M  map[string]inner `json:"m,omitempty"`
		L  []string         `json:"l,omitempty"`
	}
	type outerExtra struct {
		N     int              `json:"n"`
		S     string           `json:"s,omitempty"`
		In    *inner           `json:"in,omitempty"`
		M     map[string]inner `json:"m,omitempty"`
		L     []string         `json:"l,omitempty"`
		Extra bool             `json:"extra,omitempty"`
	}
	type outerRetyped struct {
		N  string           `json:"n"`
		S  string           `json:"s,omitempty"`
		In *inner           `json:"in,omitempty"`
		M  map[string]inner `json:"m,omitempty"`
		L  []int            `json:"l,omitempty"`
	}
	const good = `{
	  "type": "object", "additionalProperties": false, "required": ["n"],
	  "anyOf": [{"required": ["s"]}, {"required": ["in"]}],
	  "properties": {
	    "n": {"description": "n", "type": "integer"},
	    "s": {"description": "s", "type": "string"},
	    "in": {"description": "in", "$ref": "#/$defs/inner"},
	    "m": {"description": "m", "type": "object", "propertyNames": {"$ref": "#/$defs/key"}, "additionalProperties": {"$ref": "#/$defs/inner"}},
	    "l": {"description": "l", "type": "array", "items": {"type": "string"}}
	  },
	  "$defs": {
	    "key": {"type": "string", "pattern": "^[a-z]+$"},
	    "inner": {"type": "object", "additionalProperties": false, "required": ["a"],
	              "properties": {"a": {"description": "a", "type": "string"}}}
	  }
	}`
	req := func(outerType reflect.Type) map[reflect.Type][]string {
		return map[reflect.Type][]string{outerType: {"n"}, reflect.TypeFor[inner](): {"a"}}
	}
	edit := func(f func(s map[string]any)) string {
		var s map[string]any
		if err := json.Unmarshal([]byte(good), &s); err != nil {
			t.Fatal(err)
		}
		f(s)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	prop := func(s map[string]any, names ...string) map[string]any {
		for _, n := range names {
			s = s[n].(map[string]any)
		}
		return s
	}
	cases := []struct {
		name   string
		typ    reflect.Type
		schema string
		req    map[reflect.Type][]string
		want   []string // substrings; nil means no drift
	}{
		{"in step", reflect.TypeFor[outer](), good, nil, nil},
		{"Go field renamed", reflect.TypeFor[outerRenamed](), good, nil, []string{`json "size") is not in the schema`, `schema property "s" has no Go field`}},
		{"Go field added", reflect.TypeFor[outerExtra](), good, nil, []string{`json "extra") is not in the schema`}},
		{"Go types changed", reflect.TypeFor[outerRetyped](), good, nil, []string{`<root>.n: Go string is JSON string, but the schema says type "integer"`, `<root>.l[]: Go int is JSON integer, but the schema says type "string"`}},
		{"schema property renamed", reflect.TypeFor[outer](), edit(func(s map[string]any) {
			p := prop(s, "properties")
			p["str"] = p["s"]
			delete(p, "s")
		}), nil, []string{`json "s") is not in the schema`, `schema property "str" has no Go field`}},
		{"nested schema property removed", reflect.TypeFor[outer](), edit(func(s map[string]any) {
			delete(prop(s, "$defs", "inner", "properties"), "a")
		}), nil, []string{`<root>.in: Go field inner.A (json "a") is not in the schema`, `<root>.m.*: Go field inner.A (json "a") is not in the schema`}},
		{"additionalProperties missing", reflect.TypeFor[outer](), edit(func(s map[string]any) {
			delete(prop(s, "$defs", "inner"), "additionalProperties")
		}), nil, []string{`<root>.in: the object schema of inner needs "additionalProperties": false`}},
		{"map given fixed properties", reflect.TypeFor[outer](), edit(func(s map[string]any) {
			prop(s, "properties", "m")["properties"] = map[string]any{}
		}), nil, []string{`<root>.m: Go map[string]schemas_test.inner is a map, but the schema lists fixed "properties"`}},
		{"map without element schema", reflect.TypeFor[outer](), edit(func(s map[string]any) {
			prop(s, "properties", "m")["additionalProperties"] = false
		}), nil, []string{`<root>.m: Go map[string]schemas_test.inner needs "additionalProperties": <schema of schemas_test.inner>`}},
		{"array items wrong", reflect.TypeFor[outer](), edit(func(s map[string]any) {
			prop(s, "properties", "l")["items"] = map[string]any{"type": "integer"}
		}), nil, []string{`<root>.l[]: Go string is JSON string, but the schema says type "integer"`}},
		{"required differs", reflect.TypeFor[outer](), edit(func(s map[string]any) {
			s["required"] = []any{"n", "s"}
		}), nil, []string{`<root>: required is ["n" "s"], the contract says ["n"]`}},
		{"combinator names unknown property", reflect.TypeFor[outer](), edit(func(s map[string]any) {
			s["anyOf"] = []any{map[string]any{"required": []any{"gone"}}}
		}), nil, []string{`<root>: anyOf names "gone", which is not a property`}},
		{"description missing", reflect.TypeFor[outer](), edit(func(s map[string]any) {
			delete(prop(s, "properties", "s"), "description")
		}), nil, []string{`<root>.s: the property has no description`}},
		{"dangling ref", reflect.TypeFor[outer](), edit(func(s map[string]any) {
			prop(s, "properties", "in")["$ref"] = "#/$defs/nope"
		}), nil, []string{`$ref "#/$defs/nope": no such $defs entry`}},
		{"unused def", reflect.TypeFor[outer](), edit(func(s map[string]any) {
			prop(s, "$defs")["old"] = map[string]any{"type": "string"}
		}), nil, []string{`$defs "old" is never referenced`}},
		{"contract names a type never reached", reflect.TypeFor[outer](), good, map[reflect.Type][]string{
			reflect.TypeFor[outer](): {"n"}, reflect.TypeFor[inner](): {"a"}, reflect.TypeFor[outerExtra](): {"n"},
		}, []string{`the required table names schemas_test.outerExtra`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var root map[string]any
			if err := json.Unmarshal([]byte(c.schema), &root); err != nil {
				t.Fatal(err)
			}
			r := c.req
			if r == nil {
				r = req(c.typ)
			}
			got := checkDrift(&schemaDoc{root: root}, c.typ, r)
			if c.want == nil && len(got) > 0 {
				t.Fatalf("unexpected drift:\n%s", strings.Join(got, "\n"))
			}
			if c.want != nil && len(got) == 0 {
				t.Fatal("no drift found")
			}
			for _, w := range c.want {
				if !slices.ContainsFunc(got, func(g string) bool { return strings.Contains(g, w) }) {
					t.Errorf("no problem mentions %q; got:\n%s", w, strings.Join(got, "\n"))
				}
			}
		})
	}
}

// schemaDoc is a parsed JSON Schema whose local "#/$defs/..." references
// can be resolved.
type schemaDoc struct {
	root map[string]any
}

func loadSchemaDoc(t *testing.T, data []byte) *schemaDoc {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatalf("berth.schema.json: %v", err)
	}
	return &schemaDoc{root: root}
}

// resolve follows $ref into $defs. Keywords beside a $ref (a description)
// win over the target's.
func (d *schemaDoc) resolve(n map[string]any) (map[string]any, error) {
	for range 16 {
		ref, ok := n["$ref"].(string)
		if !ok {
			return n, nil
		}
		name, ok := strings.CutPrefix(ref, "#/$defs/")
		if !ok {
			return nil, fmt.Errorf("$ref %q: only #/$defs/ references are supported", ref)
		}
		defs, _ := d.root["$defs"].(map[string]any)
		target, ok := defs[name].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("$ref %q: no such $defs entry", ref)
		}
		merged := maps.Clone(target)
		for k, v := range n {
			if k != "$ref" {
				merged[k] = v
			}
		}
		if _, ok := target["$ref"]; !ok {
			delete(merged, "$ref")
		}
		n = merged
	}
	return nil, fmt.Errorf("$ref chain too long")
}

// drift walks a Go type and its schema together and collects every
// difference.
type drift struct {
	doc      *schemaDoc
	required map[reflect.Type][]string
	seen     map[reflect.Type]bool
	problems []string
}

// checkDrift compares the Go type root with the schema document: property
// names, JSON types, maps, slices, "additionalProperties": false on every
// struct, "required" against the contract table, a description on every
// property, and no unused $defs.
func checkDrift(doc *schemaDoc, root reflect.Type, required map[reflect.Type][]string) []string {
	c := &drift{doc: doc, required: required, seen: map[reflect.Type]bool{}}
	c.compare(root, doc.root, "<root>")
	for _, t := range slices.SortedFunc(maps.Keys(required), func(a, b reflect.Type) int { return strings.Compare(a.String(), b.String()) }) {
		if !c.seen[t] {
			c.errorf("<root>", "the required table names %s, which the Go types never reach", t)
		}
	}
	refs := map[string]bool{}
	collectRefs(doc.root, refs)
	defs, _ := doc.root["$defs"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(defs)) {
		if !refs["#/$defs/"+name] {
			c.errorf("<root>", "$defs %q is never referenced; remove it", name)
		}
	}
	return c.problems
}

func collectRefs(v any, refs map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "$ref" {
				refs[s] = true
			}
			collectRefs(x, refs)
		}
	case []any:
		for _, x := range v {
			collectRefs(x, refs)
		}
	}
}

func (c *drift) errorf(path, format string, args ...any) {
	c.problems = append(c.problems, path+": "+fmt.Sprintf(format, args...))
}

func (c *drift) compare(t reflect.Type, n map[string]any, path string) {
	n, err := c.doc.resolve(n)
	if err != nil {
		c.errorf(path, "%v", err)
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[time.Time]() {
		if c.wantType(t, n, "string", path) && n["format"] != "date-time" {
			c.errorf(path, "Go time.Time needs \"format\": \"date-time\"")
		}
		return
	}
	switch t.Kind() {
	case reflect.String:
		c.wantType(t, n, "string", path)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		c.wantType(t, n, "integer", path)
	case reflect.Bool:
		c.wantType(t, n, "boolean", path)
	case reflect.Slice:
		if !c.wantType(t, n, "array", path) {
			return
		}
		items, ok := n["items"].(map[string]any)
		if !ok {
			c.errorf(path, "Go %s needs \"items\": <schema of %s>", t, t.Elem())
			return
		}
		c.compare(t.Elem(), items, path+"[]")
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			c.errorf(path, "Go %s: JSON object keys are strings", t)
			return
		}
		if !c.wantType(t, n, "object", path) {
			return
		}
		if _, ok := n["properties"]; ok {
			c.errorf(path, "Go %s is a map, but the schema lists fixed \"properties\"", t)
		}
		elem, ok := n["additionalProperties"].(map[string]any)
		if !ok {
			c.errorf(path, "Go %s needs \"additionalProperties\": <schema of %s>", t, t.Elem())
			return
		}
		c.compare(t.Elem(), elem, path+".*")
	case reflect.Struct:
		c.compareStruct(t, n, path)
	default:
		c.errorf(path, "Go %s has no JSON Schema mapping in this test; extend compare", t)
	}
}

func (c *drift) wantType(t reflect.Type, n map[string]any, want, path string) bool {
	if got, _ := n["type"].(string); got != want {
		c.errorf(path, "Go %s is JSON %s, but the schema says type %q", t, want, n["type"])
		return false
	}
	return true
}

func (c *drift) compareStruct(t reflect.Type, n map[string]any, path string) {
	if !c.wantType(t, n, "object", path) {
		return
	}
	c.seen[t] = true
	if ap, ok := n["additionalProperties"]; !ok || ap != false {
		c.errorf(path, "the object schema of %s needs \"additionalProperties\": false (unknown fields are invalid)", t.Name())
	}
	fields := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
			continue
		case f.Anonymous || !f.IsExported():
			c.errorf(path, "Go field %s.%s: embedded and unexported fields are not supported", t.Name(), f.Name)
			continue
		case name == "":
			c.errorf(path, "Go field %s.%s has no json name; bundle's decoder would ignore it", t.Name(), f.Name)
			continue
		}
		fields[name] = f
	}
	props, _ := n["properties"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		f := fields[name]
		ps, ok := props[name].(map[string]any)
		if !ok {
			c.errorf(path, "Go field %s.%s (json %q) is not in the schema's properties", t.Name(), f.Name, name)
			continue
		}
		p := path + "." + name
		if rp, err := c.doc.resolve(ps); err == nil {
			if d, _ := rp["description"].(string); strings.TrimSpace(d) == "" {
				c.errorf(p, "the property has no description")
			}
		}
		c.compare(f.Type, ps, p)
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if _, ok := fields[name]; !ok {
			c.errorf(path, "schema property %q has no Go field in %s", name, t.Name())
		}
	}

	got := slices.Sorted(slices.Values(stringList(n["required"])))
	want := slices.Sorted(slices.Values(c.required[t]))
	if !slices.Equal(got, want) {
		c.errorf(path, "required is %q, the contract says %q", got, want)
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		branches, _ := n[kw].([]any)
		for _, b := range branches {
			bm, _ := b.(map[string]any)
			names := stringList(bm["required"])
			if bp, ok := bm["properties"].(map[string]any); ok {
				names = append(names, slices.Collect(maps.Keys(bp))...)
			}
			for _, name := range names {
				if _, ok := fields[name]; !ok {
					c.errorf(path, "%s names %q, which is not a property of %s", kw, name, t.Name())
				}
			}
		}
	}
}

func stringList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemas.Berth()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(schemas.BerthURL, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(schemas.BerthURL)
	if err != nil {
		t.Fatalf("berth.schema.json does not compile: %v", err)
	}
	return sch
}

func readInstance(t *testing.T, name string) any {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s is not JSON a schema can check (%v); its rules cannot be schema rules", name, err)
	}
	return inst
}

type wantProblem struct{ rule, path string }

// readWant reads "rule<TAB>path" lines; "#" lines are comments and flags.
func readWant(t *testing.T, name string) []wantProblem {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var out []wantProblem
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rule, path, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("%s: line %q is not rule<TAB>path", name, line)
		}
		out = append(out, wantProblem{rule, path})
	}
	return out
}

// locates reports whether a leaf of the validation error points at the JSON
// path berth reports: at it, or at its parent object naming it (a missing,
// unknown or badly named property).
func locates(err error, path string) bool {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return false
	}
	want := splitPath(path)
	for _, leaf := range leaves(ve) {
		if k, ok := leaf.ErrorKind.(*kind.PropertyNames); ok {
			// jsonschema v6.0.3 sets the InstanceLocation of a
			// propertyNames error to a slice it goes on reusing, so only
			// the property name can be compared.
			if len(want) > 0 && k.Property == want[len(want)-1] {
				return true
			}
			continue
		}
		loc := leaf.InstanceLocation
		if len(loc) > len(want) || !slices.Equal(loc, want[:len(loc)]) {
			continue
		}
		if len(loc) == len(want) {
			return true
		}
		next := want[len(loc)]
		switch k := leaf.ErrorKind.(type) {
		case *kind.Required:
			if slices.Contains(k.Missing, next) {
				return true
			}
		case *kind.AdditionalProperties:
			if slices.Contains(k.Properties, next) {
				return true
			}
		}
	}
	return false
}

// leaves returns the innermost errors; a propertyNames error is a leaf, its
// causes are about the name as a string.
func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if _, ok := ve.ErrorKind.(*kind.PropertyNames); ok || len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// splitPath splits a problem path (a.b[0]["x.y"]) into JSON Pointer tokens.
// "." and "berth.json" are the whole document.
func splitPath(p string) []string {
	if p == "." || p == bundle.ManifestFile {
		return []string{}
	}
	out := []string{}
	for p != "" {
		switch {
		case p[0] == '.':
			p = p[1:]
		case strings.HasPrefix(p, `["`):
			q, err := strconv.QuotedPrefix(p[1:])
			if err != nil {
				return append(out, p)
			}
			key, _ := strconv.Unquote(q)
			out = append(out, key)
			p = strings.TrimPrefix(p[1+len(q):], "]")
		case p[0] == '[':
			i := strings.IndexByte(p, ']')
			if i < 0 {
				return append(out, p)
			}
			out = append(out, p[1:i])
			p = p[i+1:]
		default:
			i := strings.IndexAny(p, ".[")
			if i < 0 {
				i = len(p)
			}
			out = append(out, p[:i])
			p = p[i:]
		}
	}
	return out
}

// baseManifest is valid on its own; patches change it.
const baseManifest = `{
  "manifestVersion": 1,
  "name": "edge",
  "version": "1.0.0",
  "description": "Edge cases of manifest v1",
  "mcpServers": {"s": {"stdio": {"command": "node"}}}
}`

// patchManifest merges patch over baseManifest: a member replaces the
// base's, null removes it.
func patchManifest(t *testing.T, patch string) []byte {
	t.Helper()
	var base, p map[string]any
	for _, x := range []struct {
		src string
		dst *map[string]any
	}{{baseManifest, &base}, {patch, &p}} {
		dec := json.NewDecoder(strings.NewReader(x.src))
		dec.UseNumber()
		if err := dec.Decode(x.dst); err != nil {
			t.Fatalf("%s: %v", x.src, err)
		}
	}
	for k, v := range p {
		if v == nil {
			delete(base, k)
			continue
		}
		base[k] = v
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(base); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// berthRules opens a bundle holding the manifest and an executable
// bin/tool, and returns the rules berth reports.
func berthRules(t *testing.T, manifest []byte) []string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, bundle.ManifestFile), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "tool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Open(context.Background(), dir, nil)
	if err == nil {
		b.Close()
		return nil
	}
	var ie *bundle.InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("Open: %v", err)
	}
	var rules []string
	for _, p := range ie.Problems {
		if !slices.Contains(rules, p.Rule) {
			rules = append(rules, p.Rule)
		}
	}
	return rules
}

// TestSandboxDocExample checks that the complete example of
// docs/sandbox.md passes the schema and berth's strict decoding, and
// declares what the fixture bundles/good/sandboxed (which berth validates
// with its tree) declares.
func TestSandboxDocExample(t *testing.T) {
	data, err := os.ReadFile("../docs/sandbox.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "```json\n{\n  \"manifestVersion\"")
	example, _, ok2 := strings.Cut(rest, "\n```")
	if !ok || !ok2 {
		t.Fatal("docs/sandbox.md has no complete example (a json block starting with manifestVersion)")
	}
	example = "{\n  \"manifestVersion\"" + example
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(example))
	if err != nil {
		t.Fatalf("the example is not JSON: %v", err)
	}
	if err := compileSchema(t).Validate(inst); err != nil {
		t.Errorf("the schema rejects the example:\n%v", err)
	}
	m, problems := bundle.DecodeManifest([]byte(example))
	for _, p := range problems {
		t.Errorf("berth cannot decode the example: %v", p)
	}
	fixture, err := os.ReadFile(filepath.Join(fixtures, "good", "sandboxed", bundle.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	f, _ := bundle.DecodeManifest(fixture)
	if m == nil || f == nil {
		t.Fatal("no manifest")
	}
	for name, s := range f.MCPServers {
		if got := m.MCPServers[name]; got == nil || !reflect.DeepEqual(got.Sandbox, s.Sandbox) {
			t.Errorf("the example's server %q does not declare the fixture's sandbox", name)
		}
	}
	for name, nt := range f.NativeTools {
		if got := m.NativeTools[name]; got == nil || !reflect.DeepEqual(got.Sandbox, nt.Sandbox) {
			t.Errorf("the example's native tool %q does not declare the fixture's sandbox", name)
		}
	}
}
