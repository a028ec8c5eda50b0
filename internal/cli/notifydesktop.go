package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/berth-mcp/berth/mcpexport"
	"github.com/berth-mcp/berth/review"
)

// desktopNotifier returns a mcpexport.Options.OnWaiting that shows a desktop
// notification of each call that starts waiting for approval, through
// what the OS offers: osascript on macOS, notify-send elsewhere. It is nil
// when lookPath (exec.LookPath, or a test's) finds neither. The
// notification names what waits (the tool, prompt or resource), its
// plugin, the client as it names itself and the approval ID, and says
// how to answer; it never carries argument values, which may be secret
// and which a notification shows to anyone who sees the screen.
func desktopNotifier(log *slog.Logger, lookPath func(string) (string, error)) func(*mcpexport.Pending) {
	prog := "notify-send"
	if runtime.GOOS == "darwin" {
		prog = "osascript"
	}
	path, err := lookPath(prog)
	if err != nil {
		if log != nil {
			log.Warn("approval-notify is on, but this system has no "+prog+" for desktop notifications; none are shown", "error", err)
		}
		return nil
	}
	return func(p *mcpexport.Pending) {
		title, body := notificationText(p)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, path, notificationArgs(prog, title, body)...)
		if out, err := cmd.CombinedOutput(); err != nil && log != nil {
			log.Warn("the desktop notification of a waiting call failed", "program", path, "error", err, "output", review.Printable(string(out)))
		}
	}
}

// notificationText is the title and body of the notification of p: no
// argument values.
func notificationText(p *mcpexport.Pending) (title, body string) {
	what := pendingWhat(p)
	title = "berth: " + clip(what, 80) + " waits for approval"
	body = fmt.Sprintf("%s of %s, from the client %q (as it names itself). Answer with: berth approvals --watch, or berth approve %s / berth deny %s",
		clip(what, 120), clip(orUnknown(p.Plugin), 80), clip(p.Client, 60), p.ID, p.ID)
	return title, body
}

// clip escapes s as terminal text and cuts it to at most n bytes.
func clip(s string, n int) string { return review.Cut(review.Printable(s), n) }

// notificationArgs are the arguments of prog: notify-send takes the body
// as (a subset of) markup, so <, > and & are escaped; osascript gets one
// AppleScript statement with the strings quoted.
func notificationArgs(prog, title, body string) []string {
	if prog == "osascript" {
		q := func(s string) string {
			return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
		}
		return []string{"-e", "display notification " + q(body) + " with title " + q(title)}
	}
	markup := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	return []string{"--app-name=berth", "--", title, markup.Replace(body)}
}
