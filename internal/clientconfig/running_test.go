package clientconfig

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeProc makes a Linux /proc with one process per entry: comm, then
// the arguments.
func fakeProc(t *testing.T, procs map[int][]string) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "uptime"), []byte("1 1\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "self"), 0o755)
	for pid, p := range procs {
		d := filepath.Join(dir, strconv.Itoa(pid))
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "comm"), []byte(p[0]+"\n"), 0o644)
		os.WriteFile(filepath.Join(d, "cmdline"), []byte(strings.Join(p[1:], "\x00")+"\x00"), 0o644)
	}
	return dir
}

func TestRunning(t *testing.T) {
	tests := []struct {
		name  string
		procs map[int][]string
		want  map[Client]bool
	}{
		{"nothing", map[int][]string{1: {"systemd", "/sbin/init"}, 2: {"bash", "-bash"}}, nil},
		{"claude desktop electron", map[int][]string{10: {"electron", "/usr/lib/electron/electron", "/usr/lib/claude-desktop/app.asar"}},
			map[Client]bool{ClaudeDesktop: true}},
		{"claude desktop launcher", map[int][]string{10: {"claude-desktop", "/usr/bin/claude-desktop"}}, map[Client]bool{ClaudeDesktop: true}},
		{"claude code native", map[int][]string{11: {"claude", "claude", "--resume"}}, map[Client]bool{ClaudeCode: true}},
		{"claude code node", map[int][]string{11: {"node", "/usr/bin/node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"}}, map[Client]bool{ClaudeCode: true}},
		{"cursor appimage", map[int][]string{12: {"cursor", "/opt/Cursor-1.2.AppImage"}}, map[Client]bool{Cursor: true}},
		{"vscode", map[int][]string{13: {"code", "/usr/share/code/code", "--unity-launch"}}, map[Client]bool{VSCode: true}},
		{"berth connect naming the client", map[int][]string{14: {"berth", "/usr/bin/berth", "connect", "claude-desktop"}, 15: {"vim", "vim", "cursor.md"}}, nil},
		{"this process", map[int][]string{os.Getpid(): {"code", "code"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := Env{GOOS: "linux", Home: "/h", ProcDir: fakeProc(t, tt.procs)}
			for _, c := range Clients {
				if got := Running(ctx, c, env); got != tt.want[c] {
					t.Errorf("Running(%s) = %v, want %v", c, got, tt.want[c])
				}
			}
		})
	}
	// No /proc at all is "not running", not an error.
	if Running(ctx, Cursor, Env{GOOS: "linux", ProcDir: filepath.Join(t.TempDir(), "none")}) {
		t.Error("missing proc dir reported running")
	}
	// Another OS than this one cannot be probed.
	other := "windows"
	if other == runtimeGOOS() {
		other = "darwin"
	}
	if Running(ctx, ClaudeDesktop, Env{GOOS: other, Home: "/h"}) {
		t.Errorf("probing %s from here reported running", other)
	}
}
