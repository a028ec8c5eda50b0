package main

import (
	"bytes"
	"strings"
	"testing"
)

const stream = `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestPeer"}
{"Action":"output","Package":"p","Test":"TestPeer","Output":"    peers.go:222: real-peer: MCP test peers unavailable (not installed or out of date); run scripts/install-peers, or set BERTH_REQUIRE_PEERS=1 to make this a failure\n"}
{"Action":"skip","Package":"p","Test":"TestPeer"}
{"Action":"run","Package":"p","Test":"TestPeer2/sub"}
{"Action":"output","Package":"p","Test":"TestPeer2/sub","Output":"    peers.go:222: real-peer: MCP test peers unavailable (stamp missing); run scripts/install-peers\n"}
{"Action":"skip","Package":"p","Test":"TestPeer2/sub"}
{"Action":"run","Package":"p","Test":"TestKeyring"}
{"Action":"output","Package":"p","Test":"TestKeyring","Output":"    keyringtest.go:60: real-peer: no Secret Service for the keychain tests: dbus-daemon is not on PATH (install the Debian packages dbus and gnome-keyring; CI sets BERTH_REQUIRE_KEYRING=1 to fail instead)\n"}
{"Action":"skip","Package":"p","Test":"TestKeyring"}
{"Action":"run","Package":"p","Test":"TestBrowser"}
{"Action":"output","Package":"p","Test":"TestBrowser","Output":"    browser_test.go:46: real-peer: no Chromium on PATH (install Debian's package: apt-get install -y chromium); set BERTH_REQUIRE_BROWSER=1 to make this a failure\n"}
{"Action":"skip","Package":"p","Test":"TestBrowser"}
{"Action":"run","Package":"p","Test":"TestWindowsOnly"}
{"Action":"output","Package":"p","Test":"TestWindowsOnly","Output":"    x_test.go:9: needs Windows\n"}
{"Action":"skip","Package":"p","Test":"TestWindowsOnly"}
{"Action":"run","Package":"p","Test":"TestBad"}
{"Action":"output","Package":"p","Test":"TestBad","Output":"    x_test.go:12: it broke\n"}
{"Action":"output","Package":"p","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestBad"}
{"Action":"output","Package":"p","Output":"FAIL\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.01s\n"}
{"Action":"fail","Package":"p"}
`

func TestSummarize(t *testing.T) {
	var w bytes.Buffer
	counts, closing := summarize(strings.NewReader(stream), &w)
	if counts != "tests: 1 passed, 1 failed, 5 skipped" {
		t.Errorf("counts %q", counts)
	}
	want := "real-peer tests: 4 skipped (2: MCP test peers unavailable; 1: no Secret Service for the keychain tests: dbus-daemon is not on PATH; 1: no Chromium on PATH)"
	if !strings.HasPrefix(closing, want) {
		t.Errorf("closing line\n%q\nwant it to start with\n%q", closing, want)
	}
	for _, env := range []string{"BERTH_REQUIRE_PEERS=1", "BERTH_REQUIRE_KEYRING=1", "BERTH_REQUIRE_BROWSER=1"} {
		if !strings.Contains(closing, env) {
			t.Errorf("the closing line does not name %s: %q", env, closing)
		}
	}
	out := w.String()
	for _, s := range []string{"it broke", "--- FAIL: TestBad", "FAIL\tp\t0.01s"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "=== RUN") || strings.Contains(out, "TestA") || strings.Contains(out, "real-peer") {
		t.Errorf("output has what a passing or skipped test printed:\n%s", out)
	}
	if _, c := summarize(strings.NewReader(`{"Action":"pass","Package":"p","Test":"T"}`+"\n"), &w); !strings.Contains(c, "none skipped") {
		t.Errorf("no skips: %q", c)
	}
}

// TestSummarizeTimeout: a package that times out fails with its test still
// running; go test attributes the panic to that test, which never ends.
// The summary shows it and counts it as failed.
func TestSummarizeTimeout(t *testing.T) {
	stream := `{"Action":"run","Package":"q","Test":"TestSlow"}
{"Action":"output","Package":"q","Test":"TestSlow","Output":"=== RUN   TestSlow\n"}
{"Action":"output","Package":"q","Test":"TestSlow","Output":"panic: test timed out after 1s\n"}
{"Action":"output","Package":"q","Test":"TestSlow","Output":"\trunning tests:\n"}
{"Action":"output","Package":"q","Test":"TestSlow","Output":"\t\tTestSlow (1s)\n"}
{"Action":"run","Package":"q","Test":"TestDone"}
{"Action":"pass","Package":"q","Test":"TestDone"}
{"Action":"output","Package":"q","Output":"FAIL\tq\t1.020s\n"}
{"Action":"fail","Package":"q","Elapsed":1.02}
`
	var w bytes.Buffer
	counts, _ := summarize(strings.NewReader(stream), &w)
	if counts != "tests: 1 passed, 1 failed, 0 skipped" {
		t.Errorf("counts %q", counts)
	}
	out := w.String()
	for _, s := range []string{"--- DID NOT FINISH: TestSlow", "panic: test timed out after 1s", "TestSlow (1s)", "FAIL\tq"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}
