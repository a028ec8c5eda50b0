package pool

import "testing"

// A call asks its client during the call only on a legacy connection:
// mcpexport then runs a 2026-07-28 client's call detached (a flight), and
// on a 2026-07-28 connection it need not.
func TestAsksDuringCall(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		args := []string{"-tools", "echo"}
		if legacy {
			args = append(args, "-legacy")
		}
		f := newFixture(t)
		f.plugin("demo", map[string]any{"main": testServer(args...)})
		p := f.open(nil)
		callText(t, p, "demo__main__echo", `{"text":"x"}`)
		if got := p.AsksDuringCall("demo__main__echo"); got != legacy {
			t.Errorf("legacy server %v: AsksDuringCall = %v", legacy, got)
		}
	}
}
