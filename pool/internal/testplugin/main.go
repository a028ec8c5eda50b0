//go:build unix

// Command testplugin is a native tool provider for the pool's tests and
// the CLI's: it does on demand what a real provider cannot be made to do
// (panic in a handler, exit in the middle of a call, exit once and then
// work, change a tool's description on the next start) and reports what
// berth gave it (environment, working directory, process group).
//
// It takes no arguments, as a nativeTools entry has none. Its files are in
// the workspace (BERTH_WORKSPACE): at each start it appends its pid to
// testplugin-started; testplugin-desc, when it exists, is the echo tool's
// description, read once at start; exit_once records its death in
// testplugin-died-once.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/berth-mcp/berth/nativetool"
)

func main() {
	ws := os.Getenv(nativetool.EnvWorkspace)
	if ws != "" {
		f, err := os.OpenFile(filepath.Join(ws, "testplugin-started"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err == nil {
			fmt.Fprintln(f, os.Getpid())
			f.Close()
		}
	}
	desc := "Echoes its arguments."
	if b, err := os.ReadFile(filepath.Join(ws, "testplugin-desc")); err == nil {
		desc = strings.TrimSpace(string(b))
	}
	fmt.Fprintln(os.Stderr, "testplugin: hello on stderr")
	readOnly := &nativetool.Annotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: nativetool.Bool(false)}
	nativetool.Serve(
		nativetool.Tool{Name: "echo", Description: desc, Annotations: readOnly,
			Handler: func(_ context.Context, args json.RawMessage) (*nativetool.Result, error) {
				return nativetool.Text("echo: " + string(args)), nil
			}},
		nativetool.Tool{Name: "panic", Description: "Panics.",
			Handler: func(context.Context, json.RawMessage) (*nativetool.Result, error) {
				panic("testplugin boom")
			}},
		nativetool.Tool{Name: "exit", Description: "Exits in the middle of the call (not read-only).",
			Handler: func(ctx context.Context, _ json.RawMessage) (*nativetool.Result, error) {
				nativetool.Logger(ctx).Error("testplugin: exiting now")
				os.Exit(3)
				return nil, nil
			}},
		nativetool.Tool{Name: "exit_once", Description: "Exits the first time it is called, then answers (read-only).", Annotations: readOnly,
			Handler: func(ctx context.Context, _ json.RawMessage) (*nativetool.Result, error) {
				marker := filepath.Join(ws, "testplugin-died-once")
				if _, err := os.Stat(marker); err != nil {
					os.WriteFile(marker, []byte("died\n"), 0o600)
					nativetool.Logger(ctx).Error("testplugin: dying once")
					os.Exit(4)
				}
				return nativetool.Text("survived"), nil
			}},
		nativetool.Tool{Name: "pid", Description: "Its process, parent and process group IDs.", Annotations: readOnly,
			Handler: func(context.Context, json.RawMessage) (*nativetool.Result, error) {
				pgid, _ := syscall.Getpgid(0)
				return nativetool.Structured(map[string]int{"PID": os.Getpid(), "PPID": os.Getppid(), "PGID": pgid}), nil
			}},
		nativetool.Tool{Name: "env", Description: "Its environment and working directory.", Annotations: readOnly,
			Handler: func(context.Context, json.RawMessage) (*nativetool.Result, error) {
				wd, _ := os.Getwd()
				return nativetool.Structured(map[string]any{"env": os.Environ(), "cwd": wd}), nil
			}},
	)
}
