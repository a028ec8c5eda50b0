package cli

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// catalogHomes makes a curator's catalog of one signed plugin "crashy" and
// an operator's home that added it; it returns the operator's home, the
// catalog and the curator's key directory and home.
func catalogHomes(t *testing.T) (home, repo, keys, curator string) {
	t.Helper()
	dir := t.TempDir()
	curator, home = filepath.Join(dir, "curator"), filepath.Join(dir, "home")
	repo, keys = filepath.Join(dir, "repo"), filepath.Join(dir, "keys")
	b := makeBundle(t, filepath.Join(dir, "b"), "crashy", 50)
	runBerth(t, curator, "catalog", "init", repo, "--keys", keys, "--name", "acme")
	runBerth(t, curator, "keygen", "--out", filepath.Join(dir, "k"))
	runBerth(t, curator, "sign", b, "--key", filepath.Join(dir, "k.key"))
	runBerth(t, curator, "signers", "add-key", "k", filepath.Join(dir, "k.pub"))
	runBerth(t, curator, "catalog", "add", repo, b, "--keys", keys)
	runBerth(t, home, "marketplace", "add", "acme", repo, "--root", filepath.Join(repo, "1.root.json"))
	return home, repo, keys, curator
}

func wantKilled(t *testing.T, err error, step string) {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("berth was not killed at %s: %v", step, err)
	}
}

// An install killed at any step, the scoped signer's addition included,
// leaves a consistent state, and running it again finishes it.
func TestCrashDuringInstall(t *testing.T) {
	for _, step := range []string{"signer-added", "stage-renamed", "signature-written", "record-written", "generation-bumped"} {
		t.Run(step, func(t *testing.T) {
			home, _, _, _ := catalogHomes(t)
			ws := t.TempDir()
			wantKilled(t, berthCmd(home, []string{crashEnv + "=" + step}, "install", "crashy", "--enable", "--workspace", ws, "--yes").Run(), step)
			checkConsistent(t, home)
			runBerth(t, home, "install", "crashy", "--enable", "--workspace", ws, "--yes")
			checkConsistent(t, home)
			if out := runBerth(t, home, "verify", "crashy"); !strings.HasPrefix(out, "ok ") {
				t.Fatalf("verify after recovery: %s", out)
			}
			if out := runBerth(t, home, "signers", "list"); strings.Count(out, "for plugin crashy only") != 1 {
				t.Fatalf("signers after recovery:\n%s", out)
			}
		})
	}
}

// A revocation killed between disabling and recording it leaves the
// plugin stopped; the next update records it, and verify fails for it.
func TestCrashDuringRevocation(t *testing.T) {
	for _, step := range []string{"revoked-disabled", "revocation-written"} {
		t.Run(step, func(t *testing.T) {
			home, repo, keys, curator := catalogHomes(t)
			ws := t.TempDir()
			runBerth(t, home, "install", "crashy", "--enable", "--workspace", ws, "--yes")
			runBerth(t, curator, "catalog", "status", repo, "crashy@1.4.2", "revoked", "--keys", keys, "--reason", "bad")
			wantKilled(t, berthCmd(home, []string{crashEnv + "=" + step}, "marketplace", "update").Run(), step)
			if out := runBerth(t, home, "status", "--workspace", ws); !strings.Contains(out, "Nothing is enabled") {
				t.Fatalf("still enabled after a revocation cut short:\n%s", out)
			}
			runBerth(t, home, "marketplace", "update")
			out, err := berthCmd(home, nil, "verify", "crashy").CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != ExitUntrusted || !strings.Contains(string(out), "revoked by catalog acme") {
				t.Fatalf("verify after the revocation: %v\n%s", err, out)
			}
		})
	}
}
