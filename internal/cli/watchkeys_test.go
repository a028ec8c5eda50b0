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

// watchkeysCmd: watchkeys COMMAND [SHOWN KEY]... runs COMMAND (a shell
// command line) on a pseudo-terminal that script(1) makes and, for each
// pair, waits until SHOWN is on the terminal (after what the last pair
// waited for) and then presses KEY, one key without Enter, as a person
// would in a one-key loop; then it waits for COMMAND to end and prints
// everything the terminal showed. KEY is one character, or ^C.
func watchkeysCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args)%2 != 1 {
		ts.Fatalf("usage: watchkeys COMMAND [SHOWN KEY]...")
	}
	cmd := exec.Command("script", "-qec", args[0], "/dev/null")
	cmd.Dir = ts.Getenv("WORK")
	cmd.Env = append(cmd.Environ(), "BERTH_HOME="+ts.Getenv("BERTH_HOME"), "PATH="+ts.Getenv("PATH"), "HOME="+ts.Getenv("HOME"), "USER=watcher")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		ts.Fatalf("watchkeys: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		ts.Fatalf("watchkeys: %v", err)
	}
	if err := cmd.Start(); err != nil {
		ts.Fatalf("watchkeys: %v", err)
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
	from := 0
	for i := 1; i < len(args); i += 2 {
		want, key := args[i], args[i+1]
		at := -1
		if !testkit.Within(30*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			at = strings.Index(shown.String()[from:], want)
			return at >= 0
		}) {
			cmd.Process.Kill()
			<-read
			ts.Fatalf("watchkeys: %q never showed; the terminal showed:\n%s", want, shown.String())
		}
		from += at + len(want)
		if key == "^C" {
			key = "\x03"
		}
		io.WriteString(stdin, key)
	}
	<-read
	err = cmd.Wait()
	stdin.Close()
	mu.Lock()
	ts.Stdout().Write(shown.Bytes())
	mu.Unlock()
	if err != nil {
		ts.Fatalf("watchkeys: %s: %v", args[0], err)
	}
}
