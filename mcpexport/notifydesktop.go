package mcpexport

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"runtime"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
)

// DesktopNotifier returns an Options.OnWaiting that shows a desktop
// notification of each call that starts waiting for approval, through
// what the OS offers: osascript on macOS, notify-send elsewhere. It is nil
// when lookPath (exec.LookPath, or a test's) finds neither. The
// notification names what waits (the tool, prompt or resource), its
// plugin, the client as it names itself and the approval ID, and says
// how to answer; it never carries argument values, which may be secret
// and which a notification shows to anyone who sees the screen.
func DesktopNotifier(log *slog.Logger, lookPath func(string) (string, error)) func(*Pending) {
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
	return func(p *Pending) {
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
func notificationText(p *Pending) (title, body string) {
	what := pendingWhat(p)
	title = "berth: " + clip(what, 80) + " waits for approval"
	body = fmt.Sprintf("%s of %s, from the client %q (as it names itself). Answer with: berth approvals --watch, or berth approve %s / berth deny %s",
		clip(what, 120), clip(orUnknown(p.Plugin), 80), clip(p.Client, 60), p.ID, p.ID)
	return title, body
}

// pendingWhat names what p asks for, escaped.
func pendingWhat(p *Pending) string {
	switch p.Kind {
	case pool.RequestPrompt:
		return "the prompt " + review.Printable(p.Tool)
	case pool.RequestResource:
		return "reading " + review.Printable(p.URI)
	}
	return review.Printable(p.Tool)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// clip escapes s as terminal text and cuts it to at most n bytes.
func clip(s string, n int) string {
	s = review.Printable(s)
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

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
