package importer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
)

// mcpbSource writes an MCPB source whose manifest is manifest, with the
// entry point server/index.js.
func mcpbSource(t *testing.T, manifest string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "server"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "server", "index.js"), []byte("//\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func inputByEnv(m *bundle.Manifest, from string) *bundle.ImportInput {
	for i, in := range m.ImportedFrom.Inputs {
		if in.FromEnv == from {
			return &m.ImportedFrom.Inputs[i]
		}
	}
	return nil
}

// The real Desktop Commander manifest (its version placeholder made a
// version): NODE_ENV=production and MCP_DXT=true become sources the
// operator confirms, with the publisher's literal as the default; the
// bundle holds no value.
func TestMCPBConstantsFromCorpus(t *testing.T) {
	data, err := os.ReadFile("../../../shared/corpus/mcpb-manifests/wonderwhy-er__DesktopCommanderMCP__manifest.template/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	src := mcpbSource(t, strings.ReplaceAll(string(data), "{{VERSION}}", "0.2.20"))
	if err := os.MkdirAll(filepath.Join(src, "dist"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "dist", "index.js"), []byte("//\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Open(context.Background(), src, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	env := b.Manifest.MCPServers[MCPBServerName].Stdio.Env
	want := map[string]struct{ from, literal string }{
		"NODE_ENV": {"DESKTOP_COMMANDER_NODE_ENV", "production"},
		"MCP_DXT":  {"DESKTOP_COMMANDER_MCP_DXT", "true"},
	}
	for k, w := range want {
		if env[k].FromEnv != w.from {
			t.Errorf("env %s = %+v, want fromEnv %s", k, env[k], w.from)
		}
		in := inputByEnv(b.Manifest, w.from)
		if in == nil || !in.Confirm || in.Default != w.literal || in.Sensitive || !strings.Contains(in.Becomes, "you confirm") {
			t.Errorf("input of %s = %+v, want a confirm input with default %q", k, in, w.literal)
		}
	}
	if got := string(bundle.EncodeManifest(b.Manifest)); strings.Contains(got, `"NODE_ENV": "production"`) {
		t.Errorf("the generated manifest holds the literal as a value:\n%s", got)
	}
	if n := len(b.Manifest.ConfirmInputs()); n != 2 {
		t.Errorf("ConfirmInputs = %d, want 2", n)
	}
}

const constantsManifest = `{
  "manifest_version": "0.3", "name": "acme-notes", "version": "1.0.0", "description": "Notes",
  "author": {"name": "Acme"},
  "server": {"type": "node", "entry_point": "server/index.js", "mcp_config": {
    "command": "node", "args": ["${__dirname}/server/index.js"],
    "env": {ENV}
  }},
  "user_config": {
    "mode": {"type": "string", "title": "Mode", "description": "How to search", "default": "fast", "required": true},
    "limit": {"type": "number", "title": "Limit", "description": "At most"},
    "token": {"type": "string", "title": "Token", "description": "API token", "sensitive": true},
    "api_key": {"type": "string", "title": "Key", "description": "not marked sensitive"}
  }
}`

// Non-sensitive options read in env are confirmed too (required with the
// default offered, optional may stay empty); a sensitive option, or one
// whose name says it is a credential, stays a source of the environment
// or the secret store, as before.
func TestMCPBOptionsConfirmed(t *testing.T) {
	env := `{"NOTES_MODE": "${user_config.mode}", "NOTES_LIMIT": "${user_config.limit}", "NOTES_TOKEN": "${user_config.token}", "NOTES_KEY": "${user_config.api_key}"}`
	b, err := bundle.Open(context.Background(), mcpbSource(t, strings.Replace(constantsManifest, "{ENV}", env, 1)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cases := []struct {
		from    string
		confirm bool
		def     string
	}{
		{"ACME_NOTES_MODE", true, "fast"},
		{"ACME_NOTES_LIMIT", true, ""},
		{"ACME_NOTES_TOKEN", false, ""},
		{"ACME_NOTES_API_KEY", false, ""},
	}
	for _, c := range cases {
		in := inputByEnv(b.Manifest, c.from)
		if in == nil || in.Confirm != c.confirm || in.Default != c.def {
			t.Errorf("input %s = %+v, want confirm %v default %q", c.from, in, c.confirm, c.def)
		}
	}
	if in := inputByEnv(b.Manifest, "ACME_NOTES_LIMIT"); in == nil || !strings.Contains(in.Becomes, "optional") {
		t.Errorf("optional input %+v does not say it may stay empty", in)
	}
	if in := inputByEnv(b.Manifest, "ACME_NOTES_TOKEN"); in == nil || !strings.Contains(in.Becomes, "read from your $ACME_NOTES_TOKEN") {
		t.Errorf("sensitive input %+v is not read from the environment or the secret store", in)
	}
}

// Keys the environment-key rules refuse stay refused whatever the value,
// and a literal that looks like a credential is refused, not shown.
func TestMCPBConstantsStillRefused(t *testing.T) {
	cases := []struct {
		env, rule, path string
	}{
		{`{"NODE_OPTIONS": "--require ./hook.js"}`, bundle.RuleEnvKeyForbidden, "NODE_OPTIONS"},
		{`{"LD_PRELOAD": "./x.so"}`, bundle.RuleEnvKeyForbidden, "LD_PRELOAD"},
		{`{"NPM_CONFIG_REGISTRY": "https://evil.example"}`, bundle.RuleEnvKeyForbidden, "NPM_CONFIG_REGISTRY"},
		{`{"node_path": "/tmp"}`, bundle.RuleEnvKeyForbidden, "node_path"},
		{`{"ACME_API_KEY": "abc"}`, bundle.RuleMCPBEnvValue, "ACME_API_KEY"},
		{`{"GH": "ghp_0123456789abcdefghijklmnopqrstuvwxyz"}`, bundle.RuleMCPBEnvValue, "GH"},
		{`{"DB": "postgres://u:pw@db.example/x"}`, bundle.RuleMCPBEnvValue, "DB"},
		{`{"ID": "a1b2c3d4e5f6a7b8c9d0e1f2"}`, bundle.RuleMCPBEnvValue, "ID"},
		{`{"MODE": "x-${user_config.mode}"}`, bundle.RuleMCPBEnvValue, "MODE"},
	}
	for _, c := range cases {
		_, err := bundle.Open(context.Background(), mcpbSource(t, strings.Replace(constantsManifest, "{ENV}", c.env, 1)), nil)
		var ie *bundle.InvalidError
		if !errors.As(err, &ie) {
			t.Errorf("env %s: %v, want it refused", c.env, err)
			continue
		}
		found := false
		for _, p := range ie.Problems {
			if p.Rule == c.rule && strings.HasSuffix(p.Path, "env."+c.path) {
				found = true
			}
			for _, secret := range []string{"ghp_0123", "pw@", "a1b2c3d4e5", "abc\""} {
				if strings.Contains(p.Message, secret) {
					t.Errorf("env %s: the problem shows the value: %s", c.env, p.Message)
				}
			}
		}
		if !found {
			t.Errorf("env %s: problems %v, want %s at env.%s", c.env, ie.Problems, c.rule, c.path)
		}
	}
}
