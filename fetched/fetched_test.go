package fetched

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle/runtimefetch"
)

// A resolution cut short (Ctrl-C cancels the context) says so, and gives
// none of the hints that blame a registry or a proxy.
func TestResolveInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := &runtimefetch.Fetch{Tool: "npx", Package: "@acme/notes@1.2.3", Ecosystem: runtimefetch.EcosystemNPM}
	_, err := Resolve(ctx, "notes", f, t.TempDir(), &Options{Fetchers: t.TempDir(), Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "nothing was installed") || strings.Contains(err.Error(), "registry") {
		t.Fatalf("err = %v, want interrupted, nothing was installed, no hint", err)
	}
}

// The hint of an unreachable registry names the proxy setting in effect
// and its source, never its value.
func TestNPMHintNamesProxy(t *testing.T) {
	op := &Operator{NPM: &UserSettings{File: "/home/u/.npmrc"}, Proxy: []string{"HTTPS_PROXY=http://user:pw@127.0.0.1:9"}}
	hint := npmHint([]byte("npm ERR! code ECONNREFUSED"), "https://registry.npmjs.org/", t.TempDir(), op)
	if !strings.Contains(hint, "the proxy settings in effect: HTTPS_PROXY from berth's environment") || strings.Contains(hint, "127.0.0.1:9") {
		t.Errorf("hint: %s", hint)
	}
	hint = npmHint([]byte("npm ERR! code ENOTFOUND"), "https://registry.npmjs.org/", t.TempDir(), &Operator{})
	if !strings.Contains(hint, "no proxy was set") {
		t.Errorf("hint: %s", hint)
	}
}
