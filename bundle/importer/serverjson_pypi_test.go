package importer

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
)

// pypiDoc is a server.json with one PyPI package; %HINT% and %PKG% are
// replaced by the case's runtimeHint member and extra package members.
const pypiDoc = `{
  "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
  "name": "io.github.acme/fetch",
  "description": "Fetches pages",
  "version": "2025.4.7",
  "packages": [{
    "registryType": "pypi", "identifier": "mcp-server-fetch", "version": %VERSION%
    %HINT%
    "transport": {"type": "stdio"},
    %PKG%
    "packageArguments": [{"type": "named", "name": "--user-agent", "value": "berth"}]
  }]
}`

func loadPyPIDoc(t *testing.T, version, hint, pkg string) (*bundle.Manifest, []*bundle.Problem) {
	t.Helper()
	doc := strings.NewReplacer("%VERSION%", version, "%HINT%", hint, "%PKG%", pkg).Replace(pypiDoc)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, registryManifest), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	b, ps, err := bundle.Load(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	return b.Manifest, ps
}

// A PyPI package runs with uvx, or with pipx run when its runtimeHint
// says pipx (its runtimeArguments are written for that runtime); any
// other hint is listed as not carried over and changes nothing.
func TestRegistryPyPIRunner(t *testing.T) {
	for _, c := range []struct {
		name, hint, pkg string
		command         string
		args            []string
		hintListed      bool
	}{
		{"no hint", ``, ``, "uvx", []string{"mcp-server-fetch==2025.4.7", "--user-agent", "berth"}, false},
		{"uvx", `"runtimeHint": "uvx",`, ``, "uvx", []string{"mcp-server-fetch==2025.4.7", "--user-agent", "berth"}, false},
		{"pipx", `"runtimeHint": "pipx",`, ``, "pipx", []string{"run", "mcp-server-fetch==2025.4.7", "--user-agent", "berth"}, false},
		{"pipx with runtime arguments", `"runtimeHint": "pipx",`, `"runtimeArguments": [{"type": "positional", "value": "--quiet"}],`,
			"pipx", []string{"run", "--quiet", "mcp-server-fetch==2025.4.7", "--user-agent", "berth"}, false},
		{"python", `"runtimeHint": "python",`, ``, "uvx", []string{"mcp-server-fetch==2025.4.7", "--user-agent", "berth"}, true},
		{"pip", `"runtimeHint": "pip",`, ``, "uvx", []string{"mcp-server-fetch==2025.4.7", "--user-agent", "berth"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, ps := loadPyPIDoc(t, `"2025.4.7",`, c.hint, c.pkg)
			if len(ps) > 0 {
				t.Fatalf("problems: %v", ps)
			}
			st := m.MCPServers["pypi"].Stdio
			if st.Command != c.command || !slices.Equal(st.Args, c.args) {
				t.Errorf("runs %s %q, want %s %q", st.Command, st.Args, c.command, c.args)
			}
			listed := false
			for _, n := range m.ImportedFrom.NotCarriedOver {
				if n.Kind == "runtime-hint" {
					listed = true
					if !strings.Contains(n.Reason, "pipx run when the runtimeHint is pipx") {
						t.Errorf("the runtime-hint reason does not say when pipx runs: %q", n.Reason)
					}
				}
			}
			if listed != c.hintListed {
				t.Errorf("runtime hint listed as not carried over: %v, want %v", listed, c.hintListed)
			}
		})
	}
}

// pipx run is held to the runtime-fetch rules of any bundle: an unpinned
// version stays refused (registry-version-unpinned), a runtime argument
// that changes the index is refused, and so is one that names another
// package for pipx to run from (--spec).
func TestRegistryPyPIPipxRefusals(t *testing.T) {
	hint := `"runtimeHint": "pipx",`
	for _, c := range []struct {
		name, version, pkg, rule string
	}{
		{"latest", `"latest",`, ``, bundle.RuleRegistryUnpinned},
		{"range", `">=2025",`, ``, bundle.RuleRegistryUnpinned},
		{"index-url", `"2025.4.7",`, `"runtimeArguments": [{"type": "named", "name": "--index-url", "value": "https://evil.example/simple"}],`, bundle.RuleRuntimeFetchOption},
		{"another package", `"2025.4.7",`, `"runtimeArguments": [{"type": "named", "name": "--spec", "value": "evil==1.0"}],`, bundle.RuleRuntimeFetchPackages},
		{"pip-args", `"2025.4.7",`, `"runtimeArguments": [{"type": "named", "name": "--pip-args", "value": "--index-url=https://evil.example/simple"}],`, bundle.RuleRuntimeFetchOption},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, ps := loadPyPIDoc(t, c.version, hint, c.pkg)
			var got []string
			for _, p := range ps {
				got = append(got, p.Rule)
			}
			if !slices.Contains(got, c.rule) {
				t.Errorf("problems %v, want %s", ps, c.rule)
			}
		})
	}
}
