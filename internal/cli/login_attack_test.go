package cli

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/secrets"
	"github.com/berth-mcp/berth/signin"
)

// Moved from signin (review21 finding 3): the URL berth's asker gets is
// the authorization URL, with the state the loopback listener accepts.
// berth login used to pass it to xdg-open/open as an argument, where
// another local user reads it in /proc/PID/cmdline, opens it, signs in
// with their own account and has their own browser deliver the code to
// berth's listener first: berth then keeps a token for the other user's
// account. What berth puts on the browser's command line must not carry
// the state; the sign-in must still complete through it; and whatever
// stood in for the URL is gone once the sign-in is over.
func TestAttackStateInBrowserArgument(t *testing.T) {
	f := newFakeOAuth(t)
	sec := secrets.Open(filepath.Join(t.TempDir(), "secrets"), nil)
	var out, errb bytes.Buffer
	var opened []string
	a := &app{stdout: &out, stderr: &errb, openBrowser: func(target string) error {
		opened = append(opened, target)
		return browseTo(target) // the human's browser, at once
	}}
	ask, closeAsk := a.loginAsk(&out, false, t.TempDir())
	var shown string
	record := func(ctx context.Context, p signin.Prompt) error {
		shown = p.URL
		return ask(ctx, p)
	}
	target := signin.Target{Plugin: "acme-notes", Server: "notes", Resource: f.rs.URL + "/mcp"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := signin.Login(ctx, target, signin.Options{Secrets: sec, Ask: record, Wait: 20 * time.Second})
	closeAsk()
	if err != nil {
		t.Fatalf("the sign-in through the browser's stand-in failed: %v\nstderr: %s", err, errb.String())
	}
	u, err := url.Parse(shown)
	if err != nil || u.Query().Get("state") == "" {
		t.Fatalf("no state in the authorization URL %q", shown)
	}
	state := u.Query().Get("state")
	if len(opened) != 1 {
		t.Fatalf("the browser was opened %d times: %q", len(opened), opened)
	}
	for _, arg := range browserArgv(opened[0]) {
		if strings.Contains(arg, state) || strings.Contains(arg, url.QueryEscape(state)) {
			t.Errorf("the browser's command line %q carries the redirect listener's state %q, so whoever reads the command line can complete the sign-in with their own account", browserArgv(opened[0]), state)
		}
	}
	if strings.HasPrefix(opened[0], "http") {
		if _, err := http.Get(opened[0]); err == nil {
			t.Errorf("the loopback stand-in %s still answers after the sign-in", opened[0])
		}
	} else if _, err := os.Stat(opened[0]); !os.IsNotExist(err) {
		t.Errorf("the stand-in page %s is still there after the sign-in (stat: %v)", opened[0], err)
	}
}

// browseTo follows a stand-in as a browser does: a loopback URL, or a page
// file whose link it opens.
func browseTo(target string) error {
	if !strings.HasPrefix(target, "http://") {
		b, err := os.ReadFile(target)
		if err != nil {
			return err
		}
		m := regexp.MustCompile(`href="([^"]*)"`).FindSubmatch(b)
		if m == nil {
			return fmt.Errorf("no link in %s", target)
		}
		target = html.UnescapeString(string(m[1]))
	}
	resp, err := http.Get(target)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", target, resp.Status)
	}
	return nil
}

// The loopback stand-in redirects once, only for its nonce, only to GET.
func TestPrivateOpenLoopbackOnce(t *testing.T) {
	secret := "https://as.example/authorize?state=s3cr3t&x=1"
	target, done, err := loopbackStart(secret)
	if err != nil {
		t.Skipf("this system cannot name a loopback connection's user: %v", err)
	}
	defer done()
	if strings.Contains(target, "s3cr3t") {
		t.Fatalf("the stand-in %s carries the URL's secret", target)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(method, u string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, u, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	base := target[:strings.LastIndex(target, "/")]
	if r := get("GET", base+"/other"); r.StatusCode != http.StatusNotFound {
		t.Errorf("another path answered %s", r.Status)
	}
	if r := get("POST", target); r.StatusCode != http.StatusNotFound {
		t.Errorf("a POST answered %s", r.Status)
	}
	if r := get("GET", target); r.StatusCode != http.StatusFound || r.Header.Get("Location") != secret || r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("the first GET answered %s, Location %q, Cache-Control %q", r.Status, r.Header.Get("Location"), r.Header.Get("Cache-Control"))
	}
	if r := get("GET", target); r.StatusCode != http.StatusGone {
		t.Errorf("a second GET answered %s: the stand-in is not one use", r.Status)
	}
	done()
	done()
	if _, err := c.Get(target); err == nil {
		t.Error("the stand-in still answers after close")
	}
}

// The file stand-in (where the kernel does not name a connection's user)
// is private: 0600 in a 0700 directory, carries the URL escaped, and is
// removed by close.
func TestPrivateOpenFile(t *testing.T) {
	dir := t.TempDir()
	secret := `https://as.example/authorize?state=s3cr3t&x="><script>`
	name, done, err := fileStart(dir, secret)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(name, "s3cr3t") {
		t.Fatalf("the stand-in path %s carries the URL's secret", name)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), html.EscapeString(secret)) || strings.Contains(string(b), "<script>") {
		t.Errorf("the page does not carry the URL escaped:\n%s", b)
	}
	if runtime.GOOS != "windows" {
		fi, _ := os.Stat(name)
		di, _ := os.Stat(filepath.Dir(name))
		if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
			t.Errorf("the page is %s in a directory %s; want 0600 in 0700", fi.Mode(), di.Mode())
		}
		// A directory another user could write to or read is refused.
		os.Chmod(filepath.Dir(name), 0o755)
		if _, _, err := fileStart(dir, secret); err == nil || !strings.Contains(err.Error(), "not a private directory") {
			t.Errorf("a 0755 directory was used: %v", err)
		}
		os.Chmod(filepath.Dir(name), 0o700)
	}
	done()
	done()
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Errorf("the page is still there after close: %v", err)
	}
}
