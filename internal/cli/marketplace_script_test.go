package cli

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rogpeppe/go-internal/testscript"
)

// servedDir is a directory served over HTTP(S) on loopback by a script.
type servedDir struct {
	srv      *httptest.Server
	fail     atomic.Bool
	requests atomic.Int64
}

var (
	servedMu sync.Mutex
	served   = map[string]*servedDir{} // by work dir + name
)

func servedKey(ts *testscript.TestScript, name string) string {
	return ts.Getenv("WORK") + "\x00" + name
}

// serveCmd: serve [-tls] NAME DIR serves DIR on a loopback address and
// sets $NAME_URL; with -tls it writes the server's certificate to
// $WORK/NAME-ca.pem and points SSL_CERT_FILE at it, as an operator with a
// private CA would.
func serveCmd(ts *testscript.TestScript, neg bool, args []string) {
	tls := len(args) > 0 && args[0] == "-tls"
	if tls {
		args = args[1:]
	}
	if neg || len(args) != 2 {
		ts.Fatalf("usage: serve [-tls] NAME DIR")
	}
	name, dir := args[0], ts.MkAbs(args[1])
	d := &servedDir{}
	files := http.FileServer(http.Dir(dir))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.requests.Add(1)
		if d.fail.Load() {
			http.Error(w, "the test made this server fail", http.StatusInternalServerError)
			return
		}
		files.ServeHTTP(w, r)
	})
	if tls {
		d.srv = httptest.NewTLSServer(h)
		ca := ts.MkAbs(name + "-ca.pem")
		pemData := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: d.srv.Certificate().Raw})
		if err := os.WriteFile(ca, pemData, 0o644); err != nil {
			ts.Fatalf("%v", err)
		}
		ts.Setenv("SSL_CERT_FILE", ca)
	} else {
		d.srv = httptest.NewServer(h)
	}
	registerServed(ts, name, d)
}

// registerServed records d as the script's server NAME, sets $NAME_URL,
// and closes and forgets it when the script ends.
func registerServed(ts *testscript.TestScript, name string, d *servedDir) {
	servedMu.Lock()
	served[servedKey(ts, name)] = d
	servedMu.Unlock()
	ts.Setenv(strings.ToUpper(name)+"_URL", d.srv.URL)
	ts.Defer(func() {
		d.srv.Close()
		servedMu.Lock()
		delete(served, servedKey(ts, name))
		servedMu.Unlock()
	})
}

func lookupServed(ts *testscript.TestScript, name string) *servedDir {
	servedMu.Lock()
	defer servedMu.Unlock()
	d := served[servedKey(ts, name)]
	if d == nil {
		ts.Fatalf("no server %s; start it with serve", name)
	}
	return d
}

// serveFailCmd: serve-fail NAME makes every later request fail (HTTP 500).
func serveFailCmd(ts *testscript.TestScript, neg bool, args []string) {
	on := true
	if len(args) > 0 && args[0] == "-off" {
		on, args = false, args[1:]
	}
	if neg || len(args) != 1 {
		ts.Fatalf("usage: serve-fail [-off] NAME")
	}
	lookupServed(ts, args[0]).fail.Store(on)
}

// serveRequestsCmd: serve-requests NAME prints how many requests the
// server got since it started or since the last serve-requests.
func serveRequestsCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: serve-requests NAME")
	}
	fmt.Fprintf(ts.Stdout(), "requests: %d\n", lookupServed(ts, args[0]).requests.Swap(0))
}

// serveRegistryCmd: serve-registry NAME DIR serves an MCP Registry's
// GET /v0/servers on loopback from recorded pages: DIR/cursors.json maps
// the cursor parameter ("" for the first page) to the file in DIR that
// answers it. It sets $NAME_URL.
func serveRegistryCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: serve-registry NAME DIR")
	}
	name, dir := args[0], ts.MkAbs(args[1])
	var cursors map[string]string
	if err := json.Unmarshal([]byte(ts.ReadFile(filepath.Join(dir, "cursors.json"))), &cursors); err != nil {
		ts.Fatalf("cursors.json: %v", err)
	}
	d := &servedDir{}
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.requests.Add(1)
		if d.fail.Load() {
			http.Error(w, "the test made this server fail", http.StatusInternalServerError)
			return
		}
		file, ok := cursors[r.URL.Query().Get("cursor")]
		if r.URL.Path != "/v0/servers" || !ok {
			http.Error(w, `{"error": "not found"}`, http.StatusNotFound)
			return
		}
		http.ServeFile(w, r, filepath.Join(dir, file))
	}))
	registerServed(ts, name, d)
}

// serveStaticRegistryCmd: serve-static-registry NAME DIR serves an export
// of berth catalog export-registry as a plain static web server does: the
// URL path, decoded (%2F is a '/'), names a file of DIR, or a directory
// whose index.json is the answer, as application/json; the query string
// is ignored. It sets $NAME_URL.
func serveStaticRegistryCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: serve-static-registry NAME DIR")
	}
	name, dir := args[0], ts.MkAbs(args[1])
	d := &servedDir{}
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.requests.Add(1)
		file := filepath.Join(dir, filepath.FromSlash(path.Clean("/"+r.URL.Path)))
		if fi, err := os.Stat(file); err != nil || fi.IsDir() {
			file = filepath.Join(file, "index.json")
		}
		data, err := os.ReadFile(file)
		if err != nil {
			http.Error(w, `{"error": "Server not found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(data)
	}))
	registerServed(ts, name, d)
}

// httpGetCmd: http-get URL prints the body of GET URL; a status other
// than 200 fails the command.
func httpGetCmd(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: http-get URL")
	}
	resp, err := http.Get(args[0])
	if err != nil {
		ts.Fatalf("%v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	ts.Stdout().Write(body)
	if (resp.StatusCode == http.StatusOK) == neg {
		ts.Fatalf("GET %s: %s", args[0], resp.Status)
	}
}
