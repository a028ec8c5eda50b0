package cli

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDemo runs `berth demo`, the README's first command, end to end: it
// must exit 0 and show every step, the approval queue and the drift
// refusal included.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example from source")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the demo needs the go command")
	}
	cmd := exec.Command("berth", "demo")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("berth demo: %v\n%s", err, out)
	}
	for _, want := range []string{
		"is a valid bundle: demo-notes 1.0.0",
		`Signed by key "example"`,
		"Enabled demo-notes@1.0.0",
		"$ berth approve ",
		"demo-notes__hash_file",
		"no longer matches what was reviewed",
		"Demo complete: every step behaved as expected.",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out)
		}
	}
}
