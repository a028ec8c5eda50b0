package importer

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
)

// mcpbTree writes an MCPB manifest (version, extra top-level fields,
// mcp_config and user_config as JSON) around server/index.js and loads
// it.
func mcpbTree(t *testing.T, version, extra, mcpConfig, userConfig string) (*bundle.Bundle, []*bundle.Problem) {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "server", "lib"), 0o755)
	os.WriteFile(filepath.Join(dir, "server", "index.js"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "server", "lib", "dep.py"), []byte("x"), 0o644)
	if userConfig == "" {
		userConfig = "{}"
	}
	m := `{"manifest_version": "` + version + `", "name": "acme-notes", "version": "1.0.0", "description": "d", "author": {"name": "Acme"},` +
		extra + `"server": {"type": "node", "entry_point": "server/index.js", "mcp_config": ` + mcpConfig + `}, "user_config": ` + userConfig + `}`
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	b, ps, err := bundle.Load(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, ps
}

func problemList(ps []*bundle.Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Rule+"\t"+p.Path)
	}
	slices.Sort(out)
	return out
}

// User options in the arguments, as Claude Desktop substitutes them
// (mcpb's getMcpConfigForManifest): what each becomes in berth's argv,
// and what stays refused.
func TestMCPBUserConfigInArgv(t *testing.T) {
	const opts = `{
		"dir": {"type": "directory", "title": "t", "description": "d", "default": "${HOME}/Documents"},
		"dirs": {"type": "directory", "title": "t", "description": "d", "multiple": true, "required": true, "default": []},
		"mode": {"type": "string", "title": "t", "description": "d", "default": "docs"},
		"empty": {"type": "string", "title": "t", "description": "d", "default": ""},
		"limit": {"type": "number", "title": "t", "description": "d", "default": 10},
		"verbose": {"type": "boolean", "title": "t", "description": "d", "default": true},
		"cfg": {"type": "file", "title": "t", "description": "d"},
		"cfgdef": {"type": "file", "title": "t", "description": "d", "default": "/etc/passwd"},
		"tags": {"type": "string", "title": "t", "description": "d", "multiple": true, "default": ["a", "b, c"]},
		"token": {"type": "string", "title": "t", "description": "d", "sensitive": true, "default": "x"},
		"api_token": {"type": "string", "title": "t", "description": "d", "default": "abc"},
		"passwords": {"type": "string", "title": "t", "description": "d", "multiple": true, "default": ["abc"]},
		"needed": {"type": "string", "title": "t", "description": "d", "required": true},
		"homed": {"type": "string", "title": "t", "description": "d", "default": "${HOME}/x"}
	}`
	for _, c := range []struct {
		name  string
		args  string
		want  []string // the generated args, when accepted
		probs []string // rule<TAB>path, when refused
	}{
		{"directory", `["--root=${user_config.dir}"]`, []string{"--root=${workspace}"}, nil},
		{"multiple directory expands", `["${__dirname}/server/index.js", "${user_config.dirs}"]`, []string{"${bundle}/server/index.js", "${workspace}"}, nil},
		{"string default", `["--tools", "${user_config.mode}"]`, []string{"--tools", "docs"}, nil},
		{"number and boolean", `["--max=${user_config.limit}", "--v=${user_config.verbose}"]`, []string{"--max=10", "--v=true"}, nil},
		{"optional file left out", `["a", "--config=${user_config.cfg}", "b"]`, []string{"a", "b"}, nil},
		{"empty default left out", `["${user_config.empty}"]`, nil, nil},
		{"string list expands", `["${user_config.tags}", "z"]`, []string{"a", "b, c", "z"}, nil},
		{"sensitive refused", `["--token", "${user_config.token}"]`, nil, []string{"mcpb-user-config-arg\tmanifest.json: server.mcp_config.args[1]"}},
		{"sensitive embedded refused", `["--token=${user_config.token}"]`, nil, []string{"mcpb-user-config-arg\tmanifest.json: server.mcp_config.args[0]"}},
		{"credential name refused", `["--t=${user_config.api_token}"]`, nil, []string{"mcpb-user-config-arg\tmanifest.json: server.mcp_config.args[0]"}},
		{"credential list refused", `["${user_config.passwords}"]`, nil, []string{"mcpb-user-config-arg\tmanifest.json: server.mcp_config.args[0]"}},
		{"required without default refused", `["--n=${user_config.needed}"]`, nil, []string{"mcpb-user-config-arg\tmanifest.json: server.mcp_config.args[0]"}},
		{"file default is a host path", `["--c=${user_config.cfgdef}"]`, nil, []string{"mcpb-user-config-arg\tmanifest.json: server.mcp_config.args[0]"}},
		{"list inside an argument", `["--dirs=${user_config.dirs}"]`, nil, []string{"mcpb-user-config-arg\tmanifest.json: server.mcp_config.args[0]"}},
		{"left out after a bare flag", `["--config", "${user_config.cfg}"]`, nil, []string{"mcpb-user-config-arg\tmanifest.json: server.mcp_config.args[1]"}},
		{"variable in a default", `["${user_config.homed}"]`, nil, []string{"mcpb-user-config-arg\tmanifest.json: server.mcp_config.args[0]"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mc := `{"command": "node", "args": ` + c.args + `}`
			b, ps := mcpbTree(t, "0.3", "", mc, opts)
			got := problemList(ps)
			if !slices.Equal(got, c.probs) {
				t.Fatalf("problems %q, want %q\n%v", got, c.probs, &bundle.InvalidError{Source: "x", Problems: ps})
			}
			if c.probs != nil {
				return
			}
			if args := b.Manifest.MCPServers[MCPBServerName].Stdio.Args; !slices.Equal(args, c.want) && (len(args) != 0 || len(c.want) != 0) {
				t.Fatalf("args %q, want %q", args, c.want)
			}
		})
	}
	// A user option never chooses the program.
	_, ps := mcpbTree(t, "0.3", "", `{"command": "${user_config.mode}"}`, opts)
	if got := problemList(ps); !slices.Contains(got, "mcpb-user-config-arg\tmanifest.json: server.mcp_config.command") {
		t.Fatalf("command: %q", got)
	}
}

// The review says what each option in the arguments became.
func TestMCPBUserConfigArgvBecomes(t *testing.T) {
	b, ps := mcpbTree(t, "0.3", "", `{"command": "node", "args": ["${user_config.dirs}", "--c=${user_config.cfg}", "${user_config.mode}"]}`, `{
		"dirs": {"type": "directory", "title": "t", "description": "d", "multiple": true},
		"cfg": {"type": "file", "title": "t", "description": "d"},
		"mode": {"type": "string", "title": "t", "description": "d", "default": "docs"}}`)
	if len(ps) > 0 {
		t.Fatal(&bundle.InvalidError{Source: "x", Problems: ps})
	}
	want := map[string]string{
		"user_config.dirs": "${workspace} in the arguments",
		"user_config.cfg":  "left out of the arguments when it has no value",
		"user_config.mode": `the fixed value "docs" in the arguments`,
	}
	for _, in := range b.Manifest.ImportedFrom.Inputs {
		if !strings.HasPrefix(in.Becomes, want[in.Name]) {
			t.Errorf("%s becomes %q, want %q…", in.Name, in.Becomes, want[in.Name])
		}
	}
}

// Older manifests as Claude Desktop reads them (mcpb's loose schemas): a
// key the version does not define is accepted, listed as not carried
// over, and changes nothing that runs. server, mcp_config and its
// overrides stay strict.
func TestMCPBOlderManifests(t *testing.T) {
	const mc = `{"command": "node", "args": ["${__dirname}/server/index.js"]}`
	plain, ps := mcpbTree(t, "0.1", "", mc, "")
	if len(ps) > 0 {
		t.Fatal(&bundle.InvalidError{Source: "x", Problems: ps})
	}
	for _, c := range []struct {
		version, author, extra string
		fields                 []string
	}{
		{"0.1", `{"name": "Acme"}`, `"privacy_policies": ["https://acme.example/privacy"], "id": "acme.notes", "scripts": {"build": "tsc"},`, []string{"privacy_policies", "id", "scripts"}},
		{"0.2", `{"name": "Acme"}`, `"icons": [{"src": "i.png", "size": "16"}], "_meta": {"x": 1},`, []string{"icons", "_meta"}},
		{"0.3", `{"name": "Acme", "twitter": "@acme"}`, `"compatibility": {"my_client": ">1.0", "runtimes": {"deno": "2"}}, "tools": [{"name": "t", "input_schema": {}}], "user_config": {"o": {"type": "string", "title": "t", "description": "d", "ui_hint": "p"}},`, []string{"author.twitter", "compatibility.my_client", "compatibility.runtimes.deno", "tools[0].input_schema", "user_config.o.ui_hint"}},
	} {
		t.Run(c.version, func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "server"), 0o755)
			os.WriteFile(filepath.Join(dir, "server", "index.js"), []byte("x"), 0o644)
			m := `{"manifest_version": "` + c.version + `", "name": "acme-notes", "version": "1.0.0", "description": "d", "author": ` + c.author + `,` + c.extra + `"server": {"type": "node", "entry_point": "server/index.js", "mcp_config": ` + mc + `}}`
			os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(m), 0o644)
			b, ps, err := bundle.Load(context.Background(), dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if len(ps) > 0 {
				t.Fatal(&bundle.InvalidError{Source: dir, Problems: ps})
			}
			var listed []string
			for _, n := range b.Manifest.ImportedFrom.NotCarriedOver {
				if n.Kind == "unknown-field" {
					listed = append(listed, strings.TrimPrefix(n.Field, "manifest.json: "))
					if n.Reason == "" {
						t.Errorf("%s has no reason", n.Field)
					}
				}
			}
			slices.Sort(listed)
			want := slices.Sorted(slices.Values(c.fields))
			if !slices.Equal(listed, want) {
				t.Errorf("not carried over %q, want %q", listed, want)
			}
			a, _ := json.Marshal(b.Manifest.MCPServers)
			p, _ := json.Marshal(plain.Manifest.MCPServers)
			if string(a) != string(p) {
				t.Errorf("what runs changed:\n%s\n%s", a, p)
			}
		})
	}
	// What runs stays strict: a key mcpb does not define in server,
	// mcp_config or a platform override is refused.
	for _, c := range []struct{ mc, extraServer, path string }{
		{`{"command": "node", "cwd": "/tmp"}`, "", "server.mcp_config.cwd"},
		{`{"command": "node", "platform_overrides": {"darwin": {"shell": true}}}`, "", "server.mcp_config.platform_overrides.darwin.shell"},
	} {
		_, ps := mcpbTree(t, "0.1", "", c.mc, "")
		if got := problemList(ps); !slices.Equal(got, []string{"mcpb-unknown-field\tmanifest.json: " + c.path}) {
			t.Errorf("%s: %q", c.mc, got)
		}
	}
	// A server type no version of that manifest defines stays refused.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"dxt_version": "0.1", "name": "a", "version": "1.0.0", "description": "d", "author": {"name": "A"}, "server": {"type": "uv", "entry_point": "m.py", "mcp_config": {"command": "python3"}}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "m.py"), nil, 0o644)
	b, ps, err := bundle.Load(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if got := problemList(ps); !slices.Contains(got, "mcpb-wrong-type\tmanifest.json: server.type") {
		t.Errorf("uv in 0.1: %q", got)
	}
}

// PYTHONPATH and NODE_PATH of an MCPB manifest (MCPB documents
// PYTHONPATH=${__dirname}/server/lib for a Python server's dependencies)
// become {"bundlePath": [...]} when every element is inside the bundle;
// anything else stays refused by the environment-key rule.
func TestMCPBBundlePathEnv(t *testing.T) {
	const loc = "manifest.json: server.mcp_config.env."
	sep := string(os.PathListSeparator)
	for _, c := range []struct {
		name, key, value string
		want             []string // bundlePath, when accepted
		rule             string   // when refused
	}{
		{"python lib", "PYTHONPATH", "${__dirname}/server/lib", []string{"server/lib"}, ""},
		{"two elements", "NODE_PATH", "${__dirname}/server/lib" + sep + "${__dirname}${/}server", []string{"server/lib", "server"}, ""},
		{"absolute", "PYTHONPATH", "/etc", nil, bundle.RuleEnvKeyForbidden},
		{"escapes with ..", "PYTHONPATH", "${__dirname}/../x", nil, bundle.RuleEnvKeyForbidden},
		{"empty element", "NODE_PATH", "${__dirname}/server/lib" + sep, nil, bundle.RuleEnvKeyForbidden},
		{"relative to the working directory", "PYTHONPATH", "src", nil, bundle.RuleEnvKeyForbidden},
		{"a host folder", "PYTHONPATH", "${HOME}/lib", nil, bundle.RuleEnvKeyForbidden},
		{"the bundle root", "PYTHONPATH", "${__dirname}", nil, bundle.RuleEnvKeyForbidden},
		{"from a user option", "PYTHONPATH", "${user_config.p}", nil, bundle.RuleEnvKeyForbidden},
		{"LD_PRELOAD in the bundle", "LD_PRELOAD", "${__dirname}/server/lib/dep.py", nil, bundle.RuleMCPBEnvValue},
		{"NODE_OPTIONS", "NODE_OPTIONS", "--require=${__dirname}/server/lib/dep.py", nil, bundle.RuleMCPBEnvValue},
	} {
		t.Run(c.name, func(t *testing.T) {
			mc := `{"command": "node", "env": {"` + c.key + `": ` + strconvQuote(c.value) + `}}`
			b, ps := mcpbTree(t, "0.3", "", mc, `{"p": {"type": "string", "title": "t", "description": "d"}}`)
			if c.rule == "" {
				if len(ps) > 0 {
					t.Fatal(&bundle.InvalidError{Source: "x", Problems: ps})
				}
				got := b.Manifest.MCPServers[MCPBServerName].Stdio.Env[c.key]
				if got.FromEnv != "" || !slices.Equal(got.BundlePath, c.want) {
					t.Fatalf("env %s = %+v, want bundlePath %q", c.key, got, c.want)
				}
				return
			}
			// A literal value may be refused as such first; either way
			// the key stays refused.
			if !slices.ContainsFunc(ps, func(p *bundle.Problem) bool {
				return (p.Rule == c.rule || p.Rule == bundle.RuleEnvKeyForbidden) && p.Path == loc+c.key
			}) {
				t.Fatalf("want %s at %s; got\n%v", c.rule, loc+c.key, &bundle.InvalidError{Source: "x", Problems: ps})
			}
		})
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }
