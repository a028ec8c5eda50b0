package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/internal/testkit"
)

// probeDir holds the hostile test program sandbox/internal/probe, built once.
var probeDir string

func TestMain(m *testing.M) {
	Main()
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "berth-sandbox-probe-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := testkit.GoBuild(dir, "github.com/berth-mcp/berth/sandbox/internal/probe"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	probeDir = dir
	return m.Run()
}

func probePath() string { return filepath.Join(probeDir, "probe") }

// world is one test's files: a workspace the policy may write, a secret
// beside it, and the probe's own directory as the exec path.
type world struct {
	ws, secret string
}

func newWorld(t *testing.T) *world {
	root := t.TempDir()
	w := &world{ws: filepath.Join(root, "ws"), secret: filepath.Join(root, "secret")}
	for _, d := range []string{w.ws, w.secret} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(w.secret, "id_ed25519"), []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) policy() *Policy {
	return &Policy{Exec: []string{probeDir}, Write: []string{w.ws}, Network: NetworkOpen}
}

// run starts the probe with args under p (nil: unconfined) and returns its
// output and whether it said ok.
func run(t *testing.T, p *Policy, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(probePath(), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if p != nil {
		l, err := Wrap(cmd, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := l.Started(cmd.Start())
		if err != nil {
			_ = cmd.Wait()
			t.Fatalf("start: %v", err)
		}
		if ln != nil {
			defer ln.Close()
		}
	} else if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	s := strings.TrimSpace(out.String())
	return s, err == nil && strings.HasSuffix(s, "ok")
}

func TestSmoke(t *testing.T) {
	w := newWorld(t)
	key := filepath.Join(w.secret, "id_ed25519")
	if out, ok := run(t, nil, "read", key); !ok {
		t.Fatalf("unconfined read failed: %s", out)
	}
	out, ok := run(t, w.policy(), "read", key)
	t.Logf("confined: %s", out)
	if ok {
		t.Fatal("confined read worked")
	}
	out, ok = run(t, w.policy(), "write", filepath.Join(w.ws, "f"))
	if !ok {
		t.Fatal(out)
	}
}
