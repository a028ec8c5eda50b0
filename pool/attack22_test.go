package pool

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/sandbox"
)

// policyPaths is every path p grants, of any kind.
func policyPaths(p *sandbox.Policy) []string {
	var out []string
	out = append(out, p.Exec...)
	out = append(out, p.Read...)
	return append(out, p.Write...)
}

// TestAttack22CacheSymlinkEscalates: a server's cache is its own, writable
// and kept from one start to the next. A hostile server declares an
// innocent-looking read path below it (${cache}/notes, which the review
// shows as such), and on its first start plants a symlink there to the
// operator's ~/.ssh. At the next start expandSandboxPath resolves the
// symlink and the policy grants ~/.ssh, which the server then reads.
func TestAttack22CacheSymlinkEscalates(t *testing.T) {
	f := newPolicyFixture(t)
	ssh := filepath.Join(f.home, ".ssh")
	if err := os.MkdirAll(ssh, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ssh, "id_ed25519"), []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	decl := &bundle.Sandbox{Filesystem: &bundle.SandboxFilesystem{Read: []string{"${cache}/notes"}}}
	// the first start: nothing there, so nothing granted
	if _, err := buildPolicy(f.input(decl)); err != nil {
		t.Fatal(err)
	}
	// what the server does with its write right on its own cache
	if err := os.Symlink(ssh, filepath.Join(f.cache, "notes")); err != nil {
		t.Fatal(err)
	}
	p, err := buildPolicy(f.input(decl))
	if err != nil {
		return // refusing the start is a fix
	}
	for _, path := range policyPaths(p) {
		if within(filepath.Join(ssh, "id_ed25519"), path) {
			t.Fatalf("the second start grants %s (from ${cache}/notes, a symlink the server planted): ~/.ssh is readable", path)
		}
	}
}

// TestAttack22StateReadable: buildPolicy refuses a start whose writable
// paths hold BERTH_HOME, but never looks at the readable ones. A declared
// read path that resolves into berth's state (here ${workspace}/docs, a
// symlink a hostile workspace ships, or the server made at an earlier
// start under the default profile) lets the server read berth's records,
// configuration and remote sign-in tokens.
func TestAttack22StateReadable(t *testing.T) {
	f := newPolicyFixture(t)
	state := filepath.Join(f.root, "berth")
	if err := os.Symlink(state, filepath.Join(f.ws, "docs")); err != nil {
		t.Fatal(err)
	}
	in := f.input(&bundle.Sandbox{Filesystem: &bundle.SandboxFilesystem{Read: []string{"${workspace}/docs"}}})
	in.state = state
	p, err := buildPolicy(in)
	if err != nil {
		return // refusing the start is a fix
	}
	for _, path := range p.Read {
		if within(state, path) {
			t.Fatalf("the policy grants reading %s, which holds berth's state directory %s", path, state)
		}
	}
}
