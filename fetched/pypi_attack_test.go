package fetched

import (
	"context"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A wheel that ships its own bin/<console script> (a .data/scripts file)
// with a shebang of its choosing, and an entry_points.txt whose section
// berth reads as [console_scripts] but pip does not ("[ console_scripts ]"),
// so that pip copies the wheel's file instead of writing its own, must not
// choose the python the server runs with (and so the runtime prefix that
// is readable and executable under confinement: here /home/victim).
func TestResolvePyPIWheelChoosesPython(t *testing.T) {
	requirePip(t)
	for i, ep := range []string{
		"[ console_scripts ]\nmcpx = mcpx:main\n",
		"[console_scripts]\nmcpx = mcpx:main\n", // pip writes its own: held already
	} {
		w := newPyWorld(t)
		fn, data, meta := pyWheel(t, "mcpx", "1.0.0", map[string]string{
			"mcpx/__init__.py":                      "def main():\n    pass\n",
			"mcpx-1.0.0.data/scripts/mcpx":          "#!/home/victim/python3\nprint('mine')\n",
			"mcpx-1.0.0.dist-info/entry_points.txt": ep,
		}, nil, nil)
		w.good.add("mcpx", fn, data, meta)
		l, dir, err := w.resolve(t, pipx("mcpx==1.0.0"))
		if err != nil {
			if i == 0 && !strings.Contains(err.Error(), "not with the python that installed it") {
				t.Errorf("%d: refused for another reason: %v", i, err)
			}
			continue
		}
		if py, _ := Interpreter(l, dir); py == "/home/victim/python3" {
			t.Errorf("%d: the wheel chose the server's python: %s", i, py)
		}
	}
}

// A wheel whose entries (and RECORD) name paths outside the tree ("../",
// an absolute path, through .data/) installs nothing outside it.
func TestResolvePyPIWheelPathsOutside(t *testing.T) {
	requirePip(t)
	for i, bad := range []string{"../escape.py", "mcpx-1.0.0.data/purelib/../../escape.py", "mcpx-1.0.0.data/data/../../../escape.py", "/tmp/berth-pypi-escape.py"} {
		w := newPyWorld(t)
		fn, data, meta := pyWheel(t, "mcpx", "1.0.0", map[string]string{
			"mcpx/__init__.py": "def main():\n    pass\n",
			bad:                "ESCAPED = 1\n",
		}, nil, map[string]string{"mcpx": "mcpx:main"})
		w.good.add("mcpx", fn, data, meta)
		parent := t.TempDir()
		dir := filepath.Join(parent, "a", "b", "tree")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		_, err := Resolve(context.Background(), "demo", pipx("mcpx==1.0.0"), dir, &Options{Fetchers: w.fetchers, Env: w.env})
		t.Logf("%d %s: %v", i, bad, firstLine(err))
		_ = filepath.WalkDir(parent, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "escape.py" && !strings.HasPrefix(p, dir+string(filepath.Separator)) {
				t.Errorf("%d: the wheel wrote %s outside the tree", i, p)
			}
			return nil
		})
		if _, err := os.Stat("/tmp/berth-pypi-escape.py"); err == nil {
			os.Remove("/tmp/berth-pypi-escape.py")
			t.Errorf("%d: the wheel wrote /tmp/berth-pypi-escape.py", i)
		}
		tmp := envValue(w.env, "TMPDIR")
		_ = filepath.WalkDir(filepath.Dir(tmp), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "escape.py" && !strings.HasPrefix(p, dir+string(filepath.Separator)) {
				t.Errorf("%d: the wheel wrote %s outside the tree", i, p)
			}
			return nil
		})
	}
}

// An index whose file URL redirects to another host serving other bytes:
// the index's #sha256= still binds the file.
func TestResolvePyPIRedirectElsewhere(t *testing.T) {
	requirePip(t)
	w := newPyWorld(t)
	const file = "mcpgreet-2.0-py3-none-any.whl"
	_, other, _ := pyWheel(t, "mcpgreet", "2.0", map[string]string{"mcpgreet/__init__.py": "GREETING = 'ELSEWHERE'\n"}, nil, nil)
	elsewhere := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { rw.Write(other) }))
	t.Cleanup(elsewhere.Close)
	w.good.mu.Lock()
	w.good.redirect = map[string]string{file: elsewhere.URL + "/" + file}
	w.good.mu.Unlock()
	_, dir, err := w.resolve(t, pipx("mcpdemo==1.0.0"))
	if err == nil {
		t.Fatalf("a file redirected to another host with other bytes was installed into %s", dir)
	}
	t.Logf("refused: %v", firstLine(err))
}

func firstLine(err error) string {
	if err == nil {
		return "<nil>"
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// A console script name with "/" or ".." (in the server's package or a
// dependency's) writes nothing outside the tree.
func TestResolvePyPIConsoleScriptNameOutside(t *testing.T) {
	requirePip(t)
	for i, name := range []string{"../../../../../../../../tmp/berth-cs-escape", "sub/berth-cs-escape", "/tmp/berth-cs-escape"} {
		w := newPyWorld(t)
		ep := "[console_scripts]\nmcpx = mcpx:main\n" + name + " = mcpx:main\n"
		fn, data, meta := pyWheel(t, "mcpx", "1.0.0", map[string]string{
			"mcpx/__init__.py":                      "def main():\n    pass\n",
			"mcpx-1.0.0.dist-info/entry_points.txt": ep,
		}, nil, nil)
		w.good.add("mcpx", fn, data, meta)
		_, dir, err := w.resolve(t, pipx("mcpx==1.0.0"))
		t.Logf("%d %s: %v", i, name, firstLine(err))
		for _, p := range []string{"/tmp/berth-cs-escape", filepath.Join(filepath.Dir(envValue(w.env, "TMPDIR")), "berth-cs-escape")} {
			if _, err := os.Stat(p); err == nil {
				os.Remove(p)
				t.Errorf("%d: pip wrote the console script %s outside the tree", i, p)
			}
		}
		if err == nil {
			if _, e := os.Stat(filepath.Join(dir, "bin", "sub", "berth-cs-escape")); e == nil {
				t.Logf("%d: the tree holds bin/sub/berth-cs-escape", i)
			}
		}
	}
}

// A wheel only for another platform or python is not installed.
func TestResolvePyPIOtherPlatform(t *testing.T) {
	requirePip(t)
	for _, file := range []string{"mcpx-1.0.0-cp27-cp27m-win_amd64.whl", "mcpx-1.0.0-py2-none-any.whl", "mcpx-1.0.0-cp313-cp313-macosx_11_0_arm64.whl"} {
		w := newPyWorld(t)
		_, data, meta := pyWheel(t, "mcpx", "1.0.0", map[string]string{"mcpx/__init__.py": "def main():\n    pass\n"}, nil, map[string]string{"mcpx": "mcpx:main"})
		w.good.add("mcpx", file, data, meta)
		if _, _, err := w.resolve(t, pipx("mcpx==1.0.0")); err == nil {
			t.Errorf("the wheel %s was installed", file)
		} else {
			t.Logf("%s: %v", file, firstLine(err))
		}
	}
}
