package pool

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/internal/peers"
	"github.com/berth-mcp/berth/sandbox"
	"github.com/berth-mcp/berth/store"
)

// requireConfinement fails the test when this Linux host cannot confine
// (the tests below are about what confinement does, and CI's kernel has
// Landlock).
func requireConfinement(t *testing.T) *sandbox.Support {
	t.Helper()
	sup := sandbox.Probe()
	if sup.OS == "unknown" && slices.Contains(sup.Notes, "not implemented") {
		t.Skip("package sandbox is the skeleton's stub here (branch integ); merge h-sandbox")
	}
	if sup.LandlockABI == 0 {
		t.Fatalf("this host cannot confine a server (%+v); these tests need Landlock", sup)
	}
	return sup
}

// The benign real server: @modelcontextprotocol/server-filesystem (npm,
// pinned in testdata/peers) under the default profile serves a file of
// the workspace, and a read beside the workspace fails. The server also
// limits itself to the roots berth's client gives it (the workspace), so
// the failure beside it is not the sandbox's alone:
// TestDefaultProfileConfinesReads shows that part with a server that
// reads whatever it is asked.
func TestServerFilesystemConfined(t *testing.T) {
	dir := peers.Require(t)
	requireConfinement(t)
	f := newFixture(t)
	beside := filepath.Join(filepath.Dir(f.ws), "beside")
	if err := os.MkdirAll(beside, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.ws, "notes.txt"), []byte("in the workspace\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(beside, "secret.txt"), []byte("beside the workspace\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.plugin("fs", map[string]any{"files": map[string]any{"stdio": map[string]any{
		"command": "mcp-server-filesystem", "args": []string{"${workspace}", beside}}}})
	bin := filepath.Join(dir, "node_modules", ".bin")
	p := f.open(func(o *Options) {
		o.BaseEnv = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + f.home}
	})
	st := status(t, p, "fs__files")
	if st.State != StateRunning {
		t.Fatalf("server-filesystem under the default profile: %s %s %v", st.State, st.LastError, st.StderrTail)
	}
	if st.Sandbox == nil || !st.Sandbox.Confined || st.Sandbox.Declared {
		t.Fatalf("its confinement: %+v, want confined under the default profile", st.Sandbox)
	}
	got := callText(t, p, "fs__files__read_text_file", `{"path":"`+filepath.Join(f.ws, "notes.txt")+`"}`)
	if !strings.Contains(got, "in the workspace") {
		t.Fatalf("reading the workspace's file: %q", got)
	}
	if got := callText(t, p, "fs__files__write_file", `{"path":"`+filepath.Join(f.ws, "new.txt")+`","content":"written"}`); strings.Contains(strings.ToLower(got), "error") {
		t.Fatalf("writing into the workspace: %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "new.txt")); err != nil || string(b) != "written" {
		t.Fatalf("the file it wrote: %q %v", b, err)
	}
	got = callText(t, p, "fs__files__read_text_file", `{"path":"`+filepath.Join(beside, "secret.txt")+`"}`)
	if strings.Contains(got, "beside the workspace") {
		t.Fatalf("reading beside the workspace: %q, want a refusal", got)
	}
}

// Under the default profile a server that reads whatever it is asked
// reads the workspace and the bundle, and neither a directory beside the
// workspace nor a key planted in the home directory.
func TestDefaultProfileConfinesReads(t *testing.T) {
	requireConfinement(t)
	f := newFixture(t)
	beside := filepath.Join(filepath.Dir(f.ws), "beside")
	key := filepath.Join(f.home, ".ssh", "id_ed25519")
	for path, content := range map[string]string{
		filepath.Join(f.ws, "notes.txt"):    "in the workspace",
		filepath.Join(beside, "secret.txt"): "beside the workspace",
		key:                                 "PRIVATE KEY",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rec := f.plugin("rd", map[string]any{"srv": testServer("-tools", "readfile")})
	p := f.open(nil)
	if st := status(t, p, "rd__srv"); st.State != StateRunning || st.Sandbox == nil || !st.Sandbox.Confined {
		t.Fatalf("the server: %s %s %+v", st.State, st.LastError, st.Sandbox)
	}
	read := func(path string) string {
		return callText(t, p, "rd__srv__readfile", `{"path":"`+path+`"}`)
	}
	if got := read(filepath.Join(f.ws, "notes.txt")); got != "in the workspace" {
		t.Errorf("the workspace: %q", got)
	}
	d, err := store.ParseDigest(rec.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(filepath.Join(f.paths.Snapshot(d), "share", "data.txt")); got != "data\n" {
		t.Errorf("the bundle: %q", got)
	}
	for _, path := range []string{filepath.Join(beside, "secret.txt"), key} {
		if got := read(path); !strings.Contains(got, "permission denied") {
			t.Errorf("reading %s: %q, want permission denied", path, got)
		}
	}
}

// A server that declares one API host (a loopback origin, declared as
// 127.0.0.1:PORT) reaches it through berth's egress proxy; an undeclared
// one is refused with the proxy's 403.
func TestDeclaredHostThroughProxy(t *testing.T) {
	sup := requireConfinement(t)
	if !sup.UserNamespaces {
		t.Fatalf("this host has no user namespaces (%+v); a host list needs them", sup)
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "api answer") }))
	defer api.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "other answer") }))
	defer other.Close()
	apiURL, _ := url.Parse(api.URL)
	f := newFixture(t)
	srv := testServer("-tools", "fetch")
	srv["sandbox"] = map[string]any{"network": map[string]any{"mode": "hosts", "hosts": []string{apiURL.Host}}}
	f.plugin("net", map[string]any{"api": srv})
	p := f.open(nil)
	st := status(t, p, "net__api")
	if st.State != StateRunning {
		t.Fatalf("the server: %s %s %v", st.State, st.LastError, st.StderrTail)
	}
	if st.Sandbox == nil || st.Sandbox.Network != sandbox.NetworkHosts || !st.Sandbox.NetworkNamespace {
		t.Fatalf("its confinement: %+v, want a network namespace and the proxy", st.Sandbox)
	}
	if got := callText(t, p, "net__api__fetch", `{"url":"`+api.URL+`/v1"}`); got != "200 api answer" {
		t.Fatalf("the declared host: %q", got)
	}
	got := callText(t, p, "net__api__fetch", `{"url":"`+other.URL+`/"}`)
	if strings.Contains(got, "other answer") || !strings.HasPrefix(got, "403") {
		t.Fatalf("an undeclared host: %q, want the proxy's 403", got)
	}
}
