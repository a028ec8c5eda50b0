package pool

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestGitReadOnly: the default profile's writable workspace keeps its .git
// read-only (the launcher's mount namespace); no .git, nothing.
func TestGitReadOnly(t *testing.T) {
	f := newPolicyFixture(t)
	p, err := buildPolicy(f.input(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.ReadOnly) != 0 {
		t.Fatalf("read-only %v without a .git", p.ReadOnly)
	}
	git := filepath.Join(f.ws, ".git")
	if err := os.Mkdir(git, 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err = buildPolicy(f.input(nil)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.ReadOnly, []string{git}) {
		t.Fatalf("read-only %v, want [%s]", p.ReadOnly, git)
	}
}
