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

// TestAddIdentityWritesNothingWhenRefused: a refused add-identity leaves
// the policy as it was: it never replaces the trusted root that an
// existing signer of the same name uses, and a name that is not a signer
// name never becomes a path.
func TestAddIdentityWritesNothingWhenRefused(t *testing.T) {
	const issuer, san = "https://issuer.example.com", "release-bot@example.com"
	base := t.TempDir()
	home := filepath.Join(base, "home")
	dir := makeBundle(t, filepath.Join(t.TempDir(), "b"), "idplug", 0)
	listing := runBerth(t, home, "digest", "--listing", dir)
	vs, other := sigtest.NewVirtualSigstore(t), sigtest.NewVirtualSigstore(t)
	sig := filepath.Join(t.TempDir(), "good.sigstore.json")
	os.WriteFile(sig, vs.SignIdentity(t, san, issuer, []byte(listing), sigtest.IdentityOpts{}), 0o644)

	runBerth(t, home, "signers", "add-identity", "ci", "--issuer", issuer, "--san", san, "--trusted-root", vs.RootPath)
	cmd := berthCmd(home, nil, "signers", "add-identity", "ci", "--issuer", issuer, "--san", san, "--trusted-root", other.RootPath)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "exists already") {
		t.Fatalf("adding ci twice: %v\n%s", err, out)
	}
	if out := runBerth(t, home, "trust", "--yes", "--signature", sig, dir); !strings.Contains(out, `Signed by identity "ci"`) {
		t.Fatalf("the refused add-identity changed the trusted root of ci: %s", out)
	}

	victim := filepath.Join(base, "victim.trusted_root.json")
	os.WriteFile(victim, []byte("keep me"), 0o644)
	cmd = berthCmd(home, nil, "signers", "add-identity", "../../victim", "--issuer", issuer, "--san", san, "--trusted-root", other.RootPath)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "does not match") {
		t.Fatalf("a signer name with a path: %v\n%s", err, out)
	}
	if data, err := os.ReadFile(victim); err != nil || string(data) != "keep me" {
		t.Fatalf("a file outside BERTH_HOME was replaced or removed: %q %v", data, err)
	}
}
