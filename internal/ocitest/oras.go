package ocitest

import (
	"errors"
	"fmt"
	"github.com/berth-mcp/berth/internal/peers"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// ORASVersion is the oras CLI that [BuildORAS] builds.
const ORASVersion = "v1.3.6"

var orasOnce struct {
	sync.Once
	path string
	err  error
}

// BuildORAS returns the path of the oras CLI ([ORASVersion], the module
// oras.land/oras from the Go module proxy), built with
// `go install oras.land/oras/cmd/oras@VERSION` outside this module (its
// go.mod and go.sum are not read or changed) into
// os.UserCacheDir()/berth-test/oras-VERSION, once per test binary and kept
// there for later runs. Without the go command or the cache directory, or
// when the build fails (offline, without the module proxy), the test is
// skipped, or fails when BERTH_REQUIRE_PEERS=1.
func BuildORAS(t testing.TB) string {
	t.Helper()
	orasOnce.Do(func() { orasOnce.path, orasOnce.err = buildORAS() })
	if orasOnce.err != nil {
		if miss, ok := errors.AsType[*missingTool](orasOnce.err); ok {
			peers.Unavailable(t, miss.msg)
		}
		t.Fatalf("ocitest: %v", orasOnce.err)
	}
	return orasOnce.path
}

type missingTool struct{ msg string }

func (m *missingTool) Error() string { return m.msg }

func buildORAS() (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", &missingTool{fmt.Sprintf("the oras CLI is built with the go command, which is not on PATH (%v)", err)}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", &missingTool{fmt.Sprintf("no user cache directory to build the oras CLI into (%v); set XDG_CACHE_HOME or HOME", err)}
	}
	dir := filepath.Join(cache, "berth-test", "oras-"+ORASVersion)
	bin := filepath.Join(dir, "oras")
	if out, err := exec.Command(bin, "version").Output(); err == nil && strings.Contains(string(out), strings.TrimPrefix(ORASVersion, "v")) {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// A directory of its own for each build, renamed into place, so test
	// binaries building at once do not see a half-written program.
	gobin, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(gobin)
	cmd := exec.Command(goTool, "install", "oras.land/oras/cmd/oras@"+ORASVersion)
	cmd.Dir = gobin
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOWORK=off", "CGO_ENABLED=0", "GOFLAGS="+withoutModFlag(os.Getenv("GOFLAGS")))
	if out, err := cmd.CombinedOutput(); err != nil {
		// Most often the module proxy is out of reach (offline).
		return "", &missingTool{fmt.Sprintf("the oras CLI could not be built (go install oras.land/oras/cmd/oras@%s: %v: %s); it needs the Go module proxy or a module cache holding oras.land/oras %[1]s", ORASVersion, err, tail(out))}
	}
	if err := os.Rename(filepath.Join(gobin, "oras"), bin); err != nil {
		return "", err
	}
	return bin, nil
}

// withoutModFlag drops -mod=… from GOFLAGS: it is about this module, and
// go install PKG@VERSION refuses -mod=vendor.
func withoutModFlag(flags string) string {
	var keep []string
	for _, f := range strings.Fields(flags) {
		if !strings.HasPrefix(f, "-mod=") && !strings.HasPrefix(f, "--mod=") {
			keep = append(keep, f)
		}
	}
	return strings.Join(keep, " ")
}
