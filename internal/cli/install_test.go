package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// The download bar draws only when stderr is a terminal and the output is
// not --json; drawn, it shows the share done and clears itself.
func TestDownloadBar(t *testing.T) {
	var buf bytes.Buffer
	a := &app{stderr: &buf}
	if a.downloadBar(true).progress("x") != nil {
		t.Fatal("a bar on a stderr that is not a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if (&app{stderr: f}).downloadBar(true).progress("x") != nil {
		t.Fatal("a bar on a stderr that is a file")
	}
	b := &downloadBar{a: a, show: true}
	p := b.progress("acme-notes")
	p(512, 1024)
	p(600, 1024) // within the throttle: not drawn
	p(1024, 1024)
	b.done()
	out := buf.String()
	if strings.Count(out, "downloading acme-notes") != 2 || !strings.Contains(out, " 50% 512 B") || !strings.Contains(out, "100% 1.0 KiB") || !strings.HasSuffix(out, "\r\x1b[K") {
		t.Fatalf("%q", out)
	}
	buf.Reset()
	b.done()
	if buf.Len() != 0 {
		t.Fatal("cleared twice")
	}
}
