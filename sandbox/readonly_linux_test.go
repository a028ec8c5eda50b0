package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadOnlyInsideWrite: the workspace is writable, its .git is a
// ReadOnly path: the server writes the workspace but neither plants a hook
// nor changes .git/config (the operator's git would run them unconfined),
// and the host's own view of .git stays writable.
func TestReadOnlyInsideWrite(t *testing.T) {
	needLandlock(t, 1)
	needNamespaces(t)
	w := newWorld(t)
	git := filepath.Join(w.ws, ".git")
	if err := os.MkdirAll(filepath.Join(git, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(git, "config")
	if err := os.WriteFile(config, []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := w.policy()
	p.ReadOnly = []string{git}
	hook := filepath.Join(git, "hooks", "pre-commit")
	attack(t, p, "write", hook)
	attack(t, p, "write", config)
	if out, ok := run(t, p, "write", filepath.Join(w.ws, "notes")); !ok {
		t.Fatalf("the rest of the workspace is not writable: %s", out)
	}
	if out, ok := run(t, p, "read", config); !ok {
		t.Fatalf("the read-only .git is not readable: %s", out)
	}
	for _, p := range []*Policy{p, {Exec: p.Exec, Write: p.Write, ReadOnly: p.ReadOnly, Network: NetworkNone}} {
		l, err := Wrap(exec.Command(probePath()), p, nil)
		if err != nil {
			t.Fatal(err)
		}
		l.closeAll()
		if e := l.Enforcement; !e.MountNamespace || len(e.ReadOnly) != 1 || e.NetworkNamespace != (p.Network == NetworkNone) {
			t.Fatalf("enforcement: %+v", e)
		}
	}
	// the binds stay in the server's namespace
	if err := os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatalf("berth's own view of %s became read-only: %v", hook, err)
	}
	// with the network limited too (user, network and mount namespaces)
	p.Network = NetworkNone
	attack(t, p, "write", config)
}

// TestReadOnlyNotEnforced: without user namespaces the read-only paths
// are listed as not enforced.
func TestReadOnlyNotEnforced(t *testing.T) {
	p := &Policy{Write: []string{"/w"}, ReadOnly: []string{"/w/.git"}, Network: NetworkOpen}
	e, err := enforcement(p, &Support{OS: "linux", LandlockABI: 7, Seccomp: true}, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e.MountNamespace || len(e.NotEnforced) == 0 || !strings.Contains(strings.Join(e.NotEnforced, ";"), "read-only /w/.git") {
		t.Fatalf("enforcement: %+v", e)
	}
	if _, err := enforcement(p, &Support{OS: "linux", LandlockABI: 7, Seccomp: true}, &Options{Require: true}); err == nil {
		t.Fatal("Require accepted read-only paths it cannot enforce")
	}
}
