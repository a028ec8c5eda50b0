//go:build unix

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/mcpexport"
	"github.com/berth-mcp/berth/pool"
)

// The desktop notification names what waits, its plugin, the client and
// the ID, escaped; never an argument value; and reaches the OS's program
// as arguments, never through a shell.
func TestDesktopNotifier(t *testing.T) {
	dir := t.TempDir()
	got := filepath.Join(dir, "argv")
	prog := "notify-send"
	if runtime.GOOS == "darwin" {
		prog = "osascript"
	}
	fake := filepath.Join(dir, prog)
	os.WriteFile(fake, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done > "+got+".tmp && mv "+got+".tmp "+got+"\n"), 0o755)
	look := func(name string) (string, error) {
		if name != prog {
			t.Errorf("looked for %s", name)
		}
		return fake, nil
	}
	notify := desktopNotifier(nil, look)
	args, _ := json.Marshal(map[string]string{"token": "s3cr3t-value", "path": "/etc/shadow"})
	p := &mcpexport.Pending{ID: "k7f3-9q2x", Tool: "demo__main__write", Plugin: "demo", Client: "evil\x1b]0;title\x07 <b>client</b>", Arguments: args}
	notify(p)
	testkit.Eventually(t, 10*time.Second, "the notification", func() bool { _, err := os.Stat(got); return err == nil })
	raw, _ := os.ReadFile(got)
	argv := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
	all := strings.Join(argv, " ")
	for _, secret := range []string{"s3cr3t-value", "/etc/shadow", "\x1b", "\x07"} {
		if strings.Contains(all, secret) {
			t.Fatalf("the notification carries %q: %q", secret, argv)
		}
	}
	for _, want := range []string{"demo__main__write", "demo", "k7f3-9q2x", "berth approvals --watch"} {
		if !strings.Contains(all, want) {
			t.Fatalf("the notification lacks %q: %q", want, argv)
		}
	}
	if prog == "notify-send" && (strings.Contains(argv[len(argv)-1], "<b>") || !strings.Contains(argv[len(argv)-1], "&lt;b&gt;")) {
		t.Fatalf("markup not escaped: %q", argv)
	}
	// No program: no notifier.
	if desktopNotifier(nil, func(string) (string, error) { return "", os.ErrNotExist }) != nil {
		t.Fatal("a notifier without a program")
	}
	// A resource read names its URI.
	if title, _ := notificationText(&mcpexport.Pending{Kind: pool.RequestResource, URI: "ui://x/y"}); !strings.Contains(title, "resource ui://x/y") {
		t.Fatal(title)
	}
}

func TestNotificationArgsOsascript(t *testing.T) {
	a := notificationArgs("osascript", `t"`, `b\" & do shell script "x`)
	if len(a) != 2 || a[1] != `display notification "b\\\" & do shell script \"x" with title "t\""` {
		t.Fatalf("%q", a)
	}
}
