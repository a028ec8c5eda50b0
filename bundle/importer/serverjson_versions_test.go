package importer

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
)

// convertDoc converts the server.json document doc.
func convertDoc(t testing.TB, doc string) *conversion {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, registryManifest), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return convertRegistry(dir)
}

// rules lists the problems of c as "rule<TAB>path".
func rules(c *conversion) []string {
	var out []string
	for _, p := range c.ps.list {
		out = append(out, p.Rule+"\t"+p.Path)
	}
	return out
}

func servers(t *testing.T, c *conversion) string {
	t.Helper()
	if c.manifest == nil {
		t.Fatalf("no manifest; problems %v", rules(c))
	}
	b, err := json.Marshal(struct {
		S any
		I any
	}{c.manifest.MCPServers, c.manifest.ImportedFrom.Inputs})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// weatherDoc is one server.json in the camelCase of 2025-09-16 and later,
// with $schema left to fill in.
const weatherDoc = `{
  "$schema": %q,
  "name": "io.github.acme/weather",
  "description": "Weather forecasts",
  "version": "1.4.0",
  "websiteUrl": "https://acme.example/weather",
  "repository": {"url": "https://github.com/acme/weather", "source": "github"},
  "packages": [{
    "registryType": "npm", "registryBaseUrl": "https://registry.npmjs.org",
    "identifier": "@acme/weather-mcp", "version": "1.4.0", "runtimeHint": "npx",
    "transport": {"type": "stdio"},
    "packageArguments": [{"type": "named", "name": "--units", "default": "metric", "isRepeated": false}],
    "environmentVariables": [{"name": "WEATHER_API_KEY", "isRequired": true, "isSecret": true, "description": "key"}]
  }],
  "remotes": [{"type": "streamable-http", "url": "https://mcp.acme.example/weather",
    "headers": [{"name": "X-Tenant", "isRequired": true, "placeholder": "t"}]}]
}`

func withSchema(doc, schema string) string {
	return strings.Replace(doc, "%q", strconvQuote(schema), 1)
}

// snake writes a camelCase server.json in the field names of 2025-07-09.
func snake(doc string) string {
	for camel, sn := range snakeNames {
		doc = strings.ReplaceAll(doc, `"`+camel+`"`, `"`+sn+`"`)
	}
	return doc
}

// Every published version reads into the same bundle; the format
// version recorded is the one $schema names, with or without the
// #/definitions/ServerDetail fragment.
func TestRegistrySchemaVersions(t *testing.T) {
	want := servers(t, convertDoc(t, withSchema(weatherDoc, RegistrySchema)))
	for _, v := range registryVersions {
		for _, frag := range []string{"", "#/definitions/ServerDetail"} {
			doc := withSchema(weatherDoc, registrySchemaURL(v.date)+frag)
			if v.snake {
				doc = snake(doc)
			}
			c := convertDoc(t, doc)
			if len(c.ps.list) > 0 {
				t.Fatalf("%s%s: problems %v", v.date, frag, rules(c))
			}
			if got := servers(t, c); got != want {
				t.Errorf("%s%s reads as\n%s\nwant\n%s", v.date, frag, got, want)
			}
			imp := c.manifest.ImportedFrom
			if imp.FormatVersion != v.date || imp.FormatVersionInferred {
				t.Errorf("%s%s: format version %q inferred %v", v.date, frag, imp.FormatVersion, imp.FormatVersionInferred)
			}
		}
	}
	// A location names the field as the document spells it.
	c := convertDoc(t, snake(withSchema(strings.Replace(weatherDoc, `"version": "1.4.0", "runtimeHint"`, `"version": "latest", "runtimeHint"`, 1), registrySchemaURL("2025-07-09"))))
	if got := rules(c); !slices.Equal(got, []string{bundle.RuleRegistryUnpinned + "\tserver.json: packages[0].version"}) {
		t.Errorf("2025-07-09 with an unpinned package: %v", got)
	}
	c = convertDoc(t, snake(withSchema(strings.Replace(weatherDoc, `"registryType": "npm", `, ``, 1), registrySchemaURL("2025-07-09"))))
	if got := rules(c); len(got) == 0 || got[0] != bundle.RuleRegistryRequiredField+"\tserver.json: packages[0].registry_type" || !strings.Contains(c.ps.list[0].Message, "registry_type is required") {
		t.Errorf("2025-07-09 without registry_type: %v %v", got, c.ps.list)
	}
}

// A field that another published version defines and the named version
// does not is refused; any other unknown field is listed as not carried
// over and changes nothing that runs.
func TestRegistryVersionFields(t *testing.T) {
	url := registrySchemaURL
	for _, tc := range []struct {
		name, schema, from, to, path string
	}{
		{"snake in camelCase", url("2025-10-17"), `"registryType": "npm"`, `"registry_type": "npm"`, "packages[0].registry_type"},
		{"snake input field", url("2025-09-16"), `"isSecret": true`, `"is_secret": true`, "packages[0].environmentVariables[0].is_secret"},
		{"camelCase in 2025-07-09", url("2025-07-09"), `"registry_type": "npm"`, `"registryType": "npm"`, "packages[0].registryType"},
		{"status after 2025-09-16", url("2025-09-29"), `"version": "1.4.0",`, `"version": "1.4.0", "status": "active",`, "status"},
		{"title before 2025-10-11", url("2025-09-29"), `"version": "1.4.0",`, `"version": "1.4.0", "title": "Weather",`, "title"},
		{"remote variables before 2025-12-11", url("2025-10-17"), `"type": "streamable-http",`, `"type": "streamable-http", "variables": {},`, "remotes[0].variables"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := withSchema(weatherDoc, tc.schema)
			if strings.Contains(tc.schema, "2025-07-09") {
				doc = snake(doc)
			}
			if !strings.Contains(doc, tc.from) {
				t.Fatalf("no %s in the document", tc.from)
			}
			c := convertDoc(t, strings.Replace(doc, tc.from, tc.to, 1))
			want := []string{bundle.RuleRegistryUnknownField + "\tserver.json: " + tc.path}
			if got := rules(c); !slices.Equal(got, want) {
				t.Fatalf("problems %v, want %v", got, want)
			}
			if m := c.ps.list[0].Message; !strings.Contains(m, "the label and the content disagree") {
				t.Errorf("message %q", m)
			}
		})
	}
	want := servers(t, convertDoc(t, withSchema(weatherDoc, RegistrySchema)))
	doc := strings.Replace(withSchema(weatherDoc, url("2025-10-17")), `"runtimeHint": "npx",`, `"runtimeHint": "npx", "x-publisher": {"args": ["--evil"]}, "postInstallInstructions": [],`, 1)
	c := convertDoc(t, strings.Replace(doc, `"version": "1.4.0",`, `"version": "1.4.0", "license": "MIT",`, 1))
	if len(c.ps.list) > 0 {
		t.Fatalf("problems %v", rules(c))
	}
	if got := servers(t, c); got != want {
		t.Errorf("unknown fields changed what runs:\n%s\nwant\n%s", got, want)
	}
	var listed []string
	for _, n := range c.manifest.ImportedFrom.NotCarriedOver {
		if n.Kind == "unknown-field" {
			listed = append(listed, n.Field)
		}
	}
	if w := []string{"server.json: license", "server.json: packages[0].x-publisher", "server.json: packages[0].postInstallInstructions"}; !slices.Equal(listed, w) {
		t.Errorf("listed %v, want %v", listed, w)
	}
}

// An empty or absent $schema is read only as the one published version
// the document is valid under, and the bundle says it was inferred;
// otherwise it is refused naming the candidates.
func TestRegistryInferredSchema(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
		candidates      []string
	}{
		{"snake_case", snake(weatherDoc), "2025-07-09", nil},
		{"camelCase with status", strings.Replace(weatherDoc, `"version": "1.4.0",`, `"version": "1.4.0", "status": "active",`, 1), "2025-09-16", nil},
		{"remote variables", strings.Replace(weatherDoc, `"type": "streamable-http",`, `"type": "streamable-http", "variables": {},`, 1), "2025-12-11", nil},
		{"plain camelCase", weatherDoc, "", []string{"2025-09-16", "2025-09-29", "2025-10-11", "2025-10-17", "2025-12-11"}},
		{"title", strings.Replace(weatherDoc, `"version": "1.4.0",`, `"version": "1.4.0", "title": "W",`, 1), "", []string{"2025-10-11", "2025-10-17", "2025-12-11"}},
		{"snake and camelCase", strings.Replace(snake(weatherDoc), `"registry_type"`, `"registryType"`, 1), "", nil},
	} {
		for _, schema := range []string{`"$schema": %q,`, ""} {
			doc := withSchema(strings.Replace(tc.doc, `"$schema": %q,`, schema, 1), "")
			t.Run(tc.name, func(t *testing.T) {
				c := convertDoc(t, doc)
				if tc.want != "" {
					if len(c.ps.list) > 0 {
						t.Fatalf("problems %v", rules(c))
					}
					imp := c.manifest.ImportedFrom
					if imp.FormatVersion != tc.want || !imp.FormatVersionInferred {
						t.Errorf("format version %q inferred %v, want %s inferred", imp.FormatVersion, imp.FormatVersionInferred, tc.want)
					}
					return
				}
				if c.manifest != nil || len(c.ps.list) == 0 || c.ps.list[0].Rule != bundle.RuleRegistrySchemaUnknown {
					t.Fatalf("problems %v, want %s", rules(c), bundle.RuleRegistrySchemaUnknown)
				}
				m := c.ps.list[0].Message
				if tc.candidates == nil {
					if !strings.Contains(m, "valid under no published") || len(c.ps.list) < 2 {
						t.Errorf("%v", c.ps.list)
					}
					return
				}
				if !strings.Contains(m, strings.Join(tc.candidates, ", ")+")") {
					t.Errorf("message %q does not name %v", m, tc.candidates)
				}
			})
		}
	}
}

// What the registry API writes: "repository": {} and a "v" before a
// semantic version. A repository that is given still needs url and
// source, and a version that is not semantic is still refused.
func TestRegistryAPIForms(t *testing.T) {
	ctx := context.Background()
	doc := strings.Replace(withSchema(weatherDoc, registrySchemaURL("2025-10-17")), `{"url": "https://github.com/acme/weather", "source": "github"}`, `{}`, 1)
	doc = strings.Replace(doc, `"version": "1.4.0",`, `"version": "v1.4.0",`, 1)
	b, err := OpenServerJSON(ctx, "test", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Manifest.Version != "1.4.0" || b.Manifest.ImportedFrom.SourceVersion != "v1.4.0" {
		t.Errorf("version %q source version %q", b.Manifest.Version, b.Manifest.ImportedFrom.SourceVersion)
	}
	for _, tc := range []struct{ from, to, rule string }{
		{`{}`, `{"url": "https://github.com/acme/weather"}`, bundle.RuleRegistryRequiredField},
		{`"version": "v1.4.0",`, `"version": "v1.4",`, bundle.RuleVersionSemver},
		{`"version": "v1.4.0",`, `"version": "vv1.4.0",`, bundle.RuleVersionSemver},
	} {
		_, err := OpenServerJSON(ctx, "test", []byte(strings.Replace(doc, tc.from, tc.to, 1)), nil)
		var ie *bundle.InvalidError
		if !errors.As(err, &ie) || len(ie.Problems) != 1 || ie.Problems[0].Rule != tc.rule {
			t.Errorf("%s: %v, want %s", tc.to, err, tc.rule)
		}
	}
}

// A header whose value has a {placeholder} that no variable declares is
// named as that, and still refused.
func TestRegistryUndeclaredPlaceholder(t *testing.T) {
	for _, value := range []string{"Bearer {token}", "{token}", "key-{tenant}-{token}"} {
		doc := strings.Replace(withSchema(weatherDoc, RegistrySchema), `"placeholder": "t"`, `"value": `+strconvQuote(value), 1)
		c := convertDoc(t, doc)
		if got := rules(c); !slices.Equal(got, []string{bundle.RuleRegistryLiteralValue + "\tserver.json: remotes[0].headers[0].value"}) {
			t.Fatalf("%s: %v", value, got)
		}
		m := c.ps.list[0].Message
		if !strings.Contains(m, "placeholder") || !strings.Contains(m, "{token}") || strings.Contains(m, "fixed value") || strings.Contains(m, value) && value != "{token}" {
			t.Errorf("%s: %q", value, m)
		}
	}
	// A literal without a placeholder is still "a fixed value", never
	// shown.
	c := convertDoc(t, strings.Replace(withSchema(weatherDoc, RegistrySchema), `"placeholder": "t"`, `"value": "sk-secret"`, 1))
	if len(c.ps.list) != 1 || !strings.Contains(c.ps.list[0].Message, "fixed value") || strings.Contains(c.ps.list[0].Message, "sk-secret") {
		t.Errorf("%v", c.ps.list)
	}
}

// The guards hold in every version: a secret argument, an unpinned
// package and a literal environment value are refused in a 2025-07-09
// and a 2025-09-29 document as in a 2025-12-11 one.
func TestRegistryGuardsEveryVersion(t *testing.T) {
	for _, date := range RegistrySchemaVersions() {
		for _, tc := range []struct{ from, to, rule string }{
			{`"default": "metric",`, `"default": "metric", "isSecret": true,`, bundle.RuleRegistrySecretArgv},
			{`"version": "1.4.0", "runtimeHint"`, `"version": "^1.4.0", "runtimeHint"`, bundle.RuleRegistryUnpinned},
			{`"isRequired": true, "isSecret": true, "description": "key"`, `"value": "sk-live-123"`, bundle.RuleRegistryLiteralValue},
		} {
			doc := strings.Replace(withSchema(weatherDoc, registrySchemaURL(date)), tc.from, tc.to, 1)
			if date == "2025-07-09" {
				doc = snake(doc)
			}
			c := convertDoc(t, doc)
			if len(c.ps.list) != 1 || c.ps.list[0].Rule != tc.rule {
				t.Errorf("%s %s: %v, want %s", date, tc.to, rules(c), tc.rule)
			}
		}
	}
}
