// Command testsummary runs `go test -json` with the given arguments,
// prints what a person needs of its output (each package's result line,
// the whole output of failed tests, build errors), and ends with one line
// saying how many real-peer tests were skipped and why: tests against
// programs berth did not write (the npm MCP peers, a Secret Service, a
// headless Chromium), which skip with a message starting "real-peer: "
// unless CI makes them mandatory (BERTH_REQUIRE_PEERS=1,
// BERTH_REQUIRE_KEYRING=1, BERTH_REQUIRE_BROWSER=1). It exits
// with go test's exit code. make test runs it.
//
// Usage: go run ./internal/testsummary [go test flags and packages]
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string
	FailedBuild string
}

const marker = "real-peer: "

// key names a test of a package (test "" for the package itself).
type key struct{ pkg, test string }

func main() {
	cmd := exec.Command("go", append([]string{"test", "-json"}, os.Args[1:]...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	counts, s := summarize(out, os.Stdout)
	code := 0
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			fmt.Fprintln(os.Stderr, "testsummary:", err)
			os.Exit(1)
		}
		code = ee.ExitCode()
	}
	fmt.Println(counts)
	fmt.Println(s)
	os.Exit(code)
}

// summarize reads test2json events from r, writes the condensed output to
// w, and returns the counts line ("tests: N passed, N failed, N skipped")
// and the closing line.
func summarize(r io.Reader, w io.Writer) (counts, closing string) {
	var passed, failed, skipped int
	outputs := map[key][]string{}
	skips := map[string]int{}
	var order []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if json.Unmarshal(line, &e) != nil || e.Action == "" {
			fmt.Fprintf(w, "%s\n", line) // not an event: show it as it is
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "build-output":
			fmt.Fprint(w, e.Output)
		case "output":
			if e.Test == "" {
				// Package-level lines: the result line (ok, FAIL, ?) and
				// anything printed outside a test.
				if !strings.HasPrefix(e.Output, "=== ") && !strings.HasPrefix(e.Output, "PASS") && !strings.HasPrefix(e.Output, "testing: warning") {
					fmt.Fprint(w, e.Output)
				}
				continue
			}
			outputs[k] = append(outputs[k], e.Output)
		case "fail":
			if e.Test != "" {
				failed++
				for _, l := range outputs[k] {
					fmt.Fprint(w, l)
				}
			} else {
				// The package failed with tests still running: a timeout
				// or a crash, whose panic and stacks go test attributes
				// to those tests, which never end. Show them, counted as
				// failed.
				failed += flushUnfinished(w, e.Package, outputs)
			}
			delete(outputs, k)
		case "skip":
			if e.Test != "" {
				skipped++
			}
			if why, ok := peerSkip(outputs[k]); ok {
				if skips[why] == 0 {
					order = append(order, why)
				}
				skips[why]++
			}
			delete(outputs, k)
		case "pass":
			if e.Test != "" {
				passed++
			}
			delete(outputs, k)
		}
	}
	return fmt.Sprintf("tests: %d passed, %d failed, %d skipped", passed, failed, skipped), closingLine(skips, order)
}

// unfinishedLines is how much of a test that never ended is shown: the
// panic of a timeout comes first, then every goroutine's stack.
const unfinishedLines = 200

// flushUnfinished writes the output of the tests of pkg that started and
// never ended, in name order, and returns how many there were.
func flushUnfinished(w io.Writer, pkg string, outputs map[key][]string) int {
	var names []string
	for k := range outputs {
		if k.pkg == pkg && k.test != "" {
			names = append(names, k.test)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		lines := outputs[key{pkg, name}]
		fmt.Fprintf(w, "--- DID NOT FINISH: %s (the package failed while it ran)\n", name)
		for i, l := range lines {
			if i == unfinishedLines {
				fmt.Fprintf(w, "    ... %d more lines (go test -run '^%s$' %s shows them all)\n", len(lines)-i, name, pkg)
				break
			}
			fmt.Fprint(w, l)
		}
		delete(outputs, key{pkg, name})
	}
	return len(names)
}

// details are the parts of a reason that differ from test to test.
var details = regexp.MustCompile(` \([^)]*\)`)

// peerSkip finds the real-peer reason in a skipped test's output.
func peerSkip(lines []string) (string, bool) {
	for _, l := range lines {
		if i := strings.Index(l, marker); i >= 0 {
			why := strings.TrimSpace(l[i+len(marker):])
			why, _, _ = strings.Cut(details.ReplaceAllString(why, ""), ";")
			return why, true
		}
	}
	return "", false
}

func closingLine(skips map[string]int, order []string) string {
	total := 0
	for _, n := range skips {
		total += n
	}
	if total == 0 {
		return "real-peer tests: none skipped (all ran against the real peers)"
	}
	sort.SliceStable(order, func(i, j int) bool { return skips[order[i]] > skips[order[j]] })
	var parts []string
	for _, why := range order {
		parts = append(parts, fmt.Sprintf("%d: %s", skips[why], why))
	}
	return fmt.Sprintf("real-peer tests: %d skipped (%s); CI runs them all (BERTH_REQUIRE_PEERS=1, BERTH_REQUIRE_KEYRING=1, BERTH_REQUIRE_BROWSER=1): scripts/install-peers installs the npm peers, the Debian packages dbus and gnome-keyring the Secret Service, chromium the browser, pipx the PyPI registry entry, and docker-registry the OCI registry tests", total, strings.Join(parts, "; "))
}
