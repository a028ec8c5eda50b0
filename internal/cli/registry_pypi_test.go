//go:build unix

package cli

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/berth-mcp/berth/bundle/importer"
	"github.com/berth-mcp/berth/internal/registrytest"
	"github.com/berth-mcp/berth/store"
)

// mcpServerPy is the wheel's whole program: an MCP server over stdio in
// the Python standard library only (newline-delimited JSON-RPC), so that
// pip fetches nothing but the wheel. %s is the answer's prefix, which
// names the wheel the answer came from.
const mcpServerPy = `import json
import sys

ORIGIN = %q


def answer(msg):
    method = msg.get("method")
    params = msg.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "mcpcap-test", "version": "0"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [{"name": "echo", "description": "Says which wheel answers, and the text",
                           "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                                           "required": ["text"]}}]}
    if method == "tools/call" and params.get("name") == "echo":
        text = (params.get("arguments") or {}).get("text", "")
        return {"content": [{"type": "text", "text": ORIGIN + ": " + text}]}
    return None


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        if "id" not in msg or "method" not in msg:
            continue
        result = answer(msg)
        if result is None:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no such method"}}
        else:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
`

// buildWheel writes a pure-Python wheel of the project name at version
// (PEP 427 / the binary distribution format): the module, METADATA,
// WHEEL, a console script named like the project, and RECORD with each
// file's urlsafe-base64 SHA-256. It returns the file name and bytes.
func buildWheel(t *testing.T, name, version, origin string) (string, []byte) {
	t.Helper()
	mod := strings.ReplaceAll(name, "-", "_")
	info := mod + "-" + version + ".dist-info/"
	files := [][2]string{
		{mod + "/__init__.py", fmt.Sprintf(mcpServerPy, origin)},
		{info + "METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\nSummary: a test MCP server\n"},
		{info + "WHEEL", "Wheel-Version: 1.0\nGenerator: berth-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
		{info + "entry_points.txt", "[console_scripts]\n" + name + " = " + mod + ":main\n"},
	}
	var record strings.Builder
	for _, f := range files {
		sum := sha256.Sum256([]byte(f[1]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f[0], base64.RawURLEncoding.EncodeToString(sum[:]), len(f[1]))
	}
	record.WriteString(info + "RECORD,,\n")
	files = append(files, [2]string{info + "RECORD", record.String()})
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.Create(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return mod + "-" + version + "-py3-none-any.whl", buf.Bytes()
}

// simpleIndex is a PEP 503 simple index on loopback: /simple/<project>/
// lists the wheels with their sha256 fragment, /files/<wheel> serves
// them (PEP 691 JSON to a client that takes no HTML); any other project is 404 (pipx asks for pip, setuptools and wheel
// when it builds its shared libraries). It records every path asked for.
type simpleIndex struct {
	project string
	wheels  map[string][]byte // file name → bytes
	// lie makes the HTML page's #sha256= fragments not the wheels' own
	// (a tampered index or mirror).
	lie bool

	mu   sync.Mutex
	hits []string
}

func (x *simpleIndex) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x.mu.Lock()
	x.hits = append(x.hits, r.URL.Path)
	lie := x.lie
	x.mu.Unlock()
	accept := r.Header.Get("Accept")
	switch {
	case r.URL.Path == "/simple/"+x.project+"/" && !strings.Contains(accept, "text/html") && strings.Contains(accept, pep691):
		// berth's pin resolver asks for PEP 691 JSON only; pip takes HTML.
		type file struct {
			Filename string            `json:"filename"`
			URL      string            `json:"url"`
			Hashes   map[string]string `json:"hashes"`
		}
		page := struct {
			Meta  map[string]string `json:"meta"`
			Name  string            `json:"name"`
			Files []file            `json:"files"`
		}{map[string]string{"api-version": "1.0"}, x.project, []file{}}
		for _, fn := range slices.Sorted(maps.Keys(x.wheels)) {
			sum := sha256.Sum256(x.wheels[fn])
			page.Files = append(page.Files, file{fn, "../../files/" + fn, map[string]string{"sha256": hex.EncodeToString(sum[:])}})
		}
		w.Header().Set("Content-Type", pep691)
		json.NewEncoder(w).Encode(page)
	case r.URL.Path == "/simple/"+x.project+"/":
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<!DOCTYPE html>\n<html><body>\n")
		for _, fn := range slices.Sorted(maps.Keys(x.wheels)) {
			sum := sha256.Sum256(x.wheels[fn])
			if lie {
				sum = sha256.Sum256(append(slices.Clone(x.wheels[fn]), '!'))
			}
			fmt.Fprintf(w, "<a href=\"../../files/%s#sha256=%s\">%s</a><br>\n", html.EscapeString(fn), hex.EncodeToString(sum[:]), html.EscapeString(fn))
		}
		fmt.Fprintf(w, "</body></html>\n")
	case strings.HasPrefix(r.URL.Path, "/files/") && x.wheels[strings.TrimPrefix(r.URL.Path, "/files/")] != nil:
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(x.wheels[strings.TrimPrefix(r.URL.Path, "/files/")])
	default:
		http.NotFound(w, r)
	}
}

const pep691 = "application/vnd.pypi.simple.v1+json"

func (x *simpleIndex) asked() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Clone(x.hits)
}

// requirePipx skips the test when pipx or python3 is not on PATH, or
// fails it when BERTH_REQUIRE_PEERS=1 (as in CI, which installs Debian's
// pipx).
func requirePipx(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("pipx"); err == nil {
		if _, err := exec.LookPath("python3"); err == nil {
			return
		}
	}
	msg := "pipx (and python3) are not on PATH; install Debian's pipx (apt-get install pipx)"
	if os.Getenv("BERTH_REQUIRE_PEERS") == "1" {
		t.Fatalf("%s (BERTH_REQUIRE_PEERS=1)", msg)
	}
	t.Skipf("real-peer: %s, or set BERTH_REQUIRE_PEERS=1 to make this a failure", msg)
}

// pipxWorld is a berth home and workspace with the recorded listing on
// loopback, $BERTH_HOME/fetchers/pip.conf naming the configured index
// (mcpcap 0.4.3, 0.4.4 and 0.9.0, each answering with its version), and a
// hostile index (a mcpcap 0.4.4 of its own, at every version the
// configured one has) named by PIP_INDEX_URL, PIP_EXTRA_INDEX_URL and
// PIP_CONFIG_FILE in berth's environment, by the operator's
// ~/.config/pip/pip.conf and ~/.pip/pip.conf, and by a pip.conf in the
// workspace. HOME is a directory of the test: pipx keeps its environments
// there.
type pipxWorld struct {
	home, ws      string
	env           []string
	good, hostile *simpleIndex
	goodSrv       *httptest.Server
}

func newPipxWorld(t *testing.T, l *registrytest.Listing) *pipxWorld {
	t.Helper()
	reg := httptest.NewServer(l)
	t.Cleanup(reg.Close)
	w := &pipxWorld{
		good:    &simpleIndex{project: "mcpcap", wheels: map[string][]byte{}},
		hostile: &simpleIndex{project: "mcpcap", wheels: map[string][]byte{}},
	}
	for _, v := range []string{"0.4.3", "0.4.4", "0.9.0"} {
		fn, data := buildWheel(t, "mcpcap", v, "mcpcap "+v+" of the configured index")
		w.good.wheels[fn] = data
		fn, data = buildWheel(t, "mcpcap", v, "HOSTILE index")
		w.hostile.wheels[fn] = data
	}
	goodSrv := httptest.NewServer(w.good)
	t.Cleanup(goodSrv.Close)
	w.goodSrv = goodSrv
	hostileSrv := httptest.NewServer(w.hostile)
	t.Cleanup(hostileSrv.Close)

	w.home = t.TempDir()
	t.Cleanup(func() { makeWritable(w.home) })
	userHome := t.TempDir()
	t.Cleanup(func() { makeWritable(userHome) })
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w.ws = ws
	hostileConf := "[global]\nindex-url = " + hostileSrv.URL + "/simple/\n"
	for _, f := range []string{filepath.Join(userHome, ".config", "pip", "pip.conf"), filepath.Join(userHome, ".pip", "pip.conf"), filepath.Join(ws, "pip.conf")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(hostileConf), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(w.home, "fetchers"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.home, "fetchers", "pip.conf"), []byte("[global]\nindex-url = "+goodSrv.URL+"/simple/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.env = []string{
		"HOME=" + userHome,
		"PIP_INDEX_URL=" + hostileSrv.URL + "/simple/",
		"PIP_EXTRA_INDEX_URL=" + hostileSrv.URL + "/simple/",
		"PIP_CONFIG_FILE=" + filepath.Join(ws, "pip.conf"),
		"PIPX_DEFAULT_PYTHON=/nonexistent/python",
	}
	w.run(t, "marketplace", "add", "reg", reg.URL, "--registry")
	return w
}

func (w *pipxWorld) run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := berthCmd(w.home, w.env, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("berth %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// callEcho enables plugin, lists its tool and calls it: the answer names
// the wheel that runs. Then it checks that the hostile index was never
// asked and that the configured one served only the wheel of version.
func (w *pipxWorld) callEcho(t *testing.T, plugin, version string) {
	t.Helper()
	w.run(t, "enable", plugin, "--workspace", w.ws)
	tool := plugin + "__pypi__echo"
	diagnose := func() string {
		st, _ := berthCmd(w.home, w.env, "status", "--workspace", w.ws).CombinedOutput()
		lg, _ := berthCmd(w.home, w.env, "logs", plugin+"__pypi").CombinedOutput()
		return fmt.Sprintf("status:\n%s\nlogs:\n%s\nconfigured index asked: %q\nhostile index asked: %q", st, lg, w.good.asked(), w.hostile.asked())
	}
	if out := w.run(t, "tools", plugin, "--workspace", w.ws); !strings.Contains(out, tool) {
		t.Fatalf("berth tools of the pipx entry:\n%s\n%s", out, diagnose())
	}
	out := w.run(t, "call", tool, "--arg", "text=hello", "--yes", "--workspace", w.ws)
	if !strings.Contains(out, "mcpcap "+version+" of the configured index: hello") {
		t.Errorf("berth call %s:\n%s\n%s", tool, out, diagnose())
	}
	if h := w.hostile.asked(); len(h) > 0 {
		t.Errorf("the hostile index was asked for %q", h)
	}
	wheel := "/files/mcpcap-" + version + "-py3-none-any.whl"
	asked := w.good.asked()
	if !slices.Contains(asked, "/simple/mcpcap/") || !slices.Contains(asked, wheel) {
		t.Errorf("the configured index was not asked for mcpcap %s: %q", version, asked)
	}
	for _, p := range asked {
		if strings.HasPrefix(p, "/files/") && p != wheel {
			t.Errorf("a wheel other than the pinned one was fetched: %s", p)
		}
	}
}

// A PyPI entry of the recorded MCP Registry listing, installed from the
// listing served on loopback and run for real through Debian's pipx
// against a loopback simple index serving a wheel the test builds.
//
// Derived variant: ai.mcpcap/mcpcap 0.4.4 of the recording has no
// runtimeHint (berth runs it with uvx, which is not installed here); it
// is served with "runtimeHint": "pipx", nothing else changed, so berth
// runs it with pipx run mcpcap==0.4.4. The wheel is the test's own MCP
// server under the project name mcpcap, never PyPI's.
//
// The attack (pipxWorld): the index is exactly the one
// $BERTH_HOME/fetchers/pip.conf names, never PIP_INDEX_URL or another
// pip.conf, and the version stays the pinned 0.4.4 although the index
// offers 0.9.0.
func TestRegistryPyPIPipx(t *testing.T) {
	requirePipx(t)
	const entry, version = "ai.mcpcap/mcpcap", "0.4.4"
	w := newPipxWorld(t, pipxVariant(t, entry, version, version))
	mapped, _ := importer.RegistryPluginName(entry)
	js := w.run(t, "show", mapped+"@"+version, "--catalog", "reg", "--json")
	m := regexp.MustCompile(`"digest": "(sha256:[0-9a-f]{64})"`).FindStringSubmatch(js)
	if m == nil {
		t.Fatalf("show --json has no digest: %s", js)
	}
	out := w.run(t, "install", mapped+"@"+version, "--catalog", "reg", "--yes", "--allow-unsigned", "--digest", m[1])
	if !strings.Contains(out, "pipx run mcpcap==0.4.4") || strings.Contains(out, "uvx") {
		t.Errorf("the review of the pipx entry does not run pipx run mcpcap==0.4.4:\n%s", out)
	}
	if !strings.Contains(out, "fetched  pypi: mcpcap==0.4.4: 1 package, ") || !strings.Contains(out, "staged at trust, starts offline (from "+w.goodSrv.URL+"/simple/)") {
		t.Errorf("the review does not say what was resolved:\n%s", out)
	}
	w.checkLock(t, mapped, version, version)
	w.goodSrv.Close() // the server starts offline, from the tree staged at trust
	w.callEcho(t, mapped, version)
	w.run(t, "verify", mapped)
}

// checkLock reads the trust record of plugin@pluginVersion: its one
// fetched lock is the PyPI tree of mcpcap==version, with the configured index's
// wheel and its sha256, run by its console script.
func (w *pipxWorld) checkLock(t *testing.T, plugin, pluginVersion, version string) {
	t.Helper()
	data, err := os.ReadFile(store.Paths{Root: w.home}.Record(plugin, pluginVersion))
	if err != nil {
		t.Fatal(err)
	}
	var rec store.Record
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Fetched) != 1 {
		t.Fatalf("the record has %d fetched locks: %s", len(rec.Fetched), data)
	}
	l := rec.Fetched[0]
	fn := "mcpcap-" + version + "-py3-none-any.whl"
	sum := sha256.Sum256(w.good.wheels[fn])
	if l.Ecosystem != "pypi" || l.Package != "mcpcap=="+version || l.Program != "bin/mcpcap" || len(l.Packages) != 1 ||
		l.Packages[0].Name != "mcpcap" || l.Packages[0].Version != version || l.Packages[0].Integrity != "sha256:"+hex.EncodeToString(sum[:]) ||
		l.Packages[0].Resolved != w.goodSrv.URL+"/files/"+fn || !strings.HasPrefix(l.Tree, "sha256:") {
		t.Errorf("the fetched lock: %+v", l)
	}
}

// berth install --pin of a pipx entry that asks for "latest": berth
// resolves it against the index of $BERTH_HOME/fetchers/pip.conf (its
// PEP 691 JSON page), never the hostile one, and pipx then runs exactly
// the version resolved.
//
// Derived variant: ai.mcpcap/mcpcap 0.4.3 of the recording is served with
// "runtimeHint": "pipx" and its package's version "latest" in place of
// "0.4.3".
func TestRegistryPyPIPipxPin(t *testing.T) {
	requirePipx(t)
	const entry, version = "ai.mcpcap/mcpcap", "0.4.3"
	w := newPipxWorld(t, pipxVariant(t, entry, version, "latest"))
	mapped, _ := importer.RegistryPluginName(entry)
	cmd := berthCmd(w.home, w.env, "install", mapped+"@"+version, "--catalog", "reg", "--pin", "--yes")
	so, _ := cmd.CombinedOutput()
	m := regexp.MustCompile(`sha256:[0-9a-f]{64}`).Find(so)
	if cmd.ProcessState.ExitCode() != 4 || m == nil || !strings.Contains(string(so), "mcpcap 0.9.0 (the source asked for latest") {
		t.Fatalf("install --pin without the digest: exit %d\n%s", cmd.ProcessState.ExitCode(), so)
	}
	out := w.run(t, "install", mapped+"@"+version, "--catalog", "reg", "--pin", "--yes", "--allow-unsigned", "--digest", string(m))
	if !strings.Contains(out, "pipx run mcpcap==0.9.0") {
		t.Errorf("the review of the pinned pipx entry:\n%s", out)
	}
	w.checkLock(t, mapped, version, "0.9.0")
	w.goodSrv.Close()
	w.callEcho(t, mapped, "0.9.0")
}

// pipxVariant loads the recording and serves the PyPI entry name@version
// with "runtimeHint": "pipx" added and its package's version set to
// pkgVersion, nothing else changed.
func pipxVariant(t *testing.T, entry, version, pkgVersion string) *registrytest.Listing {
	t.Helper()
	found := 0
	l := editCorpus(t, func(s map[string]any) bool {
		if s["name"] != entry || s["version"] != version {
			return false
		}
		found++
		pkg := s["packages"].([]any)[0].(map[string]any)
		if pkg["registryType"] != "pypi" || pkg["identifier"] != "mcpcap" || pkg["version"] != version || pkg["runtimeHint"] != nil {
			t.Fatalf("the recorded entry changed: %v", pkg)
		}
		pkg["runtimeHint"] = "pipx"
		pkg["version"] = pkgVersion
		return true
	})
	if found != 1 {
		t.Fatalf("found %d entries %s@%s in the recording", found, entry, version)
	}
	return l
}

// An index whose #sha256= is not its wheel's: the trust is refused at
// install, naming the server and the tampered hash, and nothing is
// recorded.
func TestRegistryPyPIPipxTamperedIndex(t *testing.T) {
	requirePipx(t)
	const entry, version = "ai.mcpcap/mcpcap", "0.4.4"
	w := newPipxWorld(t, pipxVariant(t, entry, version, version))
	w.good.mu.Lock()
	w.good.lie = true
	w.good.mu.Unlock()
	mapped, _ := importer.RegistryPluginName(entry)
	js := w.run(t, "show", mapped+"@"+version, "--catalog", "reg", "--json")
	m := regexp.MustCompile(`"digest": "(sha256:[0-9a-f]{64})"`).FindStringSubmatch(js)
	if m == nil {
		t.Fatalf("show --json has no digest: %s", js)
	}
	out, err := berthCmd(w.home, w.env, "install", mapped+"@"+version, "--catalog", "reg", "--yes", "--allow-unsigned", "--digest", m[1]).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "server pypi: mcpcap==0.4.4") || !strings.Contains(string(out), "tampered") {
		t.Fatalf("install from a tampered index: %v\n%s", err, out)
	}
	if _, err := os.Stat(store.Paths{Root: w.home}.Record(mapped, version)); err == nil {
		t.Error("a record was written")
	}
}
