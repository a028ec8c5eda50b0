package runtimefetch

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

const corpusRegistry = "../../../shared/corpus/registry/server-registry.json"

// TestCorpusRegistryPinnable measures, on the recorded MCP Registry
// listing of ../../../shared/corpus, the npm, PyPI and OCI packages read as
// the command berth runs them with (npx -y, uvx, docker run -i): how many
// are pinned already, how many are refused only for being unpinned in a
// form that berth's pinning resolves (Unpinned), and how many are refused
// otherwise. Run with -v for the table.
func TestCorpusRegistryPinnable(t *testing.T) {
	data, err := os.ReadFile(corpusRegistry)
	if err != nil {
		t.Skipf("no corpus: %v", err)
	}
	var doc struct {
		Servers []struct {
			Server struct {
				Packages []struct {
					RegistryType string `json:"registryType"`
					RegistryTyp2 string `json:"registry_type"`
					Identifier   string `json:"identifier"`
					Name         string `json:"name"`
					Version      string `json:"version"`
				} `json:"packages"`
			} `json:"server"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, s := range doc.Servers {
		for _, p := range s.Server.Packages {
			typ, id := p.RegistryType+p.RegistryTyp2, p.Identifier+p.Name
			var argv []string
			switch typ {
			case "npm":
				spec := id
				if p.Version != "" {
					spec += "@" + p.Version
				}
				argv = []string{"npx", "-y", spec}
			case "pypi":
				spec := id
				switch {
				case p.Version == "":
				case p.Version == "latest":
					spec += "@latest"
				case strings.ContainsAny(p.Version[:1], "<>=!~"):
					spec += p.Version
				default:
					spec += "==" + p.Version
				}
				argv = []string{"uvx", spec}
			case "oci":
				argv = []string{"docker", "run", "-i", id}
			default:
				continue
			}
			f, err := Read(argv[0], argv[1:])
			var ce *CommandError
			switch {
			case err == nil && f != nil:
				counts[typ+": pinned already"]++
			case errors.As(err, &ce) && ce.Unpinned != nil:
				counts[typ+": unpinned, pinning resolves it"]++
			case errors.As(err, &ce) && (ce.Rule == RuleUnpinned || ce.Rule == RuleImageDigest):
				counts[typ+": unpinned, not resolvable"]++
				t.Logf("not resolvable: %q", argv)
			default:
				counts[typ+": refused otherwise"]++
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		t.Logf("%-40s %d", k, counts[k])
	}
	if counts["oci: unpinned, pinning resolves it"] == 0 || counts["npm: pinned already"] == 0 {
		t.Errorf("unexpected measurement: %v", counts)
	}
}
