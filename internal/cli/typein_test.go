package cli

import (
	"bytes"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/berth-mcp/berth/internal/testkit"
)

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
	cmd := exec.Command("script", "-qec", line, "/dev/null")
	cmd.Dir = ts.Getenv("WORK")
	cmd.Env = append(cmd.Environ(), "BERTH_HOME="+ts.Getenv("BERTH_HOME"), "PATH="+ts.Getenv("PATH"), "HOME="+ts.Getenv("HOME"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		ts.Fatalf("typein: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		ts.Fatalf("typein: %v", err)
	}
	if err := cmd.Start(); err != nil {
		ts.Fatalf("typein: %v", err)
	}
	var mu sync.Mutex
	var shown bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := stdout.Read(buf)
			mu.Lock()
			shown.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	seen := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(shown.String(), prompt)
	}
	if !testkit.Within(30*time.Second, seen) {
		cmd.Process.Kill()
		<-read
		ts.Fatalf("typein: %q never showed; the terminal showed:\n%s", prompt, shown.String())
	}
	io.WriteString(stdin, text+"\n")
	<-read
	err = cmd.Wait()
	stdin.Close()
	mu.Lock()
	ts.Stdout().Write(shown.Bytes())
	mu.Unlock()
	if err != nil {
		ts.Fatalf("typein: %s: %v", line, err)
	}
}
