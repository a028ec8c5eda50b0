//go:build unix

package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/berth-mcp/berth/internal/testkit"
)

// nobody is the second OS user of these tests.
const nobody = 65534

// asNobody runs a command as the user nobody (the tests run as root).
func asNobody(t *testing.T, args ...string) {
	t.Helper()
	full := append([]string{"--reuid", "65534", "--regid", "65534", "--clear-groups", "--"}, args...)
	if out, err := exec.Command("setpriv", full...).CombinedOutput(); err != nil {
		t.Fatalf("setpriv %v: %v\n%s", args, err, out)
	}
}

func needRoot(t *testing.T) {
	t.Helper()
	testkit.NeedRoot(t, "to act as a second user")
	testkit.NeedSetpriv(t)
}

// berthFails runs berth and requires it to fail with every want in its
// output.
func berthFails(t *testing.T, home string, wants []string, args ...string) {
	t.Helper()
	out, err := berthCmd(home, nil, args...).CombinedOutput()
	if err == nil {
		t.Fatalf("berth %s ran in an unsafe BERTH_HOME:\n%s", strings.Join(args, " "), out)
	}
	for _, w := range wants {
		if !strings.Contains(string(out), w) {
			t.Errorf("berth %s: output lacks %q:\n%s", strings.Join(args, " "), w, out)
		}
	}
}

// TestStateDirIsTheOperatorsAlone: berth refuses a BERTH_HOME, approvals/,
// logs/ or audit.log that another user owns or may write, and a symbolic
// link another user planted for audit.log, saying how to fix it; it never
// writes through the link.
func TestStateDirIsTheOperatorsAlone(t *testing.T) {
	needRoot(t)
	base := t.TempDir()
	os.Chmod(filepath.Dir(base), 0o755) // t.TempDir makes both 0700
	os.Chmod(base, 0o755)

	t.Run("owned by another user", func(t *testing.T) {
		home := filepath.Join(base, "theirs")
		os.Mkdir(home, 0o700)
		if err := os.Chown(home, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"list"}, {"policy", "list"}, {"approvals"}, {"status"}} {
			berthFails(t, home, []string{"berth refuses to use " + home, "belongs to user nobody (uid 65534)", "chown -R 0 " + home, "or set BERTH_HOME to a directory of your own"}, args...)
		}
	})

	t.Run("world-writable", func(t *testing.T) {
		home := filepath.Join(base, "open")
		os.Mkdir(home, 0o700)
		os.Chmod(home, 0o777)
		berthFails(t, home, []string{"writable by group and others (mode 0777)", "chmod 700 " + home}, "list")
		os.Chmod(home, 0o700)
		os.Mkdir(filepath.Join(home, "logs"), 0o700)
		os.Chmod(filepath.Join(home, "logs"), 0o770)
		berthFails(t, home, []string{"logs: it is writable by its group (mode 0770)", "chmod 700 " + filepath.Join(home, "logs")}, "status")
		os.Chmod(filepath.Join(home, "logs"), 0o700)
		os.WriteFile(filepath.Join(home, "audit.log"), nil, 0o600)
		os.Chmod(filepath.Join(home, "audit.log"), 0o602)
		berthFails(t, home, []string{"audit.log: it is writable by others (mode 0602)", "chmod 600"}, "list")
	})

	t.Run("an attacker's symlink for audit.log", func(t *testing.T) {
		victim := filepath.Join(base, "victim")
		os.WriteFile(victim, []byte("the operator's file\n"), 0o600)
		// Another user prepared the directory the operator then points
		// BERTH_HOME at, with audit.log leading to the operator's file.
		shared := filepath.Join(base, "shared")
		os.Mkdir(shared, 0o777)
		os.Chmod(shared, 0o1777)
		home := filepath.Join(shared, "berth")
		asNobody(t, "mkdir", "-m", "0777", home)
		asNobody(t, "ln", "-s", victim, filepath.Join(home, "audit.log"))
		asNobody(t, "mkdir", "-m", "0777", filepath.Join(home, "approvals"))
		berthFails(t, home, []string{"berth refuses to use " + home, "belongs to user nobody"}, "list")
		// Even in a directory that passes, berth never follows the link.
		if err := exec.Command("chown", "-R", "-h", "0:0", home).Run(); err != nil {
			t.Fatal(err)
		}
		os.Chmod(home, 0o700)
		os.Chmod(filepath.Join(home, "approvals"), 0o700)
		berthFails(t, home, []string{filepath.Join(home, "audit.log") + ": it is a symbolic link (to " + victim + ")", "rm " + filepath.Join(home, "audit.log")}, "list")
		if data, _ := os.ReadFile(victim); string(data) != "the operator's file\n" {
			t.Fatalf("the link's target was written: %q", data)
		}
	})

	t.Run("created private", func(t *testing.T) {
		home := filepath.Join(base, "fresh", "berth")
		key := filepath.Join(t.TempDir(), "k")
		runBerth(t, home, "keygen", "--out", key)
		runBerth(t, home, "signers", "add-key", "k", key+".pub")
		for _, p := range []string{home, filepath.Join(home, "config.json"), filepath.Join(home, "state.json")} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			want := os.FileMode(0o600)
			if fi.IsDir() {
				want = 0o700
			}
			if fi.Mode().Perm() != want {
				t.Errorf("%s has mode %v, want %v", p, fi.Mode().Perm(), want)
			}
		}
	})
}

// TestWriteJSONEscapesInvisible: --json output holds no raw character a
// terminal acts on or hides (DEL, C1, bidi overrides, zero-width and
// astral format characters), and decodes to the same text.
func TestWriteJSONEscapesInvisible(t *testing.T) {
	in := map[string]string{"s": "a\x7fb\u0085c\u009b[2Jd\u202ee\u200bf\U000e0041g ü 日本 ✓ 😀"}
	var buf bytes.Buffer
	if err := writeJSON(&buf, in); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, r := range out {
		if r != ' ' && r != '\n' && !unicode.IsPrint(r) {
			t.Errorf("raw %U in %q", r, out)
		}
	}
	for _, esc := range []string{`\u007f`, `\u0085`, `\u009b`, `\u202e`, `\u200b`, `\udb40\udc41`} {
		if !strings.Contains(out, esc) {
			t.Errorf("%s is missing from %s", esc, out)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back["s"] != in["s"] {
		t.Fatalf("decoded %q (%v), want %q", back["s"], err, in["s"])
	}
}
