//go:build unix

package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/bundle/importer"
	"github.com/berth-mcp/berth/internal/registrytest"
)

const corpusRegistry = "../../../shared/corpus/registry/server-registry.json"

// Entries of the recorded public MCP Registry listing that the test
// installs: one of each kind, served as recorded (their $schema says
// 2025-10-17 or 2025-09-29) except for one derived variant, as the test
// says where it makes it:
//   - oci: no image in the recording is named by digest (all 300 are by
//     tag, which berth refuses: registry-oci-digest), so the OCI entry is
//     served with "@sha256:<64 hex>" appended to its identifier. The
//     digest is made up: the image is built and reviewed, never pulled.
var corpusPicks = []struct {
	kind, name, version string
}{
	{"npm", "io.github.ChromeDevTools/chrome-devtools-mcp", "0.10.2"},
	{"pypi", "ai.mcpcap/mcpcap", "0.4.4"},
	{"oci", "io.github.dockersamples/mcp-docker-release-information", "0.3.0"},
	{"remote", "ai.klavis/strata", "1.0.0"},
}

// derivedCorpus loads the recording and derives the variants above.
func derivedCorpus(t *testing.T) *registrytest.Listing {
	t.Helper()
	found := 0
	l := editCorpus(t, func(s map[string]any) bool {
		for _, p := range corpusPicks {
			if s["name"] != p.name || s["version"] != p.version {
				continue
			}
			found++
			if p.kind == "oci" {
				pkg := s["packages"].([]any)[0].(map[string]any)
				sum := sha256.Sum256([]byte(p.name + "@" + p.version))
				pkg["identifier"] = pkg["identifier"].(string) + "@sha256:" + hex.EncodeToString(sum[:])
				return true
			}
		}
		return false
	})
	if found != len(corpusPicks) {
		t.Fatalf("found %d of the %d picked entries in the recording", found, len(corpusPicks))
	}
	return l
}

// editCorpus loads the recording (or skips the test when the corpus is
// not here) and calls edit with each item's server.json; an item whose
// edit returns true is served with the edited document.
func editCorpus(t *testing.T, edit func(server map[string]any) bool) *registrytest.Listing {
	t.Helper()
	l, err := registrytest.Load(corpusRegistry)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("the shared corpus is not here")
	}
	if err != nil {
		t.Fatal(err)
	}
	for i, raw := range l.Items {
		var it map[string]json.RawMessage
		if err := json.Unmarshal(raw, &it); err != nil {
			t.Fatal(err)
		}
		var s map[string]any
		if err := json.Unmarshal(it["server"], &s); err != nil {
			t.Fatal(err)
		}
		if edit(s) {
			it["server"], _ = json.Marshal(s)
			l.Items[i], _ = json.Marshal(it)
		}
	}
	return l
}

// The recorded MCP Registry listing served on loopback as /v0/servers
// pages: add, search, show and install of one npm, one PyPI, one OCI and
// one remote entry; an entry berth cannot build (an image by tag) is
// marked by search, and show never says install picks it. The npm entry
// then runs for real through npx (enable, tools) when the npm registry
// answers.
func TestRegistryCorpusInstall(t *testing.T) {
	l := derivedCorpus(t)
	srv := httptest.NewServer(l)
	defer srv.Close()
	home := t.TempDir()
	t.Cleanup(func() { makeWritable(home) })
	run := func(args ...string) string { t.Helper(); return runBerth(t, home, args...) }
	if out := run("marketplace", "add", "reg", srv.URL, "--registry"); !strings.Contains(out, "Added MCP Registry reg") {
		t.Fatalf("add: %s", out)
	}
	// The PyPI entry (uvx mcpcap==0.4.4) is resolved at trust: the
	// operator's uv.toml for berth names a loopback index serving a wheel
	// the test builds under that name (PyPI is not reachable here).
	idx := &simpleIndex{project: "mcpcap", wheels: map[string][]byte{}}
	fn, data := buildWheel(t, "mcpcap", "0.4.4", "mcpcap 0.4.4 of the loopback index")
	idx.wheels[fn] = data
	idxSrv := httptest.NewServer(idx)
	defer idxSrv.Close()
	if err := os.MkdirAll(filepath.Join(home, "fetchers"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "fetchers", "uv.toml"), []byte("index-url = \""+idxSrv.URL+"/simple/\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	digestRe := regexp.MustCompile(`"digest": "(sha256:[0-9a-f]{64})"`)
	for _, p := range corpusPicks {
		mapped, _ := importer.RegistryPluginName(p.name)
		if out := run("search", p.name); !regexp.MustCompile(mapped + `\s+\S+\s+active, unsigned`).MatchString(out) {
			t.Errorf("search %s: %s", p.name, out)
		}
		out := run("show", mapped+"@"+p.version, "--catalog", "reg")
		if !strings.Contains(out, "Review of "+mapped+" "+p.version) {
			t.Errorf("show %s: %s", p.name, out)
		}
		js := run("show", mapped+"@"+p.version, "--catalog", "reg", "--json")
		m := digestRe.FindStringSubmatch(js)
		if m == nil {
			t.Fatalf("show --json %s has no digest: %s", p.name, js)
		}
		out = run("install", mapped+"@"+p.version, "--catalog", "reg", "--yes", "--allow-unsigned", "--digest", m[1])
		if !strings.Contains(out, "Installed "+mapped+"@"+p.version+" from catalog reg, unsigned, pinned to "+m[1]) {
			t.Errorf("install %s: %s", p.name, out)
		}
		switch p.kind {
		case "npm":
			if !strings.Contains(out, "npx -y chrome-devtools-mcp@0.10.2") {
				t.Errorf("the npm entry's review: %s", out)
			}
		case "pypi":
			// uvx is what the bundle runs (no runtimeHint); uv is not
			// installed here, so this one is built, reviewed and installed,
			// not run. TestRegistryPyPIPipx runs its pipx variant.
			if !strings.Contains(out, "uvx mcpcap==0.4.4") {
				t.Errorf("the PyPI entry's review: %s", out)
			}
		case "oci":
			if !strings.Contains(out, "docker run --rm -i docker.io/dockersamples/mcp-docker-release-information:0.3.0@sha256:") {
				t.Errorf("the OCI entry's review: %s", out)
			}
		case "remote":
			if !strings.Contains(out, "https://strata.klavis.ai/mcp/") {
				t.Errorf("the remote entry's review: %s", out)
			}
		}
	}
	list := run("list")
	for _, p := range corpusPicks {
		mapped, _ := importer.RegistryPluginName(p.name)
		if !regexp.MustCompile(mapped + `\s+` + regexp.QuoteMeta(p.version) + `\s+[0-9a-f]{12}\s+UNSIGNED\s`).MatchString(list) {
			t.Errorf("list lacks %s %s:\n%s", mapped, p.version, list)
		}
	}

	// An entry of the recording berth cannot build: monkeymcp's only
	// version names its image by tag. search marks it, show says why and
	// never that install picks it (exit 3), and install fails closed.
	out := run("search", "io.github.jamesmontemagno/monkeymcp")
	if !regexp.MustCompile(`io-github-jamesmontemagno-monkeymcp\s+-\s+cannot be built`).MatchString(out) {
		t.Errorf("search does not mark an entry it cannot build:\n%s", out)
	}
	cmd := berthCmd(home, nil, "show", "io.github.jamesmontemagno/monkeymcp", "--catalog", "reg")
	so, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 3 || strings.Contains(string(so), "picks this") || !strings.Contains(string(so), "registry-oci-digest") {
		t.Errorf("show of an entry with no buildable version: exit %d\n%s", cmd.ProcessState.ExitCode(), so)
	}
	cmd = berthCmd(home, nil, "install", "io.github.jamesmontemagno/monkeymcp", "--catalog", "reg", "--yes", "--allow-unsigned", "--digest", "sha256:"+strings.Repeat("0", 64))
	so, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 3 || !strings.Contains(string(so), "registry-oci-digest") {
		t.Errorf("install of an entry with no buildable version: exit %d\n%s", cmd.ProcessState.ExitCode(), so)
	}
	if _, err := exec.LookPath("docker"); err != nil || exec.Command("docker", "info").Run() != nil {
		t.Log("the OCI entry is built, reviewed and installed, not run: no container engine answers here (docker info fails)")
	}

	// The npm entry for real: npx fetches chrome-devtools-mcp 0.10.2 from
	// the npm registry, and berth lists its tools.
	npmFetches(t, home, "chrome-devtools-mcp@0.10.2")
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	run("enable", "io-github-chromedevtools-chrome-devtools-mcp", "--workspace", ws)
	if out := run("tools", "io-github-chromedevtools-chrome-devtools-mcp", "--workspace", ws); !strings.Contains(out, "io-github-chromedevtools-chrome-devtools-mcp__npm__navigate_page") {
		st, _ := berthCmd(home, nil, "status", "--workspace", ws).CombinedOutput()
		lg, _ := berthCmd(home, nil, "logs", "io-github-chromedevtools-chrome-devtools-mcp__npm").CombinedOutput()
		t.Errorf("berth tools of the npm entry:\n%s\nstatus:\n%s\nlogs:\n%s", out, st, lg)
	}
}

// npmFetches skips the test (fails it under BERTH_REQUIRE_PEERS=1) when
// npm cannot see spec, and otherwise gives berth's fetchers in home the CA
// this machine adds for node, as an operator behind such a proxy writes it
// (docs/pool.md): the fetchers get only the base environment.
func npmFetches(t *testing.T, home, spec string) {
	t.Helper()
	if !npmReachable(spec) {
		msg := "the npm registry does not answer for " + spec + " here"
		if os.Getenv("BERTH_REQUIRE_PEERS") == "1" {
			t.Fatalf("%s (BERTH_REQUIRE_PEERS=1)", msg)
		}
		t.Skipf("real-peer: %s; set BERTH_REQUIRE_PEERS=1 to make this a failure", msg)
	}
	if ca := os.Getenv("NODE_EXTRA_CA_CERTS"); ca != "" {
		if err := os.MkdirAll(filepath.Join(home, "fetchers"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, "fetchers", "npmrc"), []byte("cafile="+ca+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// npmReachable reports whether npm can see the package spec.
func npmReachable(spec string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "npm", "view", spec, "version").Output()
	return err == nil && strings.TrimSpace(string(out)) != ""
}
