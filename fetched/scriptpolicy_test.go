package fetched

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestScriptPolicyHomePrefix: the install scripts get npm's and node's
// prefix by bundle.ProgramPrefix (rule sandbox-home-prefix), never
// ~/.local or the home directory itself, and a prefix holding BERTH_HOME
// is refused (sandbox-state-readable), as pool refuses it for a server.
func TestScriptPolicyHomePrefix(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	mk := func(p string) string {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dir, work, conf := filepath.Join(root, "tree"), filepath.Join(root, "work"), filepath.Join(root, "conf")
	for _, c := range []struct {
		node, want string
		never      []string
	}{
		{filepath.Join(home, ".local", "bin", "node"), filepath.Join(home, ".local", "bin"), []string{filepath.Join(home, ".local"), home}},
		{filepath.Join(home, "bin", "node"), filepath.Join(home, "bin"), []string{home}},
		{filepath.Join(root, "usr", "bin", "node"), filepath.Join(root, "usr"), nil},
	} {
		pol, err := scriptPolicy([]string{mk(c.node)}, dir, work, conf, home, filepath.Join(root, "state"))
		if err != nil {
			t.Fatalf("node at %s: %v", c.node, err)
		}
		if !slices.Contains(pol.Exec, c.want) {
			t.Errorf("node at %s: Exec = %v, want %s", c.node, pol.Exec, c.want)
		}
		for _, n := range c.never {
			if slices.Contains(pol.Exec, n) || slices.Contains(pol.Read, n) {
				t.Errorf("node at %s: the scripts may read %s: %+v", c.node, n, pol)
			}
		}
	}
	// BERTH_HOME inside node's prefix: refused.
	node := mk(filepath.Join(root, "opt", "bin", "node"))
	_, err = scriptPolicy([]string{node}, dir, work, conf, home, filepath.Join(root, "opt", "berth"))
	if err == nil || !strings.Contains(err.Error(), "[sandbox-state-readable]") {
		t.Fatalf("BERTH_HOME inside node's prefix: %v, want [sandbox-state-readable]", err)
	}
}
