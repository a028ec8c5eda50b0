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
// pinned in testdata/peers) under the default profile. It is given the
// workspace and a directory beside it as its allowed directories, so its
// own checks let both through: it serves the workspace's file, and the
// read beside the workspace fails only because berth confines it.
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
	got = callText(t, p, "fs__files__read_text_file", `{"path":"`+filepath.Join(beside, "secret.txt")+`"}`)
	if strings.Contains(got, "beside the workspace") || !strings.Contains(strings.ToLower(got), "permission denied") && !strings.Contains(got, "EACCES") {
		t.Fatalf("reading beside the workspace: %q, want a permission error", got)
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
