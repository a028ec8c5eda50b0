package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/berth-mcp/berth/mcpexport"
	"github.com/berth-mcp/berth/store"
)

// approvalNotifier is berth serve's Options.OnWaiting: a desktop
// notification of each waiting call when the operator turned
// approval-notify on (nil otherwise, and when the OS offers none).
func (a *app) approvalNotifier(st *store.Store, log *slog.Logger) func(*mcpexport.Pending) {
	cfg, err := st.Config()
	if err != nil || !cfg.ApprovalNotify {
		return nil
	}
	return desktopNotifier(log, exec.LookPath)
}

// errNotTerminal refuses --watch off a terminal.
var errNotTerminal = errors.New("berth approvals --watch needs a terminal: it reads one key at a time from stdin and draws on stdout, and here one of them is not a terminal; off a terminal use berth approvals (--json), berth approve ID and berth deny ID")

// watchKeys is the help line of the loop.
const watchKeys = "keys: [a] approve once  [A] approve always  [d] deny  [i] details  [s] skip  [q] quit"

// runWatch is berth approvals --watch: the terminal in raw mode (restored
// on return and on SIGINT, SIGTERM, SIGHUP), one key at a time.
func (a *app) runWatch(ctx context.Context, q *mcpexport.Queue) error {
	if !a.isTerminal() {
		return errNotTerminal
	}
	in := a.stdin.(*os.File)
	out, _ := a.stdoutFile()
	old, err := term.MakeRaw(int(in.Fd()))
	if err != nil {
		return fmt.Errorf("putting the terminal in raw mode: %w", err)
	}
	defer term.Restore(int(in.Fd()), old)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	keys := make(chan byte)
	go func() {
		defer close(keys)
		buf := make([]byte, 1)
		for {
			if n, err := in.Read(buf); n == 0 || err != nil {
				return
			}
			select {
			case keys <- buf[0]:
			case <-ctx.Done():
				return
			}
		}
	}()
	w := &watcher{a: a, q: q, out: crlfWriter{out}, keys: keys, by: a.decider("berth approvals --watch"), poll: 250 * time.Millisecond}
	return w.run(ctx)
}

// decider names who decides, as the audit log records it.
func (a *app) decider(what string) string {
	if u := a.getenv("USER"); u != "" {
		return what + " (" + u + ")"
	}
	return what
}

// crlfWriter ends lines with CR LF: a raw terminal does not.
type crlfWriter struct{ w io.Writer }

func (c crlfWriter) Write(p []byte) (int, error) {
	if _, err := c.w.Write(bytes.ReplaceAll(p, []byte("\n"), []byte("\r\n"))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// watcher is the loop of berth approvals --watch, apart from the terminal:
// keys delivers one key press at a time (closed at the end of input).
// It shows the oldest waiting call not skipped, announces each call as it
// arrives, and acts on one key.
type watcher struct {
	a    *app
	q    *mcpexport.Queue
	out  io.Writer
	keys <-chan byte
	by   string
	poll time.Duration

	seen    map[string]bool
	skipped map[string]bool
	decided map[string]bool // until its berth serve takes the decision
	cur     *mcpexport.Pending
}

func (w *watcher) run(ctx context.Context) error {
	w.seen, w.skipped, w.decided = map[string]bool{}, map[string]bool{}, map[string]bool{}
	fmt.Fprintf(w.out, "Watching for calls that wait for approval (%s).\n", watchKeys)
	t := time.NewTicker(w.poll)
	defer t.Stop()
	if err := w.refresh(); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(w.out, "Stopped watching.")
			return nil
		case <-t.C:
			if err := w.refresh(); err != nil {
				return err
			}
		case k, ok := <-w.keys:
			if !ok || k == 'q' || k == 3 || k == 4 { // q, Ctrl-C, Ctrl-D
				fmt.Fprintln(w.out, "Stopped watching; calls still waiting stay in berth approvals.")
				return nil
			}
			w.key(k)
			if err := w.refresh(); err != nil {
				return err
			}
		}
	}
}

// refresh reads the queue: says which calls arrived and which went, and
// shows the next one when the current one is settled.
func (w *watcher) refresh() error {
	list, err := w.q.List()
	if err != nil {
		return err
	}
	for id := range w.decided {
		if !slices.ContainsFunc(list, func(p *mcpexport.Pending) bool { return p.ID == id }) {
			delete(w.decided, id)
		}
	}
	list = slices.DeleteFunc(list, func(p *mcpexport.Pending) bool { return w.decided[p.ID] })
	waiting := map[string]bool{}
	for _, p := range list {
		waiting[p.ID] = true
		if !w.seen[p.ID] {
			w.seen[p.ID] = true
			if w.cur != nil {
				fmt.Fprintf(w.out, "+ %s also waits: %s from %q\n", p.ID, pendingWhat(p), p.Client)
			}
		}
	}
	if w.cur != nil && !waiting[w.cur.ID] {
		fmt.Fprintf(w.out, "%s is no longer waiting (decided elsewhere, withdrawn by its client, or timed out).\n", w.cur.ID)
		w.cur = nil
	}
	for id := range w.skipped {
		if !waiting[id] {
			delete(w.skipped, id)
		}
	}
	if w.cur != nil {
		return nil
	}
	next := slices.IndexFunc(list, func(p *mcpexport.Pending) bool { return !w.skipped[p.ID] })
	if next < 0 && len(w.skipped) > 0 {
		clear(w.skipped)
		next = 0
	}
	if next < 0 || next >= len(list) {
		return nil
	}
	w.cur = list[next]
	w.show()
	return nil
}

// show prints the current call, its arguments key by key.
func (w *watcher) show() {
	p := w.cur
	fmt.Fprintf(w.out, "\n%s waits for approval, %s left:", p.ID, time.Until(p.Deadline).Truncate(time.Second))
	w.a.showPendingTo(w.out, p, false)
	fmt.Fprintln(w.out, watchKeys)
}

// key acts on one key press.
func (w *watcher) key(k byte) {
	p := w.cur
	if p == nil {
		if strings.IndexByte("aAdis", k) >= 0 {
			fmt.Fprintln(w.out, "Nothing waits for approval now.")
		}
		return
	}
	switch k {
	case 'a', 'y', 'A', 'd', 'n':
		allow, always := k != 'd' && k != 'n', k == 'A'
		if _, err := w.q.Decide(p.ID, allow, always, w.by); err != nil {
			fmt.Fprintf(w.out, "%s: %v\n", p.ID, err)
		} else {
			w.decided[p.ID] = true
			switch {
			case always:
				fmt.Fprintf(w.out, "Approved %s (%s); %s is now allowed always.\n", p.ID, pendingWhat(p), p.Tool)
			case allow:
				fmt.Fprintf(w.out, "Approved %s (%s) once.\n", p.ID, pendingWhat(p))
			default:
				fmt.Fprintf(w.out, "Denied %s (%s).\n", p.ID, pendingWhat(p))
			}
		}
		w.cur = nil
	case 'i':
		full, err := w.q.Get(p.ID)
		if err != nil {
			fmt.Fprintf(w.out, "%s: %v\n", p.ID, err)
			return
		}
		w.a.showPendingTo(w.out, full, true)
		fmt.Fprintln(w.out, watchKeys)
	case 's':
		w.skipped[p.ID] = true
		fmt.Fprintf(w.out, "Skipped %s; it still waits.\n", p.ID)
		w.cur = nil
	default:
		fmt.Fprintln(w.out, watchKeys)
	}
}
