package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/berth-mcp/berth/fetched"
	"github.com/berth-mcp/berth/review"
)

// progressEvery is how often a line says that long work goes on when
// stderr is not a terminal.
const progressEvery = 5 * time.Second

// spinFrames are the frames of the spinner on a terminal.
var spinFrames = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// ticking shows, until stop is called, that work described by what goes
// on: on a terminal (showProgress(show)) a spinner with what() and the
// elapsed time, redrawn in place; off a terminal a line "what() … N s"
// every progressEvery, and, when first is set, a line "what() …" at once.
// Under --no-progress it shows nothing. what is called from another
// goroutine and must be safe for that.
func (a *app) ticking(show, first bool, what func() string) (stop func()) {
	if a.noProgress {
		return func() {}
	}
	onTerm := a.showProgress(show)
	every := progressEvery
	if onTerm {
		every = 100 * time.Millisecond
	}
	now := a.clock
	if now == nil {
		now = time.Now
	}
	newTicker := a.newTicker
	if newTicker == nil {
		newTicker = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	start := now()
	tick, stopTicker := newTicker(every)
	done, finished := make(chan struct{}), make(chan struct{})
	if first && !onTerm {
		fmt.Fprintf(a.stderr, "%s …\n", what())
	}
	go func() {
		defer close(finished)
		for i := 0; ; i++ {
			select {
			case <-done:
				if onTerm {
					fmt.Fprint(a.stderr, "\r\x1b[K")
				}
				return
			case t := <-tick:
				el := elapsed(t.Sub(start))
				if onTerm {
					fmt.Fprintf(a.stderr, "\r\x1b[K%s %s … %s", a.green(string(spinFrames[i%len(spinFrames)])), what(), el)
				} else {
					fmt.Fprintf(a.stderr, "%s … %s\n", what(), el)
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-finished
			stopTicker()
		})
	}
}

// elapsed is "15 s" or "2 min 05 s".
func elapsed(d time.Duration) string {
	s := int(d / time.Second)
	if s < 60 {
		return fmt.Sprintf("%d s", s)
	}
	return fmt.Sprintf("%d min %02d s", s/60, s%60)
}

// fetchProgress is fetched.Options.Started for a command: while a
// package is resolved at trust, ticking says "fetching npm:NAME@VERSION".
func (a *app) fetchProgress(show bool) func(pkg string) func() {
	return func(pkg string) func() {
		return a.ticking(show, true, func() string { return "fetching " + pkg })
	}
}

// fetchOptions are the fetched.Options of a trust from the command line:
// the operator's settings from berth's environment, and ticking while a
// package is resolved.
func (a *app) fetchOptions(show bool) *fetched.Options {
	return &fetched.Options{Getenv: a.getenv, Started: a.fetchProgress(show)}
}

// writeFetchSettings prints which of the operator's package manager
// settings reached the resolution of locks, and from which file (names,
// and a value only for a CA file path); nothing when no package was
// resolved.
func (a *app) writeFetchSettings(w io.Writer, locks []*fetched.Lock) {
	ecos := map[string]bool{}
	for _, l := range locks {
		ecos[l.Ecosystem] = true
	}
	if len(ecos) > 0 {
		a.writeSettingsLines(w, "         ", ecos)
	}
}

// writeSettingsLines prints fetched.Describe's lines of the ecosystems
// ecos ("npm": npm's; "pypi": pip's and uv's), each after indent.
func (a *app) writeSettingsLines(w io.Writer, indent string, ecos map[string]bool) {
	paths, err := a.paths()
	if err != nil {
		return
	}
	op, err := fetched.ReadOperator(a.getenv)
	if err != nil {
		fmt.Fprintf(w, "%s%s\n", indent, review.Printable(err.Error()))
		return
	}
	for _, l := range fetched.Describe(op, paths.Fetchers()) {
		npm := strings.HasPrefix(l, "npm ")
		if (npm && ecos["npm"]) || (!npm && ecos["pypi"]) {
			fmt.Fprintf(w, "%s%s\n", indent, review.Printable(l))
		}
	}
}

// green is s in green on a terminal, as the progress bars draw, or s
// alone under NO_COLOR.
func (a *app) green(s string) string {
	if a.getenv("NO_COLOR") != "" {
		return s
	}
	return "\x1b[32m" + s + "\x1b[0m"
}
