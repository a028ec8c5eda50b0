package fetched

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-mcp/berth/bundle/runtimefetch"
)

// pyServer is the test server's module: an MCP server over stdio in the
// standard library and its one dependency, whose GREETING it answers
// with. %s is the dependency's module.
const pyServer = `import json
import sys

from %s import GREETING


def main():
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("method") == "initialize":
            result = {"protocolVersion": "2025-06-18", "capabilities": {},
                      "serverInfo": {"name": GREETING, "version": "0"}}
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
            sys.stdout.flush()
`

// pyWheel builds a pure-Python wheel (PEP 427) of name at version with
// the given modules (path → source), Requires-Dist lines and console
// scripts (name → module:function). It returns the file name, the bytes
// and the METADATA text.
func pyWheel(t testing.TB, name, version string, modules map[string]string, requires []string, scripts map[string]string) (string, []byte, string) {
	t.Helper()
	dist := strings.ReplaceAll(name, "-", "_")
	info := dist + "-" + version + ".dist-info/"
	meta := "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"
	for _, r := range requires {
		meta += "Requires-Dist: " + r + "\n"
	}
	files := [][2]string{}
	for _, p := range slices.Sorted(maps.Keys(modules)) {
		files = append(files, [2]string{p, modules[p]})
	}
	files = append(files,
		[2]string{info + "METADATA", meta},
		[2]string{info + "WHEEL", "Wheel-Version: 1.0\nGenerator: berth-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"})
	if len(scripts) > 0 {
		ep := "[console_scripts]\n"
		for _, s := range slices.Sorted(maps.Keys(scripts)) {
			ep += s + " = " + scripts[s] + "\n"
		}
		files = append(files, [2]string{info + "entry_points.txt", ep})
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
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f[0], Method: zip.Deflate, Modified: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)})
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
	return dist + "-" + version + "-py3-none-any.whl", buf.Bytes(), meta
}

// pyIndex is a PEP 503 simple index on loopback: /simple/<project>/ lists
// the project's files with their #sha256= fragment and their PEP 658
// metadata (data-dist-info-metadata), so that pip resolves from the
// metadata and never reads a wheel before berth downloads it;
// /files/<file> serves a file, /files/<file>.metadata its METADATA.
// lie names files whose listed hash is not theirs (a tampered index).
type pyIndex struct {
	files map[string]map[string][]byte // project → file → bytes
	meta  map[string]string            // wheel → METADATA
	lie   map[string]bool
	// swap serves its bytes in place of a file's from the file's second
	// download on (an index that changes a file after pip resolved it).
	swap   map[string][]byte
	served map[string]int
	// redirect sends a file's download elsewhere (an index that redirects
	// to another host).
	redirect map[string]string

	mu   sync.Mutex
	hits []string
}

func newPyIndex() *pyIndex {
	return &pyIndex{files: map[string]map[string][]byte{}, meta: map[string]string{}, lie: map[string]bool{}, swap: map[string][]byte{}, served: map[string]int{}}
}

func (x *pyIndex) add(project, file string, data []byte, meta string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.files[project] == nil {
		x.files[project] = map[string][]byte{}
	}
	x.files[project][file] = data
	if meta != "" {
		x.meta[file] = meta
	}
}

// tamper sets the index's lie or swap for file under its lock.
func (x *pyIndex) tamper(file string, swap []byte) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if swap == nil {
		x.lie[file] = true
	} else {
		x.swap[file] = swap
	}
}

func (x *pyIndex) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.hits = append(x.hits, r.URL.Path)
	p := r.URL.Path
	if proj, ok := strings.CutPrefix(p, "/simple/"); ok && x.files[strings.TrimSuffix(proj, "/")] != nil {
		files := x.files[strings.TrimSuffix(proj, "/")]
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<!DOCTYPE html>\n<html><body>\n")
		for _, fn := range slices.Sorted(maps.Keys(files)) {
			sum := sha256.Sum256(files[fn])
			if x.lie[fn] {
				sum = sha256.Sum256(append(files[fn], '!'))
			}
			attr := ""
			if m, ok := x.meta[fn]; ok {
				ms := sha256.Sum256([]byte(m))
				attr = fmt.Sprintf(` data-dist-info-metadata="sha256=%s"`, hex.EncodeToString(ms[:]))
			}
			fmt.Fprintf(w, "<a href=\"../../files/%s#sha256=%s\"%s>%s</a><br>\n", html.EscapeString(fn), hex.EncodeToString(sum[:]), attr, html.EscapeString(fn))
		}
		fmt.Fprintf(w, "</body></html>\n")
		return
	}
	if fn, ok := strings.CutPrefix(p, "/files/"); ok {
		if to := x.redirect[fn]; to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		if m, ok := strings.CutSuffix(fn, ".metadata"); ok && x.meta[m] != "" {
			w.Write([]byte(x.meta[m]))
			return
		}
		for _, files := range x.files {
			if data, ok := files[fn]; ok {
				x.served[fn]++
				if x.swap[fn] != nil && x.served[fn] > 1 {
					data = x.swap[fn]
				}
				w.Header().Set("Content-Type", "application/octet-stream")
				w.Write(data)
				return
			}
		}
	}
	http.NotFound(w, r)
}

func (x *pyIndex) asked() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Clone(x.hits)
}

// requirePip skips the test when python3 with its pip module is not on
// PATH, or fails it when BERTH_REQUIRE_PEERS=1 (as in CI).
func requirePip(t *testing.T) {
	t.Helper()
	if py, err := exec.LookPath("python3"); err == nil {
		if exec.Command(py, "-m", "pip", "--version").Run() == nil {
			return
		}
	}
	msg := "python3 with its pip module is not on PATH"
	if os.Getenv("BERTH_REQUIRE_PEERS") == "1" {
		t.Fatalf("%s (BERTH_REQUIRE_PEERS=1)", msg)
	}
	t.Skipf("real-peer: %s, or set BERTH_REQUIRE_PEERS=1 to make this a failure", msg)
}

// pyWorld is a loopback index with the server mcpdemo 1.0.0, which
// depends on mcpgreet==2.0 (a wheel) and offers mcpdemo 1.1.0 too; a
// hostile index with its own mcpdemo 1.0.0; and $BERTH_HOME/fetchers with
// pip.conf naming the good index. The environment berth gives pip names
// the hostile one in every way pip reads one (PIP_INDEX_URL,
// PIP_EXTRA_INDEX_URL, PIP_FIND_LINKS, PIP_CONFIG_FILE, the user's
// pip.conf) and sets PYTHONPATH to a directory that shadows the
// dependency.
type pyWorld struct {
	good, hostile *pyIndex
	goodURL       string
	stopGood      func()
	fetchers      string
	env           []string
}

func newPyWorld(t *testing.T) *pyWorld {
	t.Helper()
	w := &pyWorld{good: newPyIndex(), hostile: newPyIndex()}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		fn, data, meta := pyWheel(t, "mcpdemo", v, map[string]string{"mcpdemo/__init__.py": fmt.Sprintf(pyServer, "mcpgreet")}, []string{"mcpgreet==2.0"}, map[string]string{"mcpdemo": "mcpdemo:main", "mcpdemo-admin": "mcpdemo:main"})
		w.good.add("mcpdemo", fn, data, meta)
	}
	fn, data, meta := pyWheel(t, "mcpgreet", "2.0", map[string]string{"mcpgreet/__init__.py": "GREETING = 'greeted by mcpgreet 2.0 of the configured index'\n"}, nil, nil)
	w.good.add("mcpgreet", fn, data, meta)
	fn, data, meta = pyWheel(t, "mcpdemo", "1.0.0", map[string]string{"mcpdemo/__init__.py": "raise SystemExit('HOSTILE')\n"}, nil, map[string]string{"mcpdemo": "mcpdemo:main"})
	w.hostile.add("mcpdemo", fn, data, meta)
	good := httptest.NewServer(w.good)
	t.Cleanup(good.Close)
	w.goodURL, w.stopGood = good.URL, good.Close
	hostile := httptest.NewServer(w.hostile)
	t.Cleanup(hostile.Close)

	home := t.TempDir()
	w.fetchers = filepath.Join(home, "berth", "fetchers")
	userHome := filepath.Join(home, "user")
	hostileConf := "[global]\nindex-url = " + hostile.URL + "/simple/\n"
	shadow := filepath.Join(home, "shadow", "mcpgreet")
	for f, text := range map[string]string{
		filepath.Join(w.fetchers, "pip.conf"):                   "[global]\nindex-url = " + good.URL + "/simple/\n",
		filepath.Join(userHome, ".config", "pip", "pip.conf"):   hostileConf,
		filepath.Join(userHome, ".pip", "pip.conf"):             hostileConf,
		filepath.Join(home, "ws", "pip.conf"):                   hostileConf,
		filepath.Join(shadow, "__init__.py"):                    "GREETING = 'SHADOWED'\n",
		filepath.Join(userHome, ".local", "share", "x", "keep"): "",
	} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + userHome,
		"LANG=C.UTF-8",
		"TMPDIR=" + t.TempDir(),
		"PIP_INDEX_URL=" + hostile.URL + "/simple/",
		"PIP_EXTRA_INDEX_URL=" + hostile.URL + "/simple/",
		"PIP_FIND_LINKS=" + hostile.URL + "/simple/mcpdemo/",
		"PIP_CONFIG_FILE=" + filepath.Join(home, "ws", "pip.conf"),
		"PYTHONPATH=" + filepath.Dir(shadow),
	}
	return w
}

func (w *pyWorld) resolve(t *testing.T, f *runtimefetch.Fetch) (*Lock, string, error) {
	t.Helper()
	dir := t.TempDir()
	l, err := Resolve(context.Background(), "demo", f, dir, &Options{Fetchers: w.fetchers, Env: w.env})
	return l, dir, err
}

func pipx(pkg string) *runtimefetch.Fetch {
	f, err := runtimefetch.Read("pipx", []string{"run", pkg})
	if err != nil || f == nil {
		panic(fmt.Sprint(f, err))
	}
	return f
}

// resolvePyPI resolves the server and its dependency from the configured
// index only, records each wheel's URL and sha256, and installs a tree
// that the server runs from with the index stopped.
func TestResolvePyPI(t *testing.T) {
	requirePip(t)
	w := newPyWorld(t)
	l, dir, err := w.resolve(t, pipx("mcpdemo==1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	if h := w.hostile.asked(); len(h) > 0 {
		t.Errorf("the hostile index was asked for %q", h)
	}
	if tree, files, size, err := Measure(context.Background(), dir); err != nil || l.Tree != tree || !strings.HasPrefix(tree, "sha256:") || l.Files != files || l.Size != size || files < 6 {
		t.Errorf("lock's tree %s %d %d, the tree's %s %d %d (%v)", l.Tree, l.Files, l.Size, tree, files, size, err)
	}
	if l.Program != "bin/mcpdemo" || l.Ecosystem != "pypi" || l.Package != "mcpdemo==1.0.0" || l.Server != "demo" || l.Registry != w.goodURL+"/simple/" {
		t.Errorf("lock %+v", l)
	}
	if len(l.Packages) != 2 {
		t.Fatalf("packages %+v", l.Packages)
	}
	for i, want := range []struct{ name, version string }{{"mcpdemo", "1.0.0"}, {"mcpgreet", "2.0"}} {
		p := l.Packages[i]
		file := want.name + "-" + want.version + "-py3-none-any.whl"
		sum := sha256.Sum256(w.good.files[want.name][file])
		if p.Name != want.name || p.Version != want.version || p.Resolved != w.goodURL+"/files/"+file || p.Integrity != "sha256:"+hex.EncodeToString(sum[:]) || p.Path != "" {
			t.Errorf("package %d: %+v", i, p)
		}
	}
	for _, f := range w.good.asked() {
		if strings.Contains(f, "1.1.0") && !strings.HasSuffix(f, ".metadata") {
			t.Errorf("a file of another version was fetched: %s", f)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "mcpgreet", "__init__.py")); err != nil {
		t.Errorf("the dependency is not in the tree: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*", "__pycache__")); len(m) > 0 {
		t.Errorf("the tree has bytecode: %q", m)
	}
	py, err := Interpreter(l, dir)
	if err != nil || !filepath.IsAbs(py) {
		t.Errorf("Interpreter = %q, %v", py, err)
	}

	if err := checkPyPI(dir, l); err != nil {
		t.Errorf("checkPyPI of the tree as installed: %v", err)
	}
	changed := *l
	changed.Packages = slices.Clone(l.Packages)
	changed.Packages[1].Version = "2.1"
	if err := checkPyPI(dir, &changed); err == nil || !strings.Contains(err.Error(), "mcpgreet is 2.0, not 2.1") {
		t.Errorf("checkPyPI of a lock with another version: %v", err)
	}
	changed.Packages = changed.Packages[:1]
	if err := checkPyPI(dir, &changed); err == nil || !strings.Contains(err.Error(), "mcpgreet 2.0 is not in the lock") {
		t.Errorf("checkPyPI of a lock without a package: %v", err)
	}

	w.stopGood() // offline from here
	if got := runPyServer(t, l, dir, w.env); !strings.Contains(got, "greeted by mcpgreet 2.0 of the configured index") {
		t.Errorf("the staged server answered %q", got)
	}
}

// runPyServer starts the lock's program from the tree as berth does
// (RunEnv) and returns its answer to initialize.
func runPyServer(t *testing.T, l *Lock, dir string, env []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, filepath.FromSlash(l.Program)))
	cmd.Env = RunEnv(l, dir, env)
	cmd.Dir = t.TempDir()
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", l.Program, err, stderr.String())
	}
	line, _ := bufio.NewReader(bytes.NewReader(out)).ReadString('\n')
	return line
}

// A file whose bytes are not what the index's #sha256= says is refused.
// (pip 23 checks it when its dry run reads the wheel; a pip that resolves
// from PEP 658 metadata alone leaves it to berth's own check, which
// TestResolvePyPISwappedFile exercises.)
func TestResolvePyPITamperedHash(t *testing.T) {
	requirePip(t)
	w := newPyWorld(t)
	w.good.tamper("mcpgreet-2.0-py3-none-any.whl", nil)
	_, dir, err := w.resolve(t, pipx("mcpdemo==1.0.0"))
	if err == nil || !strings.Contains(err.Error(), "sha256") || !strings.Contains(err.Error(), "tampered") {
		t.Fatalf("a tampered hash: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Errorf("something was installed: %v", ents)
	}
}

// An index that serves other bytes for a file once pip has resolved the
// tree (the #sha256= of its page unchanged) is refused before anything is
// installed: by berth's own hash of what pip downloaded (pip 23.2), or by
// pip itself when its dry run read the file twice (Debian's pip 23.0).
// TestHashDownloads is the check alone.
func TestResolvePyPISwappedFile(t *testing.T) {
	requirePip(t)
	w := newPyWorld(t)
	_, hostile, _ := pyWheel(t, "mcpgreet", "2.0", map[string]string{"mcpgreet/__init__.py": "GREETING = 'SWAPPED'\n"}, nil, nil)
	w.good.tamper("mcpgreet-2.0-py3-none-any.whl", hostile)
	_, dir, err := w.resolve(t, pipx("mcpdemo==1.0.0"))
	if err == nil || !strings.Contains(err.Error(), "sha256") || !strings.Contains(err.Error(), "tampered") {
		t.Fatalf("a file swapped after resolution: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Errorf("something was installed: %v", ents)
	}
}

// A dependency that the index has only as an sdist is refused by name: it
// would run its build script at trust.
func TestResolvePyPISdistRefused(t *testing.T) {
	requirePip(t)
	w := newPyWorld(t)
	fn, data, meta := pyWheel(t, "mcpbuilt", "1.0.0", map[string]string{"mcpbuilt/__init__.py": fmt.Sprintf(pyServer, "mcpsdist")}, []string{"mcpsdist==0.1"}, map[string]string{"mcpbuilt": "mcpbuilt:main"})
	w.good.add("mcpbuilt", fn, data, meta)
	w.good.add("mcpsdist", "mcpsdist-0.1.tar.gz", []byte("not a real sdist"), "")
	_, _, err := w.resolve(t, pipx("mcpbuilt==1.0.0"))
	if err == nil || !strings.Contains(err.Error(), "no wheel of mcpsdist") || !strings.Contains(err.Error(), "sdist runs its build script") {
		t.Fatalf("an sdist-only dependency: %v", err)
	}
	for _, p := range w.good.asked() {
		if strings.HasSuffix(p, ".tar.gz") {
			t.Errorf("the sdist was downloaded: %s", p)
		}
	}
}

// A package without the console script that the form runs is refused,
// naming the scripts it has.
func TestResolvePyPINoScript(t *testing.T) {
	requirePip(t)
	w := newPyWorld(t)
	fn, data, meta := pyWheel(t, "mcpother", "1.0.0", map[string]string{"mcpother/__init__.py": ""}, nil, map[string]string{"other-a": "mcpother:main", "other-b": "mcpother:main"})
	w.good.add("mcpother", fn, data, meta)
	_, _, err := w.resolve(t, pipx("mcpother==1.0.0"))
	if err == nil || !strings.Contains(err.Error(), `no console script "mcpother"; it has other-a, other-b: name one with pipx run --spec mcpother==1.0.0 <script>`) {
		t.Fatalf("no script named like the package: %v", err)
	}
}

func TestPyPIIndex(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "pip.conf"), []byte("[global]\nindex-url = https://pip.example/simple/\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "uv.toml"), []byte("[[index]]\nurl = \"https://uv.example/simple/\"\ndefault = true\n"), 0o600)
	for tool, want := range map[string]string{"pipx run": "https://pip.example/simple/", "uvx": "https://uv.example/simple/", "uv tool run": "https://uv.example/simple/"} {
		if got, err := pypiIndex(dir, tool); err != nil || got != want {
			t.Errorf("%s: %q, %v", tool, got, err)
		}
	}
	if got, err := pypiIndex(t.TempDir(), "uvx"); err != nil || got != "https://pypi.org/simple/" {
		t.Errorf("no configuration: %q, %v", got, err)
	}
	os.WriteFile(filepath.Join(dir, "pip.conf"), []byte("[global]\nindex-url = file:///srv/wheels\n"), 0o600)
	if _, err := pypiIndex(dir, "pipx run"); err == nil {
		t.Error("a file: index was accepted")
	}
}

func TestParsePipReport(t *testing.T) {
	good := `{"version":"1","install":[{"download_info":{"url":"https://files.example/p/a-1.0-py3-none-any.whl#sha256=` + strings.Repeat("ab", 32) + `","archive_info":{"hash":"sha256=` + strings.Repeat("ab", 32) + `"}},"is_direct":false,"metadata":{"name":"a","version":"1.0"}}]}`
	items, err := parsePipReport([]byte(good))
	if err != nil || len(items) != 1 || items[0].SHA256 != strings.Repeat("ab", 32) || items[0].URL != "https://files.example/p/a-1.0-py3-none-any.whl" || items[0].File != "a-1.0-py3-none-any.whl" {
		t.Fatalf("%+v, %v", items, err)
	}
	for name, bad := range map[string]string{
		"sdist":     strings.Replace(good, "a-1.0-py3-none-any.whl", "a-1.0.tar.gz", 1),
		"direct":    strings.Replace(good, `"is_direct":false`, `"is_direct":true`, 1),
		"file URL":  strings.Replace(good, "https://files.example", "file://", 1),
		"other pkg": strings.Replace(good, "p/a-1.0", "p/b-1.0", 1),
		"bad hash":  strings.Replace(good, `"hash":"sha256=ab`, `"hash":"sha256=AB`, 1),
		"bad name":  strings.Replace(good, `"name":"a"`, `"name":"../a"`, 1),
		"vcs":       strings.Replace(good, `"archive_info"`, `"vcs_info":{},"archive_info"`, 1),
		"twice":     strings.Replace(good, `}]}`, `},`+good[strings.Index(good, `{"download_info"`):len(good)-2]+`]}`, 1),
		"empty":     `{"version":"1","install":[]}`,
		"version":   strings.Replace(good, `"version":"1"`, `"version":"2"`, 1),
	} {
		if _, err := parsePipReport([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParseConsoleScripts(t *testing.T) {
	s, err := parseConsoleScripts([]byte("[gui_scripts]\ng = m:f\n[console_scripts]\n# c\nserve = pkg.cli:main\n  other=pkg:o \n"))
	if err != nil || len(s) != 2 || s["serve"] != "pkg.cli:main" || s["other"] != "pkg:o" {
		t.Fatalf("%v, %v", s, err)
	}
	for _, bad := range []string{"[console_scripts]\n../x = m:f\n", "[console_scripts]\na/b = m:f\n", "[console_scripts]\nnoequals\n", "[console_scripts]\n.. = m:f\n"} {
		if _, err := parseConsoleScripts([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseShebang(t *testing.T) {
	if py, ok := parseShebang("#!/usr/bin/python3\n"); !ok || py != "/usr/bin/python3" {
		t.Errorf("%q %v", py, ok)
	}
	for _, bad := range []string{"#!/bin/sh\n", "#!python3\n", "#!/usr/bin/env python3\n", "import x\n"} {
		if _, ok := parseShebang(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzParsePipReport(f *testing.F) {
	f.Add([]byte(`{"version":"1","install":[{"download_info":{"url":"https://f.example/a-1.0-py3-none-any.whl","archive_info":{"hashes":{"sha256":"` + strings.Repeat("0", 64) + `"}}},"metadata":{"name":"a","version":"1.0"}}]}`))
	f.Add([]byte(`{"version":"1","install":[{"download_info":{"url":"git+https://x","vcs_info":{}},"is_direct":true,"metadata":{"name":"a","version":"1"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		items, err := parsePipReport(data)
		if err != nil {
			return
		}
		for _, it := range items {
			if !pyProject.MatchString(it.Name) || !wheelFile.MatchString(it.File) || strings.Contains(it.File, "/") || (it.SHA256 != "" && !sha256Hex.MatchString(it.SHA256)) {
				t.Fatalf("accepted %+v", it)
			}
			if !strings.HasPrefix(it.URL, "http://") && !strings.HasPrefix(it.URL, "https://") {
				t.Fatalf("accepted the URL %q", it.URL)
			}
		}
	})
}

func FuzzParseConsoleScripts(f *testing.F) {
	f.Add([]byte("[console_scripts]\nserve = pkg.cli:main\n"))
	f.Add([]byte("[console_scripts]\n../../bin/sh = x:y\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseConsoleScripts(data)
		if err != nil {
			return
		}
		for k := range s {
			if k == "." || k == ".." || strings.ContainsAny(k, `/\`+"\x00") || filepath.Base(k) != k {
				t.Fatalf("accepted the script name %q", k)
			}
		}
	})
}

func FuzzParseShebang(f *testing.F) {
	f.Add("#!/usr/bin/python3\n")
	f.Add("#!/bin/sh -e\n")
	f.Fuzz(func(t *testing.T, line string) {
		py, ok := parseShebang(line)
		if ok && (!filepath.IsAbs(py) || strings.ContainsAny(py, " \t\n\x00")) {
			t.Fatalf("accepted %q from %q", py, line)
		}
	})
}

func TestParseMetadata(t *testing.T) {
	n, v, err := parseMetadata([]byte("Metadata-Version: 2.1\r\nName: Mcp_Demo\r\nVersion: 1.0.0\r\nSummary: x\r\n  more\r\n\r\nName: body\n"))
	if err != nil || n != "Mcp_Demo" || v != "1.0.0" {
		t.Fatalf("%q %q %v", n, v, err)
	}
	for _, bad := range []string{"Version: 1\n", "Name: a\n", "Name: ../a\nVersion: 1\n", "\nName: a\nVersion: 1\n"} {
		if _, _, err := parseMetadata([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzParseMetadata(f *testing.F) {
	f.Add([]byte("Metadata-Version: 2.1\nName: a\nVersion: 1.0\n\nbody"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, v, err := parseMetadata(data)
		if err == nil && (!pyProject.MatchString(n) || !pyLooseVersion.MatchString(v)) {
			t.Fatalf("accepted %q %q", n, v)
		}
	})
}

// berth's own hash of each downloaded file is the lock's integrity, and a
// file whose hash is not the index's is refused.
func TestHashDownloads(t *testing.T) {
	dl := t.TempDir()
	os.WriteFile(filepath.Join(dl, "a-1.0-py3-none-any.whl"), []byte("wheel a"), 0o600)
	sum := sha256.Sum256([]byte("wheel a"))
	good := hex.EncodeToString(sum[:])
	it := pipItem{Name: "a", Version: "1.0", URL: "https://user:tok@files.example/a-1.0-py3-none-any.whl", File: "a-1.0-py3-none-any.whl", SHA256: good}
	pkgs, err := hashDownloads(dl, "https://idx.example/simple/", []pipItem{it})
	if err != nil || len(pkgs) != 1 || pkgs[0].Integrity != "sha256:"+good || pkgs[0].Resolved != "https://files.example/a-1.0-py3-none-any.whl" {
		t.Fatalf("%+v, %v", pkgs, err)
	}
	it.SHA256 = ""
	if pkgs, err := hashDownloads(dl, "https://idx.example/simple/", []pipItem{it}); err != nil || pkgs[0].Integrity != "sha256:"+good {
		t.Errorf("an index without hashes: %+v, %v", pkgs, err)
	}
	it.SHA256 = strings.Repeat("0", 64)
	if _, err := hashDownloads(dl, "https://idx.example/simple/", []pipItem{it}); err == nil || !strings.Contains(err.Error(), "the index https://idx.example/simple/ says sha256 "+it.SHA256) {
		t.Errorf("a mismatch: %v", err)
	}
	it.SHA256 = good
	os.WriteFile(filepath.Join(dl, "b-1.0-py3-none-any.whl"), nil, 0o600)
	if _, err := hashDownloads(dl, "https://idx.example/simple/", []pipItem{it}); err == nil {
		t.Error("a file that is not in the report was accepted")
	}
}

func TestRunEnv(t *testing.T) {
	l := &Lock{Ecosystem: "pypi"}
	env := RunEnv(l, "/t", []string{"PATH=/bin", "PYTHONPATH=/evil", "pythonhome=/x", "PYTHONSTARTUP=/s.py", "PYTHONUNBUFFERED=1"})
	want := []string{"PATH=/bin", "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1", "PYTHONNOUSERSITE=1", "PYTHONPATH=/t", "PYTHONSAFEPATH=1"}
	if !slices.Equal(env, want) {
		t.Errorf("RunEnv = %q, want %q", env, want)
	}
	npm := []string{"PYTHONPATH=/x"}
	if got := RunEnv(&Lock{Ecosystem: "npm"}, "/t", npm); !slices.Equal(got, npm) {
		t.Errorf("RunEnv of an npm tree = %q", got)
	}
}

// uvx --python 3.X resolves with python3.X on PATH, which must be that
// version.
func TestPythonFor(t *testing.T) {
	bin := t.TempDir()
	fake := func(name, version string) {
		os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\necho 'Python "+version+"'\n"), 0o755)
	}
	fake("python3", "3.11.7")
	fake("python3.12", "3.12.4")
	fake("python3.10", "3.9.1")
	env := []string{"PATH=.:" + bin}
	read := func(args ...string) *runtimefetch.Fetch {
		f, err := runtimefetch.Read("uvx", args)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	ctx := context.Background()
	if py, err := pythonFor(ctx, read("a==1.0"), env); err != nil || py != filepath.Join(bin, "python3") {
		t.Errorf("no --python: %q, %v", py, err)
	}
	for _, v := range []string{"3.12", "3.12.4"} {
		if py, err := pythonFor(ctx, read("--python", v, "a==1.0"), env); err != nil || py != filepath.Join(bin, "python3.12") {
			t.Errorf("--python %s: %q, %v", v, py, err)
		}
	}
	if _, err := pythonFor(ctx, read("--python", "3.12.5", "a==1.0"), env); err == nil || !strings.Contains(err.Error(), `is Python "3.12.4", not 3.12.5`) {
		t.Errorf("--python 3.12.5 with 3.12.4: %v", err)
	}
	if _, err := pythonFor(ctx, read("--python", "3.10", "a==1.0"), env); err == nil {
		t.Error("a python3.10 that is 3.9 was accepted")
	}
	if _, err := pythonFor(ctx, read("--python=3.13", "a==1.0"), env); err == nil || !strings.Contains(err.Error(), "install python3.13") {
		t.Errorf("--python 3.13 missing: %v", err)
	}
	// a python3.11 that does not run (a pyenv shim of a version not
	// selected) is passed over for a later one on PATH
	bin2 := t.TempDir()
	os.WriteFile(filepath.Join(bin2, "python3.11"), []byte("#!/bin/sh\nexit 127\n"), 0o755)
	fake("python3.11", "3.11.7")
	if py, err := pythonFor(ctx, read("--python", "3.11", "a==1.0"), []string{"PATH=" + bin2 + ":" + bin}); err != nil || py != filepath.Join(bin, "python3.11") {
		t.Errorf("--python 3.11 after a shim that fails: %q, %v", py, err)
	}
	// the working directory is never searched
	t.Chdir(t.TempDir())
	os.WriteFile("python3.9", []byte("#!/bin/sh\necho 'Python 3.9.0'\n"), 0o755)
	if _, err := pythonFor(ctx, read("--python", "3.9", "a==1.0"), env); err == nil {
		t.Error("python3.9 in the working directory was used")
	}
}

// The console script named with pipx run --spec, or uvx --from, is the
// program; uvx resolves against uv.toml's index, not pip.conf's; the same
// package resolved again is the same tree (digest).
func TestResolvePyPIFrom(t *testing.T) {
	requirePip(t)
	w := newPyWorld(t)
	l, dir, err := w.resolve(t, mustRead(t, "pipx", "run", "--spec", "mcpdemo==1.0.0", "mcpdemo-admin", "--flag"))
	if err != nil || l.Program != "bin/mcpdemo-admin" {
		t.Fatalf("pipx run --spec: %+v, %v", l, err)
	}
	if err := checkPyPI(dir, l); err != nil {
		t.Error(err)
	}
	first := l.Tree
	os.WriteFile(filepath.Join(w.fetchers, "uv.toml"), []byte("index-url = \""+w.goodURL+"/simple/\"\n"), 0o600)
	os.WriteFile(filepath.Join(w.fetchers, "pip.conf"), []byte("[global]\nindex-url = http://127.0.0.1:1/simple/\n"), 0o600)
	l, _, err = w.resolve(t, mustRead(t, "uvx", "--from", "mcpdemo==1.0.0", "mcpdemo-admin"))
	if err != nil || l.Program != "bin/mcpdemo-admin" || l.Registry != w.goodURL+"/simple/" {
		t.Fatalf("uvx --from: %+v, %v", l, err)
	}
	if l.Tree != first {
		t.Errorf("the same package resolved twice gave the trees %s and %s: a re-trust would see a change", first, l.Tree)
	}
	if _, _, err := w.resolve(t, mustRead(t, "uvx", "--from", "mcpdemo==1.0.0", "nosuch")); err == nil || !strings.Contains(err.Error(), `no console script "nosuch"; it has mcpdemo, mcpdemo-admin`) {
		t.Errorf("uvx --from with a script the package lacks: %v", err)
	}
}

func mustRead(t *testing.T, cmd string, args ...string) *runtimefetch.Fetch {
	t.Helper()
	f, err := runtimefetch.Read(cmd, args)
	if err != nil || f == nil {
		t.Fatalf("%s %q: %v", cmd, args, err)
	}
	return f
}

func TestNoDowngrade(t *testing.T) {
	items := []pipItem{{Name: "a", Version: "1", URL: "https://files.example/a-1-py3-none-any.whl"}, {Name: "b", Version: "1", URL: "http://files.example/b-1-py3-none-any.whl"}}
	if err := noDowngrade("https://idx.example/simple/", items); err == nil || !strings.Contains(err.Error(), "b 1:") {
		t.Errorf("an http file of an https index: %v", err)
	}
	if err := noDowngrade("http://127.0.0.1:9/simple/", items); err != nil {
		t.Errorf("an http index: %v", err)
	}
	if err := noDowngrade("https://idx.example/simple/", items[:1]); err != nil {
		t.Errorf("https files: %v", err)
	}
}

// An index that cannot be reached: pip's quiet output says only that it
// found nothing, so the refusal names both causes and the file to fix.
func TestResolvePyPIUnreachable(t *testing.T) {
	requirePip(t)
	w := newPyWorld(t)
	w.stopGood()
	os.WriteFile(filepath.Join(w.fetchers, "pip.conf"), []byte("[global]\nindex-url = "+w.goodURL+"/simple/\nretries = 0\n"), 0o600)
	_, _, err := w.resolve(t, pipx("mcpdemo==1.0.0"))
	if err == nil || !(strings.Contains(err.Error(), "pip could not reach the index") || strings.Contains(err.Error(), "if the index could not be reached, check the network or name a mirror in "+filepath.Join(w.fetchers, "pip.conf"))) {
		t.Fatalf("an index that is down: %v", err)
	}
}
