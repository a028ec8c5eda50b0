// Package keyringtest starts a private Secret Service for tests of the
// keychain path of berth's secret store: a D-Bus session bus of its own
// (dbus-daemon) and gnome-keyring-daemon on it, with a new login keyring
// in a temporary home. Tests never touch the keychain of the person
// running them.
//
// Where the programs are missing (macOS, Windows, a Linux without the
// Debian packages dbus and gnome-keyring), Start skips the test with the
// reason, unless BERTH_REQUIRE_KEYRING=1 is set (as .ci/run does): then it
// fails.
package keyringtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// RequireEnv makes a missing Secret Service a test failure.
const RequireEnv = "BERTH_REQUIRE_KEYRING"

// SkipPrefix starts the message of every skip, so that the summary of
// make test can count these tests with the real-peer ones.
const SkipPrefix = "real-peer: "

// Service is a running private Secret Service.
type Service struct {
	// Env holds the variables that point a program at the service:
	// DBUS_SESSION_BUS_ADDRESS, and HOME and the XDG directories of the
	// temporary home.
	Env []string
	// Address is the session bus address.
	Address string
}

// Start starts a private Secret Service for t and stops it at the end of
// the test. See the package doc for when it skips.
func Start(t testing.TB) *Service {
	t.Helper()
	s, err := start(t)
	if err != nil {
		Unavailable(t, err.Error())
	}
	return s
}

// Unavailable skips t (or fails it, under BERTH_REQUIRE_KEYRING=1) because
// no Secret Service can run: why says what is missing.
func Unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("no Secret Service for the keychain tests, and %s=1 requires one: %s", RequireEnv, why)
	}
	t.Skipf("%sno Secret Service for the keychain tests: %s (install the Debian packages dbus and gnome-keyring; CI sets %s=1 to fail instead)", SkipPrefix, why, RequireEnv)
}

func start(t testing.TB) (*Service, error) {
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("the private service runs on Linux only, and berth's tests never use the keychain of %s", runtime.GOOS)
	}
	dbusDaemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		return nil, fmt.Errorf("dbus-daemon is not on PATH")
	}
	gkd, err := exec.LookPath("gnome-keyring-daemon")
	if err != nil {
		return nil, fmt.Errorf("gnome-keyring-daemon is not on PATH")
	}
	// Short paths: a unix socket path has a small limit.
	home, err := os.MkdirTemp("", "berth-kr-")
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	runtimeDir := filepath.Join(home, "run")
	if err := os.Mkdir(runtimeDir, 0o700); err != nil {
		return nil, err
	}
	env := []string{
		"HOME=" + home,
		"XDG_RUNTIME_DIR=" + runtimeDir,
		"XDG_DATA_HOME=" + filepath.Join(home, "data"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, "cache"),
	}
	bus := exec.Command(dbusDaemon, "--session", "--nofork", "--nopidfile", "--print-address=1", "--address=unix:path="+filepath.Join(runtimeDir, "bus"))
	bus.Env = append(minimalEnv(), env...)
	out, err := bus.StdoutPipe()
	if err != nil {
		return nil, err
	}
	bus.Stderr = nil
	if err := bus.Start(); err != nil {
		return nil, fmt.Errorf("starting dbus-daemon: %v", err)
	}
	t.Cleanup(func() {
		bus.Process.Kill()
		bus.Wait()
	})
	addrCh := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		addrCh <- strings.TrimSpace(line)
	}()
	var addr string
	select {
	case addr = <-addrCh:
	case <-time.After(10 * time.Second):
		return nil, fmt.Errorf("dbus-daemon printed no address within 10s")
	}
	if addr == "" {
		return nil, fmt.Errorf("dbus-daemon exited without an address")
	}
	env = append(env, "DBUS_SESSION_BUS_ADDRESS="+addr)
	// --unlock reads the password of a new login keyring from stdin.
	kr := exec.Command(gkd, "--foreground", "--unlock", "--components=secrets")
	kr.Env = append(minimalEnv(), env...)
	kr.Stdin = strings.NewReader("berth-test-keyring")
	var krOut strings.Builder
	kr.Stdout, kr.Stderr = &krOut, &krOut
	if err := kr.Start(); err != nil {
		return nil, fmt.Errorf("starting gnome-keyring-daemon: %v", err)
	}
	exited := make(chan struct{})
	go func() { kr.Wait(); close(exited) }()
	t.Cleanup(func() {
		kr.Process.Kill()
		<-exited
	})
	if err := waitForName(addr, "org.freedesktop.secrets", exited); err != nil {
		return nil, fmt.Errorf("gnome-keyring-daemon: %v: %s", err, strings.TrimSpace(krOut.String()))
	}
	return &Service{Env: env, Address: addr}, nil
}

// minimalEnv is PATH and LANG of the test process.
func minimalEnv() []string {
	var out []string
	for _, k := range []string{"PATH", "LANG"} {
		if v, ok := os.LookupEnv(k); ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// waitForName waits until name has an owner on the bus at addr.
func waitForName(addr, name string, exited <-chan struct{}) error {
	conn, err := dbus.Connect(addr)
	if err != nil {
		return fmt.Errorf("connecting to the test bus: %v", err)
	}
	defer conn.Close()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var has bool
		if err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, name).Store(&has); err == nil && has {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("it exited before it registered %s", name)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not appear on the test bus within 20s", name)
}
