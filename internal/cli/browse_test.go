package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe to read while berth writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestMarketplaceServe runs berth marketplace serve in-process: it prints
// its loopback URL with a free port, serves the page read-only, and stops
// cleanly when interrupted.
func TestMarketplaceServe(t *testing.T) {
	home := t.TempDir()
	getenv := func(k string) string {
		if k == "BERTH_HOME" {
			return home
		}
		return ""
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"marketplace", "serve"}, getenv, strings.NewReader(""), &stdout, &stderr)
	}()
	urlRe := regexp.MustCompile(`at (http://127\.0\.0\.1:[0-9]+/) \(read-only`)
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := urlRe.FindStringSubmatch(stdout.String()); m != nil {
			url = m[1]
		}
	}
	if url == "" || strings.HasSuffix(url, ":0/") {
		t.Fatalf("no URL printed: %q %q", stdout.String(), stderr.String())
	}
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "No catalogs yet") || res.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("GET %s: %d %v\n%s", url, res.StatusCode, res.Header, body)
	}
	res, err = http.Post(url, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", res.StatusCode)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(stdout.String(), "Stopped.") {
			t.Errorf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop when interrupted")
	}
}
