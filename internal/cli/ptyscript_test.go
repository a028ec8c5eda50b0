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

// ptyScript is a shell command line running on a pseudo-terminal that
// script(1) makes, for the testscript commands that act as a person at
// a terminal (typein, watchkeys): what it shows is collected as it comes.
type ptyScript struct {
	ts    *testscript.TestScript
	name  string // the testscript command, for messages
	line  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex
	shown bytes.Buffer
	read  chan struct{} // closed when the terminal's output ended
}

// startScript starts line on a pseudo-terminal in $WORK, with the
// script's BERTH_HOME, PATH and HOME, and env added.
func startScript(ts *testscript.TestScript, name, line string, env ...string) *ptyScript {
	p := &ptyScript{ts: ts, name: name, line: line, read: make(chan struct{})}
	p.cmd = exec.Command("script", "-qec", line, "/dev/null")
	p.cmd.Dir = ts.Getenv("WORK")
	p.cmd.Env = append(append(p.cmd.Environ(), "BERTH_HOME="+ts.Getenv("BERTH_HOME"), "PATH="+ts.Getenv("PATH"), "HOME="+ts.Getenv("HOME")), env...)
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		ts.Fatalf("%s: %v", name, err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		ts.Fatalf("%s: %v", name, err)
	}
	if err := p.cmd.Start(); err != nil {
		ts.Fatalf("%s: %v", name, err)
	}
	go func() {
		defer close(p.read)
		buf := make([]byte, 4096)
		for {
			n, err := stdout.Read(buf)
			p.mu.Lock()
			p.shown.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return p
}

// waitFor waits until want is on the terminal at or after byte from of
// what it showed, and returns where it ends; when it never shows, the
// command is killed and the script fails with what the terminal showed.
func (p *ptyScript) waitFor(want string, from int) int {
	at := -1
	if !testkit.Within(30*time.Second, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		at = strings.Index(p.shown.String()[from:], want)
		return at >= 0
	}) {
		p.cmd.Process.Kill()
		<-p.read
		p.ts.Fatalf("%s: %q never showed; the terminal showed:\n%s", p.name, want, p.shown.String())
	}
	return from + at + len(want)
}

// send types s on the terminal.
func (p *ptyScript) send(s string) { io.WriteString(p.stdin, s) }

// finish waits for the command to end, prints everything the terminal
// showed, and fails the script when the command failed.
func (p *ptyScript) finish() {
	<-p.read
	err := p.cmd.Wait()
	p.stdin.Close()
	p.mu.Lock()
	p.ts.Stdout().Write(p.shown.Bytes())
	p.mu.Unlock()
	if err != nil {
		p.ts.Fatalf("%s: %s: %v", p.name, p.line, err)
	}
}
