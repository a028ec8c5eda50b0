package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDemo runs the demo, the README's first command, end to end: it must
// exit 0 and show every step, the approval queue and the drift refusal
// included.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example from source")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the demo needs the go command")
	}
	var out bytes.Buffer
	if code := run(context.Background(), &out, false); code != 0 {
		t.Fatalf("the demo exited %d:\n%s", code, out.String())
	}
	for _, want := range []string{
		"is a valid bundle: demo-notes 1.0.0",
		`Signed by key "example"`,
		"Enabled demo-notes@1.0.0",
		"$ berth approve ",
		"demo-notes__fmt__hash_file",
		"no longer matches what was reviewed",
		"Demo complete: every step behaved as expected.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestDemoFailsWhenAStepFails: a step that does not behave (here the build,
// with a go command that fails) ends the demo with DEMO FAILED and a
// non-zero exit code.
func TestDemoFailsWhenAStepFails(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake go command is a shell script")
	}
	bin := t.TempDir()
	fake := "#!/bin/sh\necho 'go: simulated build failure' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out bytes.Buffer
	if code := run(context.Background(), &out, false); code == 0 {
		t.Fatalf("the demo with a failing step exited 0:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "DEMO FAILED: building ./examples/notesserver") || !strings.Contains(out.String(), "simulated build failure") || strings.Contains(out.String(), "Demo complete") {
		t.Fatalf("the demo's output does not report the failed step:\n%s", out.String())
	}
}
