package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// The download bar draws only when stderr is a terminal and the output is
// not --json (newProgress decides); drawn, it shows the download's
// progress and clears itself.
func TestDownloadBar(t *testing.T) {
	var buf bytes.Buffer
	getenv := func(k string) string {
		if k == "NO_COLOR" {
			return "1"
		}
		return ""
	}
	a := &app{stderr: &buf, getenv: getenv}
	if a.downloadBar(true).progress("x") != nil {
		t.Fatal("a bar on a stderr that is not a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if (&app{stderr: f, getenv: getenv}).downloadBar(true).progress("x") != nil {
		t.Fatal("a bar on a stderr that is a file")
	}
	b := &downloadBar{a: a, draw: true}
	p := b.progress("acme-notes")
	p(0, 1024)
	time.Sleep(100 * time.Millisecond) // past the bar's throttle
	p(512, 1024)
	p(1024, 1024)
	b.done()
	out := buf.String()
	if !strings.Contains(out, "downloading acme-notes") || !strings.Contains(out, " 50% ") {
		t.Fatalf("%q", out)
	}
	if i := strings.LastIndex(out, "\r"); i < 0 || strings.TrimSpace(out[i:]) != "" {
		t.Fatalf("the bar was not cleared: %q", out)
	}
	buf.Reset()
	b.done()
	if buf.Len() != 0 {
		t.Fatalf("cleared twice: %q", buf.String())
	}
}
