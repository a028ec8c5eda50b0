package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/internal/testkit"
)

// TestConnectWarnsOfGoRun builds berth with `go run`, twice: the first run
// may build in a temporary directory, the second runs the binary that the
// go command keeps in its build cache (<GOCACHE>/xx/<hash>-d/berth). Both
// are gone sooner or later, and connect must say so each time.
func TestConnectWarnsOfGoRun(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// The runs get a HOME of their own, but keep this go command's caches:
	// with a fresh HOME the go command would default to an empty build and
	// module cache, and rebuild (and download) everything twice.
	goEnv, err := exec.Command(goTool, "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		t.Fatal(err)
	}
	caches := strings.Fields(string(goEnv))
	if len(caches) != 3 {
		t.Fatalf("go env GOCACHE GOMODCACHE GOPATH: %q", goEnv)
	}
	home, ws := t.TempDir(), t.TempDir()
	args := []string{"run"}
	if testkit.Race {
		args = append(args, "-race") // reuses the packages this test built
	}
	args = append(args, "./cmd/berth", "connect", "cursor", "--print", "--no-path", "--workspace", ws)
	cacheLayout := regexp.MustCompile(`warning: \S+/[0-9a-f]{2}/[0-9a-f]{64}-d/berth is a temporary build \(go run\)`)
	sawCache := false
	for i := range 2 {
		cmd := exec.Command(goTool, args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "HOME="+home, "BERTH_HOME="+filepath.Join(home, "berth"), "GORACE=atexit_sleep_ms=0",
			"GOCACHE="+caches[0], "GOMODCACHE="+caches[1], "GOPATH="+caches[2])
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go run (%d): %v\n%s", i+1, err, out)
		}
		if !strings.Contains(string(out), "is a temporary build (go run) that disappears") {
			t.Fatalf("go run (%d): no warning of a temporary build:\n%s", i+1, out)
		}
		sawCache = sawCache || cacheLayout.Match(out)
	}
	if !sawCache {
		t.Fatal("neither run executed berth from the build cache (<GOCACHE>/xx/<hash>-d/berth); the go command's layout changed: update goRunCache")
	}
}
