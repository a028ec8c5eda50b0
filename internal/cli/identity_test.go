package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/internal/sigtest"
)

// TestTrustWithIdentitySigner trusts a bundle signed with a Sigstore
// certificate (a VirtualSigstore made in this run) through the CLI: the
// operator adds the identity with its trusted root, and a certificate for
// another SAN, or one the anchored regex only matches unanchored, is
// refused.
func TestTrustWithIdentitySigner(t *testing.T) {
	const issuer, san = "https://issuer.example.com", "release-bot@example.com"
	home := t.TempDir()
	dir := makeBundle(t, filepath.Join(t.TempDir(), "b"), "idplug", 0)
	listing := runBerth(t, home, "digest", "--listing", dir)
	vs := sigtest.NewVirtualSigstore(t)
	good := filepath.Join(t.TempDir(), "good.sigstore.json")
	os.WriteFile(good, vs.SignIdentity(t, san, issuer, []byte(listing), sigtest.IdentityOpts{}), 0o644)
	evil := filepath.Join(t.TempDir(), "evil.sigstore.json")
	os.WriteFile(evil, vs.SignIdentity(t, "evil-"+san+".attacker", issuer, []byte(listing), sigtest.IdentityOpts{}), 0o644)

	runBerth(t, home, "signers", "add-identity", "ci", "--issuer", issuer, "--san-regex", `release-bot@example\.com`, "--trusted-root", vs.RootPath)
	// The policy keeps its own copy of the trusted root.
	os.Remove(vs.RootPath)
	if out := runBerth(t, home, "signers", "list"); !strings.Contains(out, `identity "ci"`) || !strings.Contains(out, "^(?:") {
		t.Fatalf("signers list: %s", out)
	}
	cmd := berthCmd(home, nil, "trust", "--yes", "--signature", evil, dir)
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != ExitUntrusted || !strings.Contains(string(out), "SAN") {
		t.Fatalf("a certificate whose SAN only matches unanchored: exit %d (%v)\n%s", code, err, out)
	}
	out2 := runBerth(t, home, "trust", "--yes", "--signature", good, dir)
	if !strings.Contains(out2, `Signed by identity "ci"`) || !strings.Contains(out2, san) {
		t.Fatalf("trust: %s", out2)
	}
	if out := runBerth(t, home, "verify", "idplug"); !strings.HasPrefix(out, "ok ") {
		t.Fatalf("verify: %s", out)
	}
}
