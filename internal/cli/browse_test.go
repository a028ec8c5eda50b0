package cli

import (
	"bytes"
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/testkit"
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
// its loopback URL with a free port and a token, serves the page
// read-only to a browser that opened that URL (and so has the cookie;
// the URL works once),
// refuses a request without the cookie, and stops cleanly when
// interrupted.
func TestMarketplaceServe(t *testing.T) {
	url, stdout, stderr, cancel, done := startMarketplaceServe(t, "marketplace", "serve")
	base, _, _ := strings.Cut(url, "?")
	res, err := http.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), "catalogs yet") || !strings.Contains(string(body), "open the URL it printed") {
		t.Errorf("GET %s without the cookie: %d\n%s", base, res.StatusCode, body)
	}
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	res, err = client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "No signed catalogs yet") || res.Header.Get("Content-Security-Policy") == "" || res.Request.URL.String() != base {
		t.Errorf("GET %s: %d at %v %v\n%s", url, res.StatusCode, res.Request.URL, res.Header, body)
	}
	// The URL works once: another browser that opens it now is refused.
	res, err = http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "This URL has been used already") {
		t.Errorf("GET %s a second time, without the cookie: %d\n%s", url, res.StatusCode, body)
	}
	if !strings.Contains(stdout.String(), "Open that URL: its token, new at each start, lets your browser in (it sets a cookie); other users of this machine are refused") && runtime.GOOS == "linux" {
		t.Errorf("stdout %q", stdout.String())
	}
	res, err = client.Post(base, "text/plain", strings.NewReader("x"))
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

// startMarketplaceServe runs berth with args (a marketplace serve) in-process
// in a fresh BERTH_HOME and waits for the URL it prints.
func startMarketplaceServe(t *testing.T, args ...string) (url string, stdout, stderr *lockedBuffer, cancel context.CancelFunc, done chan int) {
	t.Helper()
	home := t.TempDir()
	getenv := func(k string) string {
		if k == "BERTH_HOME" {
			return home
		}
		return ""
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stdout, stderr = &lockedBuffer{}, &lockedBuffer{}
	done = make(chan int, 1)
	go func() {
		done <- run(ctx, args, getenv, strings.NewReader(""), stdout, stderr)
	}()
	urlRe := regexp.MustCompile(`at (http://127\.0\.0\.1:[0-9]+/\?token=[A-Za-z0-9_-]{43}) \(read-only`)
	testkit.Within(10*time.Second, func() bool {
		if m := urlRe.FindStringSubmatch(stdout.String()); m != nil {
			url = m[1]
		}
		return url != ""
	})
	if url == "" || strings.HasSuffix(url, ":0/") {
		t.Fatalf("no URL printed: %q %q", stdout.String(), stderr.String())
	}
	return url, stdout, stderr, cancel, done
}

// TestMarketplaceServeOpen: --open hands the page's URL, and nothing else,
// to the system's browser opener (xdg-open on Linux, replaced here by a
// script on PATH that records its arguments).
func TestMarketplaceServeOpen(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the opener replaced here is xdg-open, Linux's")
	}
	bin := t.TempDir()
	got := filepath.Join(bin, "opened")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + got + ".tmp && mv " + got + ".tmp " + got + "\n"
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	url, stdout, stderr, cancel, done := startMarketplaceServe(t, "marketplace", "serve", "--open")
	var opened []byte
	testkit.Within(10*time.Second, func() bool {
		b, err := os.ReadFile(got)
		opened = b
		return err == nil
	})
	// The page's token is a secret: the opener's command line gets a
	// stand-in (privateOpen) that leads to the URL, and only one argument.
	target := strings.TrimSuffix(string(opened), "\n")
	token := url[strings.Index(url, "token=")+len("token="):]
	if strings.Contains(string(opened), token) || strings.Contains(target, "\n") {
		t.Errorf("the browser opener got %q, which carries the page's token (or more than one argument)", opened)
	} else if strings.HasPrefix(target, "http://") {
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Get(target)
		if err != nil || resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != url {
			t.Errorf("the stand-in %s does not lead to %s: %v %+v", target, url, err, resp)
		}
	} else if b, err := os.ReadFile(target); err != nil || !strings.Contains(string(b), html.EscapeString(url)) {
		t.Errorf("the stand-in page %s does not lead to %s: %v %s", target, url, err, b)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop when interrupted")
	}
}
