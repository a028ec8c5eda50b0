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
