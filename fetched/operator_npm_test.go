//go:build unix

package fetched

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/bundle/runtimefetch"
	"github.com/berth-mcp/berth/internal/testkit"
)

// A registry behind a CA of the operator's, that wants a token: with only
// ~/.npmrc's registry and token (and a strict-ssl=false berth ignores),
// the fetch fails naming cafile; with ~/.npmrc's cafile it succeeds. The
// token, expanded from ${NPM_TOKEN}, reaches npm and nothing of the
// staged tree or the lock.
func TestResolveNPMOperatorSettings(t *testing.T) {
	const token = "s3cret-npm-token-4711"
	bin := testkit.PeersBin(t)
	reg := testkit.NewNPMRegistryTLS(t, token, testPackages()...)
	home := t.TempDir()
	fetchers := filepath.Join(home, "berth", "fetchers")
	if err := os.MkdirAll(fetchers, 0o700); err != nil {
		t.Fatal(err)
	}
	// berth's own file: no retries, so that the failures below are quick.
	if err := os.WriteFile(filepath.Join(fetchers, NPMUserConfig), []byte("fetch-retries=0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(home, "corp-ca.pem")
	if err := os.WriteFile(ca, reg.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	host := registryHost(reg.URL())
	base := "registry=" + reg.URL() + "\n//" + host + "/:_authToken=${NPM_TOKEN}\nstrict-ssl=false\nnode-options=--require=/nonexistent.js\n"
	env := []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + home, "LANG=C", "TMPDIR=" + os.TempDir(), "NPM_TOKEN=" + token}
	resolve := func(npmrc string) (*Lock, string, error) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(home, ".npmrc"), []byte(npmrc), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := runtimefetch.Read("npx", []string{"-y", "@acme/hello-mcp@1.0.0"})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		l, err := Resolve(ctx, "hello", f, dir, &Options{Fetchers: fetchers, Env: env})
		return l, dir, err
	}

	_, _, err := resolve(base)
	if err == nil {
		t.Fatal("the fetch succeeded without the operator's CA (strict-ssl=false honoured?)")
	}
	for _, want := range []string{"SELF_SIGNED_CERT_IN_CHAIN", "cafile=/path/to/ca.pem in " + filepath.Join(home, ".npmrc"), "NODE_EXTRA_CA_CERTS", "registry, //" + host + "/:_authToken from "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nlacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("the error shows the token: %v", err)
	}

	l, dir, err := resolve(base + "cafile=" + ca + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if l.Registry != reg.URL() || len(l.Packages) != 2 {
		t.Errorf("lock %+v, want the packages of %s", l, reg.URL())
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), token) {
				t.Errorf("the staged tree's %s holds the registry token", p)
			}
		}
		return nil
	})

	// Without the token the registry refuses, and the error names the key.
	_, _, err = resolve("registry=" + reg.URL() + "\ncafile=" + ca + "\n")
	if err == nil || !strings.Contains(err.Error(), "//"+host+"/:_authToken=${NPM_TOKEN}") {
		t.Errorf("without a token: %v", err)
	}
}
