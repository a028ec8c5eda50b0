package clientconfig

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Running reports whether client c appears to be running on the machine
// env describes: on Linux by the names in /proc (Env.ProcDir), on macOS
// with pgrep, on Windows with tasklist. It is best effort: any failure, or
// an env for another OS than the running one, reports false.
func Running(ctx context.Context, c Client, env Env) bool {
	goos := env.goos()
	if env.ProcDir != "" || goos == "linux" {
		dir := env.ProcDir
		if dir == "" {
			dir = "/proc"
		}
		return runningProc(dir, c)
	}
	if goos != runtime.GOOS {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	switch goos {
	case "darwin":
		for _, args := range pgrepArgs[c] {
			// pgrep exits 0 when a process matches.
			if exec.CommandContext(ctx, "pgrep", args...).Run() == nil {
				return true
			}
		}
	case "windows":
		image := windowsImage[c]
		out, err := exec.CommandContext(ctx, "tasklist", "/NH", "/FO", "CSV", "/FI", "IMAGENAME eq "+image).Output()
		return err == nil && bytes.Contains(bytes.ToLower(out), []byte(`"`+strings.ToLower(image)+`"`))
	}
	return false
}

var pgrepArgs = map[Client][][]string{
	ClaudeDesktop: {{"-x", "Claude"}},
	ClaudeCode:    {{"-x", "claude"}},
	Cursor:        {{"-x", "Cursor"}},
	VSCode:        {{"-x", "Code"}, {"-f", "Visual Studio Code.app/Contents/MacOS/"}},
}

var windowsImage = map[Client]string{
	ClaudeDesktop: "Claude.exe",
	ClaudeCode:    "claude.exe",
	Cursor:        "Cursor.exe",
	VSCode:        "Code.exe",
}

// runningProc scans a Linux /proc for a process of client c, other than
// this one.
func runningProc(dir string, c Client) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join(dir, e.Name(), "comm"))
		cmdline, _ := os.ReadFile(filepath.Join(dir, e.Name(), "cmdline"))
		var argv []string
		if len(cmdline) > 0 {
			argv = strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		}
		if procMatches(c, strings.TrimSpace(string(comm)), argv) {
			return true
		}
	}
	return false
}

// procMatches tells a client's process by its name (comm) and arguments.
func procMatches(c Client, comm string, argv []string) bool {
	arg0 := ""
	if len(argv) > 0 {
		arg0 = filepath.Base(argv[0])
	}
	is := func(names ...string) bool {
		for _, n := range names {
			if comm == n || arg0 == n {
				return true
			}
		}
		return false
	}
	anyArg := func(sub string) bool {
		for _, a := range argv[min(1, len(argv)):] {
			if strings.Contains(a, sub) {
				return true
			}
		}
		return false
	}
	switch c {
	case ClaudeDesktop:
		// Community Linux builds run Electron on .../claude-desktop/app.asar.
		return is("claude-desktop", "Claude") || (is("electron") && anyArg("claude-desktop"))
	case ClaudeCode:
		return is("claude") || (is("node", "bun") && len(argv) > 1 &&
			(filepath.Base(argv[1]) == "claude" || strings.Contains(argv[1], "@anthropic-ai/claude-code")))
	case Cursor:
		return is("cursor", "Cursor") || strings.HasPrefix(strings.ToLower(arg0), "cursor")
	case VSCode:
		return is("code", "code-insiders")
	}
	return false
}
