package cli

import "github.com/rogpeppe/go-internal/testscript"

// typeinCmd: typein PROMPT TEXT COMMAND runs COMMAND (a shell command
// line) on a pseudo-terminal that script(1) makes, waits until PROMPT is on
// the terminal, then types TEXT and Enter, as a person would, and prints
// everything the terminal showed. Typing only after the prompt shows makes
// the test exact: what a terminal echoes, it echoes when the text arrives.
func typeinCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: typein PROMPT TEXT COMMAND")
	}
	prompt, text, line := args[0], args[1], args[2]
	p := startScript(ts, "typein", line)
	p.waitFor(prompt, 0)
	p.send(text + "\n")
	p.finish()
}
