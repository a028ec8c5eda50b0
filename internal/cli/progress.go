package cli

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
)

// progress is a progress bar on the terminal, or nothing: it shows only
// when stderr is a terminal, --no-progress is not given and the command
// does not print --json. Under NO_COLOR it has no colours. Its methods do
// nothing on a nil *progress.
type progress struct{ bar *progressbar.ProgressBar }

// showProgress reports whether progress may be drawn: show is false for
// --json (and other machine output).
func (a *app) showProgress(show bool) bool {
	if !show || a.noProgress {
		return false
	}
	f, ok := a.stderr.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// newProgress starts a bar of total steps (bytes when bytes is set)
// described by desc, or returns nil when progress may not show.
func (a *app) newProgress(show bool, total int64, desc string, bytes bool) *progress {
	if !a.showProgress(show) {
		return nil
	}
	return a.progressBar(total, desc, bytes)
}

// progressBar starts a bar on stderr whatever stderr is; newProgress
// decides whether one may show.
func (a *app) progressBar(total int64, desc string, bytes bool) *progress {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(a.stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionEnableColorCodes(a.getenv("NO_COLOR") == ""),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(65 * time.Millisecond),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionSetElapsedTime(true),
	}
	if bytes {
		opts = append(opts, progressbar.OptionShowBytes(true))
	} else {
		opts = append(opts, progressbar.OptionShowCount())
	}
	if a.getenv("NO_COLOR") == "" {
		opts = append(opts, progressbar.OptionSetTheme(progressbar.Theme{Saucer: "[green]=[reset]", SaucerHead: "[green]>[reset]", SaucerPadding: " ", BarStart: "[", BarEnd: "]"}))
	}
	return &progress{bar: progressbar.NewOptions64(total, opts...)}
}

func (p *progress) set(n int64) {
	if p != nil {
		p.bar.Set64(n)
	}
}

// done removes the bar from the terminal.
func (p *progress) done() {
	if p != nil {
		p.bar.Finish()
		p.bar.Clear()
	}
}

// waitStarted waits for the first start of every server of p, showing
// (ticking) which server is starting, how many have started, and, for a
// server that fetches its package when it starts, what it fetches.
func (a *app) waitStarted(ctx context.Context, p *pool.Pool, show bool) error {
	total := len(p.Status())
	if total == 0 {
		return p.WaitStarted(ctx)
	}
	stop := a.ticking(show, false, func() string { return startingWhat(p.Status()) })
	defer stop()
	return p.WaitStarted(ctx)
}

// startingWhat says which server is starting: "starting fs: fetching
// npm:PKG at start (1 of 3 started)".
func startingWhat(sts []pool.ServerStatus) string {
	n, starting := 0, -1
	for i, s := range sts {
		if s.State != pool.StateStarting {
			n++
		} else if starting < 0 {
			starting = i
		}
	}
	if starting < 0 {
		return fmt.Sprintf("starting servers (%d of %d started)", n, len(sts))
	}
	s := sts[starting]
	what := "starting " + review.Printable(s.ID)
	if f := s.Fetched; f != nil && !f.Staged {
		what += ": fetching " + review.Printable(f.Package) + " at start"
	}
	return fmt.Sprintf("%s (%d of %d started)", what, n, len(sts))
}

// largeTree is the size from which hashing a bundle draws progress:
// smaller ones are done before a bar could be read.
const largeTree = 16 << 20

// hashing returns ctx with a bundle.HashProgress that draws a bar, labelled
// what, for every large tree read with it, while show allows progress.
// stop removes a bar left on the terminal.
func (a *app) hashing(ctx context.Context, show bool, what string) (_ context.Context, stop func()) {
	f, stop := a.largeWork(show, what)
	if f == nil {
		return ctx, stop
	}
	return bundle.WithHashProgress(ctx, f), stop
}

// largeWork returns a function that draws a bar of bytes, labelled what,
// for every job of at least largeTree bytes it is told about (done of
// total; a job starts again when done goes back), or nil when show does
// not allow progress. stop removes a bar left on the terminal. f is safe
// for concurrent use.
func (a *app) largeWork(show bool, what string) (f func(done, total int64), stop func()) {
	if !a.showProgress(show) {
		return nil, func() {}
	}
	var mu sync.Mutex
	var bar *progress
	var last int64
	f = func(done, total int64) {
		mu.Lock()
		defer mu.Unlock()
		if total < largeTree {
			return
		}
		if bar == nil || done < last {
			bar.done()
			bar = a.newProgress(true, total, what, true)
		}
		last = done
		bar.set(done)
		if done >= total {
			bar.done()
			bar = nil
		}
	}
	return f, func() {
		mu.Lock()
		defer mu.Unlock()
		bar.done()
		bar = nil
	}
}
