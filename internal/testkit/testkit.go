// Package testkit is what berth's tests share: building a program of the
// module with the go command, and waiting for a condition. Only tests
// import it.
package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// GoBuild builds the packages pkgs (import paths of the build list) into
// dir, each program named after its package's last element. With Race
// (this test binary has the race detector), the programs have it too, and
// reuse the packages the test built.
func GoBuild(dir string, pkgs ...string) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("the tests build programs with the go command, which is not on PATH: %w", err)
	}
	args := []string{"build", "-o", dir + string(os.PathSeparator)}
	if Race {
		args = append(args, "-race")
	}
	out, err := exec.Command(goTool, append(args, pkgs...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build %v: %v\n%s", pkgs, err, out)
	}
	return nil
}

// Program is GoBuild of one package in a test: it fails the test when the
// build fails and returns the program's path.
func Program(t testing.TB, dir, pkg string) string {
	t.Helper()
	if err := GoBuild(dir, pkg); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, filepath.Base(pkg))
}

// Eventually polls cond every 10 ms for up to d and fails the test, naming
// what it waited for, if cond never held. Like t.Fatal, it must be called
// from the test's goroutine; elsewhere use Within.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Within(d, cond) {
		t.Fatalf("timed out after %s waiting for %s", d, what)
	}
}

// Within polls cond every 10 ms for up to d and reports whether it held.
// Eventually is Within that fails the test.
func Within(d time.Duration, cond func() bool) bool {
	return Poll(d, 10*time.Millisecond, cond)
}

// Poll is Within polling every interval, for a cond that costs more (one
// that runs a program). It is the one polling loop of the tests.
func Poll(d, interval time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(interval) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// RequireRootEnv names the variable that makes the tests needing root (and
// setpriv, to act as a second user) mandatory: set (as .ci/run sets it,
// CI runs as root), a missing root or setpriv fails the test instead of
// skipping it.
const RequireRootEnv = "BERTH_REQUIRE_ROOT"

// NeedRoot skips t, saying why it needs root, unless the process runs as
// root; under BERTH_REQUIRE_ROOT it fails t instead.
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	unavailable(t, "needs root, "+why)
}

// NeedSetpriv returns setpriv's path, or skips t (fails it under
// BERTH_REQUIRE_ROOT) when setpriv is not on PATH.
func NeedSetpriv(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("setpriv")
	if err != nil {
		unavailable(t, "needs setpriv (util-linux), to run a program as another user")
	}
	return p
}

func unavailable(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv(RequireRootEnv) != "" {
		t.Fatalf("%s; %s is set, which makes this a failure", msg, RequireRootEnv)
		return
	}
	t.Skipf("%s; set %s=1 to make this a failure", msg, RequireRootEnv)
}

// AsNobody returns a command that runs this test binary as user nobody
// (group nogroup, no supplementary groups) with args, in /, with only env
// and HOME=/nonexistent in its environment: the test's TestMain tells it
// apart by env. It skips t (fails it under BERTH_REQUIRE_ROOT) without
// root or setpriv. The binary is copied to a directory every user can
// read, removed when t ends.
func AsNobody(t testing.TB, env []string, args ...string) *exec.Cmd {
	t.Helper()
	NeedRoot(t, "to run a program as user nobody")
	setpriv := NeedSetpriv(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "berth-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "other")
	if err := os.WriteFile(prog, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, append([]string{"--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", prog}, args...)...)
	cmd.Env = append([]string{"HOME=/nonexistent"}, env...)
	cmd.Dir = "/"
	return cmd
}
