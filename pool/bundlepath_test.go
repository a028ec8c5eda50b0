package pool

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// PYTHONPATH and NODE_PATH written as {"bundlePath": [...]} reach the
// server as the staged snapshot's paths, joined with the list separator;
// no host variable is read for them.
func TestBundlePathEnv(t *testing.T) {
	f := newFixture(t)
	f.plugin("demo", map[string]any{
		"main": map[string]any{"stdio": map[string]any{
			"command": "berth-testserver",
			"args":    []string{"-tools", "env,cwd"},
			"env": map[string]any{
				"PYTHONPATH": map[string]any{"bundlePath": []string{"share"}},
				"NODE_PATH":  map[string]any{"bundlePath": []string{"share", "share/data.txt"}},
			},
		}},
	})
	looked := []string{}
	p := f.open(func(o *Options) {
		o.LookupEnv = func(k string) (string, bool) {
			looked = append(looked, k)
			return "", false
		}
	})
	var where struct{ Cwd string }
	if err := json.Unmarshal([]byte(callText(t, p, "demo__main__cwd", "{}")), &where); err != nil || where.Cwd == "" {
		t.Fatalf("cwd: %v %+v", err, where)
	}
	snapshot := where.Cwd // the staged snapshot, the default working directory
	env := strings.Split(callText(t, p, "demo__main__env", "{}"), "\n")
	for _, want := range []string{
		"PYTHONPATH=" + filepath.Join(snapshot, "share"),
		"NODE_PATH=" + filepath.Join(snapshot, "share") + string(filepath.ListSeparator) + filepath.Join(snapshot, "share", "data.txt"),
	} {
		if !slices.Contains(env, want) {
			t.Errorf("env lacks %s:\n%s", want, strings.Join(env, "\n"))
		}
	}
	if slices.Contains(looked, "") || slices.Contains(looked, "PYTHONPATH") || slices.Contains(looked, "NODE_PATH") {
		t.Errorf("looked up host variables %q", looked)
	}
}

// A snapshot path that holds the list separator would split an element:
// the server is not started.
func TestBundlePathValueSeparator(t *testing.T) {
	sep := string(filepath.ListSeparator)
	if _, err := bundlePathValue("p__s", "PYTHONPATH", []string{"lib"}, "/x"+sep+"y"); err == nil || !strings.Contains(err.Error(), "list separator") {
		t.Fatalf("err %v", err)
	}
	if v, err := bundlePathValue("p__s", "PYTHONPATH", []string{"a", "b/c"}, "/s"); err != nil || v != filepath.Join("/s", "a")+sep+filepath.Join("/s", "b", "c") {
		t.Fatalf("%q %v", v, err)
	}
}
