package runtimefetch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
)

// RuntimeVersionFunc returns the version of a runtime ("node" or "python")
// on this machine, such as "22.3.0", or an error when there is none.
type RuntimeVersionFunc func(ctx context.Context, runtime string) (string, error)

// CheckRuntime checks that the runtime name ("node" or "python") on this
// machine is in the version range constraint, as an imported source
// declares it. version answers the runtime's version; nil means
// HostRuntimeVersion, which asks the host's node or python3 (the programs
// a server of that kind would run; nothing of the bundle runs), once per
// process. The error says what is wrong and what to install.
func CheckRuntime(ctx context.Context, version RuntimeVersionFunc, name, constraint string) error {
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return fmt.Errorf("%s %q is not a version range; write one like \">=18.0.0\"", name, constraint)
	}
	if name != "node" && name != "python" {
		return fmt.Errorf("berth checks only the node and python runtimes, not %q", name)
	}
	f := version
	if f == nil {
		f = HostRuntimeVersion
	}
	if ctx == nil {
		ctx = context.Background()
	}
	got, err := f(ctx, name)
	if err != nil {
		return fmt.Errorf("the bundle needs %s %s, and %v; install it", name, constraint, err)
	}
	v, err := semver.NewVersion(got)
	if err != nil {
		return fmt.Errorf("the bundle needs %s %s, and this machine's %s reports the version %q, which berth cannot compare", name, constraint, name, got)
	}
	if !c.Check(v) {
		return fmt.Errorf("the bundle needs %s %s, and this machine has %s %s; install a version in that range", name, constraint, name, v)
	}
	return nil
}

var (
	hostRuntimeMu    sync.Mutex
	hostRuntimeCache = map[string]hostRuntime{}
	runtimeVersionRe = regexp.MustCompile(`v?(\d+\.\d+(\.\d+)?)`)
)

type hostRuntime struct {
	version string
	err     error
}

// HostRuntimeVersion runs "node --version" or "python3 --version" (found
// on PATH, absolute entries only) in an empty environment and returns the
// version it prints. Results are kept for the life of the process.
func HostRuntimeVersion(ctx context.Context, name string) (string, error) {
	hostRuntimeMu.Lock()
	defer hostRuntimeMu.Unlock()
	if r, ok := hostRuntimeCache[name]; ok {
		return r.version, r.err
	}
	v, err := probeRuntime(ctx, name)
	if ctx.Err() == nil {
		hostRuntimeCache[name] = hostRuntime{v, err}
	}
	return v, err
}

func probeRuntime(ctx context.Context, name string) (string, error) {
	candidates := []string{"node"}
	if name == "python" {
		candidates = []string{"python3", "python"}
	}
	for _, c := range candidates {
		prog, ok := lookAbsPath(c)
		if !ok {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		cmd := exec.CommandContext(cctx, prog, "--version")
		cmd.Env = []string{}
		cmd.Dir = os.TempDir()
		out, err := cmd.Output()
		cancel()
		if err != nil {
			return "", fmt.Errorf("%s --version failed: %v", prog, err)
		}
		m := runtimeVersionRe.FindStringSubmatch(string(out))
		if m == nil {
			return "", fmt.Errorf("%s --version printed no version", prog)
		}
		return m[1], nil
	}
	return "", fmt.Errorf("%s is not on PATH", strings.Join(candidates, " or "))
}

// lookAbsPath finds a program in the absolute entries of PATH.
func lookAbsPath(name string) (string, bool) {
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p, err := exec.LookPath(filepath.Join(dir, name))
		if err == nil {
			return p, true
		}
	}
	return "", false
}
