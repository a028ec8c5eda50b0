package cli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/berth-mcp/berth/internal/sockpeer"
)

// A URL that carries a secret (a sign-in's authorization URL: its state
// lets whoever holds it deliver their own authorization code to berth's
// redirect listener) never goes into a command line: the opener's and the
// browser's argv are in /proc/PID/cmdline, which every local user can read
// (docs/signin.md, "Opening the browser"). berth opens instead
//
//   - on a system whose kernel names the user of a loopback connection
//     (Linux: sock_diag), http://127.0.0.1:PORT/NONCE on a listener of its
//     own that refuses every other user's connection before reading it and
//     answers the first GET of NONCE with a redirect to the URL, once;
//   - elsewhere, or when that fails, a file it writes (0600, in a 0700
//     directory under BERTH_HOME, "open") whose page sends the browser to the
//     URL (a meta refresh and a link): other users cannot read it.
//
// What is in argv is then a loopback address with a nonce no other user can
// use, or a path no other user can read. The page or listener is gone once
// the sign-in ends (privateOpen's close).

// privateOpen makes a stand-in for secretURL that can be given to a
// browser's command line: a guarded loopback URL or a private file's
// path, under dir (berth's own, private). close removes it; it is safe to
// call more than once.
func privateOpen(dir, secretURL string) (target string, close func(), err error) {
	if target, close, err := loopbackStart(secretURL); err == nil {
		return target, close, nil
	}
	return fileStart(dir, secretURL)
}

// loopbackStart serves secretURL's redirect once, to the user berth runs as
// only; it fails where the kernel cannot name a connection's user.
func loopbackStart(secretURL string) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	gl, err := sockpeer.Guard(ln, nil)
	if err != nil {
		ln.Close()
		return "", nil, err
	}
	nonce := randomHex()
	var mu sync.Mutex
	used := false
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, IdleTimeout: 10 * time.Second, MaxHeaderBytes: 16 << 10,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Referrer-Policy", "no-referrer")
			if r.Method != http.MethodGet || r.URL.Path != "/"+nonce {
				http.NotFound(w, r)
				return
			}
			mu.Lock()
			first := !used
			used = true
			mu.Unlock()
			if !first {
				http.Error(w, "berth: this sign-in link was already opened once; if that was not you, stop the sign-in (Ctrl-C) and run it again", http.StatusGone)
				return
			}
			http.Redirect(w, r, secretURL, http.StatusFound)
		})}
	go srv.Serve(gl) //nolint:errcheck // ends with Close
	var once sync.Once
	return "http://" + ln.Addr().String() + "/" + nonce, func() { once.Do(func() { srv.Close() }) }, nil
}

// fileStart writes a page that sends the browser to secretURL into a new
// 0600 file in dir/open (0700).
func fileStart(dir, secretURL string) (string, func(), error) {
	d := filepath.Join(dir, "open")
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", nil, err
	}
	fi, err := os.Lstat(d)
	if err != nil {
		return "", nil, err
	}
	if !fi.IsDir() || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o700) {
		return "", nil, fmt.Errorf("%s is not a private directory (mode %s, want drwx------); remove it and try again", d, fi.Mode())
	}
	f, err := os.CreateTemp(d, "signin-*.html") // 0600
	if err != nil {
		return "", nil, err
	}
	u := html.EscapeString(secretURL)
	page := `<!doctype html><html><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">` +
		`<meta http-equiv="refresh" content="0;url=` + u + `"><title>berth: sign in</title></head>` +
		`<body><p>berth: <a href="` + u + `">continue to the sign-in page</a>.</p></body></html>` + "\n"
	_, werr := f.WriteString(page)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	name := f.Name()
	if werr != nil {
		os.Remove(name)
		return "", nil, werr
	}
	var once sync.Once
	return name, func() { once.Do(func() { os.Remove(name) }) }, nil
}

func randomHex() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
