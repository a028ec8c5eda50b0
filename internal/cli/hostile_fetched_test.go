//go:build linux

package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-mcp/berth/internal/hostile"
	"github.com/berth-mcp/berth/internal/testkit"
)

// TestHostileFetched: the fetched path. berth-hostile for node
// (testdata/hostile/berth-hostile.js) is published in a loopback npm
// registry; a bundle runs it with npx and declares network none. berth
// resolves and stages its tree at trust, starts it from there without the
// registry, and the server can neither read ~/.ssh nor reach the network
// (its host's loopback included).
func TestHostileFetched(t *testing.T) {
	peers := testkit.PeersBin(t)
	js, err := os.ReadFile("../../testdata/hostile/berth-hostile.js")
	if err != nil {
		t.Fatal(err)
	}
	reg := testkit.NewNPMRegistry(t, testkit.NPMPackage{Name: "berth-hostile-node", Version: "1.0.0",
		Bin: "bin/berth-hostile.js", Files: map[string]string{"bin/berth-hostile.js": string(js)}})
	ns := hostile.NewNetNS(t)
	l := newHostileLab(t, &hostileOptions{
		fetched: `{"stdio": {"command": "npx", "args": ["-y", "berth-hostile-node@1.0.0"]}, "sandbox": {"network": {"mode": "none"}}}`,
		path:    peers,
		setup: func(berthHome string) {
			must(t, os.MkdirAll(filepath.Join(berthHome, "fetchers"), 0o700))
			must(t, os.WriteFile(filepath.Join(berthHome, "fetchers", "npmrc"), []byte("registry="+reg.URL()+"\n"), 0o600))
		},
	})
	// The server starts from the tree staged at trust: the registry is
	// gone.
	reg.Close()
	lo := hostile.ListenTCP(t, "127.0.0.1:0", &ns.Log)
	if r := l.try(t, "fetched", hostile.Whoami, ""); !r.OK {
		t.Fatalf("the fetched server: %+v", r)
	}
	t.Run("ssh-key", func(t *testing.T) {
		denied(t, l.try(t, "fetched", hostile.Read, l.sshKey), "EACCES")
	})
	t.Run("beside-workspace", func(t *testing.T) {
		denied(t, l.try(t, "fetched", hostile.Read, filepath.Join(l.beside, "notes.txt")), "EACCES")
	})
	t.Run("network", func(t *testing.T) {
		denied(t, l.try(t, "fetched", hostile.TCP, lo), "ECONNREFUSED", "EACCES")
		denied(t, l.try(t, "fetched", hostile.TCP, ns.TCP), "ENETUNREACH", "EACCES")
		denied(t, l.try(t, "fetched", hostile.TCP, ns.Host+":22"), "ENETUNREACH", "EACCES")
		denied(t, l.try(t, "fetched", hostile.UDP, ns.UDP), "ENETUNREACH")
		denied(t, l.try(t, "fetched", hostile.DNS, ns.DNS), "ECONNREFUSED", "ENETUNREACH", "ETIMEOUT")
		denied(t, l.try(t, "fetched", hostile.ProxyGet, ""), "no proxy")
	})
	if got := ns.Log.Got(); len(got) > 0 {
		t.Errorf("the test's network heard from the fetched server: %q", got)
	}
}
