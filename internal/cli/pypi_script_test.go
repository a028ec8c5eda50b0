package cli

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// pyregCmd is "pyreg NAME==VERSION PYTHON": a loopback PEP 503 index
// serving one wheel of NAME at VERSION (a console script named like it,
// which does nothing: the scripts trust and verify, never start it), named in $BERTH_HOME/fetchers/uv.toml and
// pip.conf so that berth resolves PyPI-fetched servers against it at
// trust; and, on PATH, python<PYTHON> (3.X) of that version, found on
// PATH or among pyenv's versions (a pyenv shim of a version that is not
// selected does not run). It fails when no such python is here.
func pyregCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: pyreg NAME==VERSION 3.X")
	}
	name, version, ok := strings.Cut(args[0], "==")
	if !ok {
		ts.Fatalf("pyreg: %q is not NAME==VERSION", args[0])
	}
	py := findPython(ts, args[1])
	bin := ts.MkAbs("pyreg-bin")
	ts.Check(os.MkdirAll(bin, 0o755))
	ts.Check(os.Symlink(py, filepath.Join(bin, "python"+args[1])))
	ts.Setenv("PATH", bin+string(os.PathListSeparator)+ts.Getenv("PATH"))

	mod := strings.ReplaceAll(name, "-", "_")
	info := mod + "-" + version + ".dist-info/"
	files := [][2]string{
		{mod + "/__init__.py", "def main():\n    pass\n"},
		{info + "METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"},
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
		ts.Check(err)
		_, err = w.Write([]byte(f[1]))
		ts.Check(err)
	}
	ts.Check(zw.Close())
	wheel, data := mod+"-"+version+"-py3-none-any.whl", buf.Bytes()
	sum := sha256.Sum256(data)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/simple/" + name + "/":
			fmt.Fprintf(w, "<html><body><a href=\"../../files/%s#sha256=%s\">%s</a></body></html>\n", wheel, hex.EncodeToString(sum[:]), wheel)
		case "/files/" + wheel:
			w.Write(data)
		default:
			http.NotFound(w, r)
		}
	}))
	ts.Defer(srv.Close)
	dir := filepath.Join(ts.Getenv("BERTH_HOME"), "fetchers")
	ts.Check(os.MkdirAll(dir, 0o700))
	ts.Check(os.WriteFile(filepath.Join(dir, "uv.toml"), []byte("index-url = \""+srv.URL+"/simple/\"\n"), 0o600))
	ts.Check(os.WriteFile(filepath.Join(dir, "pip.conf"), []byte("[global]\nindex-url = "+srv.URL+"/simple/\n"), 0o600))
}

// findPython finds a python of version v (3.X) that runs.
func findPython(ts *testscript.TestScript, v string) string {
	var cands []string
	for _, d := range filepath.SplitList(ts.Getenv("PATH")) {
		cands = append(cands, filepath.Join(d, "python"+v))
	}
	root := os.Getenv("PYENV_ROOT")
	if root == "" {
		if h, err := os.UserHomeDir(); err == nil {
			root = filepath.Join(h, ".pyenv")
		}
	}
	if m, _ := filepath.Glob(filepath.Join(root, "versions", v+".*", "bin", "python"+v)); len(m) > 0 {
		cands = append(cands, m...)
	}
	for _, c := range cands {
		out, err := exec.Command(c, "--version").Output()
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(out)), "Python "+v+".") {
			return c
		}
	}
	ts.Fatalf("pyreg: no Python %s here (on PATH or among pyenv's versions); install one", v)
	return ""
}
