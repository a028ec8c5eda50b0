package cli

import (
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// interruptCmd is the testscript command
//
//	interrupt PROMPT COMMAND
//
// which runs COMMAND on a pseudo-terminal (with the script's TMPDIR), waits
// for PROMPT, then types Ctrl-C as a person would, and waits for the
// command to end: it fails when the command does not end within 30 s
// (a prompt that ignores the interrupt). What the terminal showed is the
// command's stdout; the command's own exit status is not judged.
func interruptCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: interrupt PROMPT COMMAND")
	}
	p := startScript(ts, "interrupt", args[1], "TMPDIR="+ts.Getenv("TMPDIR"))
	p.waitFor(args[0], 0)
	p.send("\x03")
	select {
	case <-p.read:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.read
		ts.Fatalf("interrupt: %s did not end within 30s of Ctrl-C; the terminal showed:\n%s", args[1], p.shown.String())
	}
	p.cmd.Wait()
	p.stdin.Close()
	p.mu.Lock()
	ts.Stdout().Write(p.shown.Bytes())
	p.mu.Unlock()
}
