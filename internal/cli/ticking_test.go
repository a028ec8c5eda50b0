package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/pool"
)

// Off a terminal, a fetch says what it fetches at once and then every
// progressEvery, with the time since it started (ticks are injected: no
// test waits).
func TestFetchProgressOffTerminal(t *testing.T) {
	var buf bytes.Buffer
	t0 := time.Unix(1_000_000, 0)
	tick := make(chan time.Time)
	a := &app{stderr: &buf, getenv: func(string) string { return "" }, clock: func() time.Time { return t0 },
		newTicker: func(d time.Duration) (<-chan time.Time, func()) {
			if d != progressEvery {
				t.Errorf("off a terminal the interval is %v, want %v", d, progressEvery)
			}
			return tick, func() {}
		}}
	done := a.fetchProgress(true)("npm:@modelcontextprotocol/server-filesystem@2025.8.21")
	for _, s := range []int{5, 15, 75} {
		tick <- t0.Add(time.Duration(s) * time.Second)
	}
	done()
	done()
	want := `fetching npm:@modelcontextprotocol/server-filesystem@2025.8.21 …
fetching npm:@modelcontextprotocol/server-filesystem@2025.8.21 … 5 s
fetching npm:@modelcontextprotocol/server-filesystem@2025.8.21 … 15 s
fetching npm:@modelcontextprotocol/server-filesystem@2025.8.21 … 1 min 15 s
`
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}

	buf.Reset()
	a.noProgress = true
	a.fetchProgress(true)("npm:x@1.0.0")()
	if buf.Len() != 0 {
		t.Errorf("--no-progress printed %q", buf.String())
	}
}

// A server that fetches at start says so while it starts, instead of a
// bar stuck at 0%.
func TestStartingWhat(t *testing.T) {
	sts := []pool.ServerStatus{
		{ID: "a__one", State: pool.StateRunning},
		{ID: "fs__files", State: pool.StateStarting, Fetched: &pool.FetchStatus{Package: "@modelcontextprotocol/server-filesystem@2025.8.21"}},
		{ID: "z__last", State: pool.StateStarting},
	}
	if got, want := startingWhat(sts), "starting fs__files: fetching @modelcontextprotocol/server-filesystem@2025.8.21 at start (1 of 3 started)"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	sts[1].Fetched.Staged = true
	if got := startingWhat(sts); strings.Contains(got, "fetching") {
		t.Errorf("a staged server fetches nothing at start: %q", got)
	}
}
