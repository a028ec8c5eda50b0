package bundle

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// PYTHONPATH and NODE_PATH may name paths inside the bundle
// ({"bundlePath": [...]}), and nothing else; every other environment key
// rule stays.
func TestBundlePathEnv(t *testing.T) {
	load := func(t *testing.T, env map[string]any, headers map[string]any) []string {
		t.Helper()
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "server", "lib"), 0o755)
		os.WriteFile(filepath.Join(dir, "server", "lib", "dep.py"), []byte("x"), 0o644)
		if env == nil {
			env = map[string]any{}
		}
		servers := map[string]any{"s": map[string]any{"stdio": map[string]any{"command": "python3", "env": env}}}
		if headers != nil {
			servers["r"] = map[string]any{"remote": map[string]any{"transport": "sse", "url": "https://mcp.example.com/", "headers": headers, "network": map[string]any{"hosts": []string{"mcp.example.com"}}}}
		}
		data, _ := json.Marshal(map[string]any{"manifestVersion": 1, "name": "x", "version": "1.0.0", "description": "d", "mcpServers": servers})
		os.WriteFile(filepath.Join(dir, ManifestFile), data, 0o644)
		b, ps, err := Load(context.Background(), dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		var got []string
		for _, p := range ps {
			got = append(got, p.Rule+"\t"+p.Path)
		}
		slices.Sort(got)
		return got
	}
	bp := func(paths ...string) map[string]any {
		return map[string]any{"bundlePath": append([]string{}, paths...)}
	}
	const s = "mcpServers.s.stdio.env."
	for _, c := range []struct {
		name    string
		env     map[string]any
		headers map[string]any
		want    []string
	}{
		{"python path", map[string]any{"PYTHONPATH": bp("server/lib")}, nil, nil},
		{"node path, two elements", map[string]any{"NODE_PATH": bp("server/lib", "server/lib/dep.py")}, nil, nil},

		// The guarded cases stay refused.
		{"absolute", map[string]any{"PYTHONPATH": bp("/etc")}, nil, []string{RuleEnvBundlePath + "\t" + s + "PYTHONPATH.bundlePath[0]"}},
		{"escapes with ..", map[string]any{"PYTHONPATH": bp("server/../../x")}, nil, []string{RuleEnvBundlePath + "\t" + s + "PYTHONPATH.bundlePath[0]"}},
		{"dotdot", map[string]any{"PYTHONPATH": bp("..")}, nil, []string{RuleEnvBundlePath + "\t" + s + "PYTHONPATH.bundlePath[0]"}},
		{"empty element", map[string]any{"NODE_PATH": bp("server/lib", "")}, nil, []string{RuleEnvBundlePath + "\t" + s + "NODE_PATH.bundlePath[1]"}},
		{"dot", map[string]any{"NODE_PATH": bp(".")}, nil, []string{RuleEnvBundlePath + "\t" + s + "NODE_PATH.bundlePath[0]"}},
		{"list separator inside", map[string]any{"PYTHONPATH": bp("server/lib:/etc")}, nil, []string{RuleEnvBundlePath + "\t" + s + "PYTHONPATH.bundlePath[0]"}},
		{"backslash", map[string]any{"PYTHONPATH": bp(`server\lib`)}, nil, []string{RuleEnvBundlePath + "\t" + s + "PYTHONPATH.bundlePath[0]"}},
		{"not in the bundle", map[string]any{"PYTHONPATH": bp("server/vendor")}, nil, []string{RuleBundlePathMissing + "\t" + s + "PYTHONPATH.bundlePath[0]"}},
		{"empty list", map[string]any{"PYTHONPATH": bp()}, nil, []string{RuleEnvBundlePath + "\t" + s + "PYTHONPATH.bundlePath"}},
		{"both sources", map[string]any{"PYTHONPATH": map[string]any{"bundlePath": []string{"server/lib"}, "fromEnv": "P"}}, nil, []string{RuleEnvBundlePath + "\t" + s + "PYTHONPATH"}},
		{"another key", map[string]any{"LD_LIBRARY_PATH": bp("server/lib")}, nil, []string{RuleEnvBundlePath + "\t" + s + "LD_LIBRARY_PATH.bundlePath"}},
		{"NODE_OPTIONS", map[string]any{"NODE_OPTIONS": bp("server/lib")}, nil, []string{RuleEnvBundlePath + "\t" + s + "NODE_OPTIONS.bundlePath"}},
		{"lower case", map[string]any{"pythonpath": bp("server/lib")}, nil, []string{RuleEnvBundlePath + "\t" + s + "pythonpath.bundlePath"}},
		{"python path from the host", map[string]any{"PYTHONPATH": map[string]any{"fromEnv": "PWD"}}, nil, []string{RuleEnvKeyForbidden + "\t" + s + "PYTHONPATH"}},
		{"node path from the host", map[string]any{"NODE_PATH": map[string]any{"fromEnv": "X"}}, nil, []string{RuleEnvKeyForbidden + "\t" + s + "NODE_PATH"}},
		{"LD_PRELOAD", map[string]any{"LD_PRELOAD": map[string]any{"fromEnv": "X"}}, nil, []string{RuleEnvKeyForbidden + "\t" + s + "LD_PRELOAD"}},
		{"NODE_OPTIONS from the host", map[string]any{"NODE_OPTIONS": map[string]any{"fromEnv": "X"}}, nil, []string{RuleEnvKeyForbidden + "\t" + s + "NODE_OPTIONS"}},
		{"a header", nil, map[string]any{"X-Path": bp("server/lib")}, []string{RuleEnvBundlePath + "\t" + "mcpServers.r.remote.headers.X-Path.bundlePath"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := load(t, c.env, c.headers); !slices.Equal(got, c.want) {
				t.Fatalf("problems %q, want %q", got, c.want)
			}
		})
	}
}
