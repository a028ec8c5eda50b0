package browse

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestStartURLSetsTheCookie: the page served with a token answers only a
// browser that opened the start URL: without the cookie 401 and where to
// find the URL; a wrong token 403; the right one sets an HttpOnly,
// SameSite=Strict cookie and redirects to the same URL without the
// token, after which the pages work.
func TestStartURLSetsTheCookie(t *testing.T) {
	f := newFixture(t)
	token := NewToken()
	srv := httptest.NewServer(f.site().HandlerWithToken(token))
	defer srv.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	fetch := func(c *http.Client, path string, cookies ...*http.Cookie) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		for _, ck := range cookies {
			req.AddCookie(ck)
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res, string(body)
	}

	for _, p := range []string{"/", "/catalogs", "/plugins/acme/acme-notes", "/icons/acme/acme-cloud.png", "/nothing"} {
		res, body := fetch(noRedirect, p)
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "open the URL it printed when it started") || strings.Contains(body, "acme") {
			t.Errorf("GET %s without the cookie: %d %.300s", p, res.StatusCode, body)
		}
		if res.Header.Get("Content-Security-Policy") != CSP {
			t.Errorf("GET %s: no CSP", p)
		}
	}
	if res, _ := fetch(noRedirect, "/static/style.css"); res.StatusCode != http.StatusOK {
		t.Errorf("the style sheet without the cookie: %d", res.StatusCode)
	}
	if res, body := fetch(noRedirect, "/?token=wrong"+token[5:]); res.StatusCode != http.StatusForbidden || !strings.Contains(body, "not the one berth marketplace serve printed") {
		t.Errorf("a wrong token: %d %.300s", res.StatusCode, body)
	}
	if res, _ := fetch(noRedirect, "/", &http.Cookie{Name: CookieName, Value: token}); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the token as the cookie: %d", res.StatusCode)
	}

	// The token works once: each start URL here is a run of its own.
	for path, want := range map[string]string{
		"/?token=%s":                        "/",
		"/?q=notes&token=%s&tier=x":         "/?q=notes&tier=x",
		"/catalogs?token=%s":                "/catalogs",
		"//evil.example/?token=%s":          "/evil.example/",
		"/plugins/acme/acme-notes?token=%s": "/plugins/acme/acme-notes",
	} {
		tok := NewToken()
		run := httptest.NewServer(f.site().HandlerWithToken(tok))
		path = fmt.Sprintf(path, tok)
		res, err := noRedirect.Get(run.URL + path)
		run.Close()
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != want {
			t.Errorf("GET %s: %d to %q, want 303 to %q", path, res.StatusCode, res.Header.Get("Location"), want)
		}
		cs := res.Cookies()
		if len(cs) != 1 || cs[0].Name != CookieName || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode || cs[0].Path != "/" || cs[0].Value == tok || cs[0].MaxAge != 0 {
			t.Errorf("GET %s: cookie %+v", path, cs)
		}
	}

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	res, body := fetch(browser, "/?token="+token)
	if res.StatusCode != http.StatusOK || res.Request.URL.RawQuery != "" || !strings.Contains(body, "acme-notes") {
		t.Fatalf("the start URL: %d at %v %.300s", res.StatusCode, res.Request.URL, body)
	}
	if res, body := fetch(browser, "/plugins/acme/acme-notes"); res.StatusCode != http.StatusOK || !strings.Contains(body, "acme-notes") {
		t.Errorf("a page with the cookie: %d %.300s", res.StatusCode, body)
	}
	// Another run (another token) does not accept this run's cookie.
	other := httptest.NewServer(f.site().HandlerWithToken(NewToken()))
	defer other.Close()
	req, _ := http.NewRequest(http.MethodGet, other.URL+"/", nil)
	for _, c := range jar.Cookies(res.Request.URL) {
		req.AddCookie(c)
	}
	if res, err := noRedirect.Do(req); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Errorf("another run's cookie: %v %v", res, err)
	}

	defer func() {
		if recover() == nil {
			t.Error("a short token was accepted")
		}
	}()
	f.site().HandlerWithToken("short")
}

// TestStartURLWorksOnce: the start URL's token lets one browser in: the
// first request with it gets the cookie, and the token is then void. The
// same browser may open the URL again (a reload, a retry, a prefetch that
// came first): with its cookie it is redirected, no new cookie; without
// the cookie the URL gets 403 and a page that says to start again. Of
// two requests at once, one gets the cookie.
func TestStartURLWorksOnce(t *testing.T) {
	f := newFixture(t)
	token := NewToken()
	srv := httptest.NewServer(f.site().HandlerWithToken(token))
	defer srv.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string, cookies ...*http.Cookie) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		for _, c := range cookies {
			req.AddCookie(c)
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res, string(body)
	}

	start := "/?token=" + token
	res, _ := get(start)
	cs := res.Cookies()
	if res.StatusCode != http.StatusSeeOther || len(cs) != 1 {
		t.Fatalf("the first use: %d, cookies %+v", res.StatusCode, cs)
	}
	cookie := cs[0]

	// Another browser, or anyone else who has the URL, is too late.
	for _, path := range []string{start, "/catalogs?token=" + token} {
		res, body := get(path)
		if res.StatusCode != http.StatusForbidden || len(res.Cookies()) != 0 || !strings.Contains(body, "This URL has been used already") || !strings.Contains(body, "start it again") || strings.Contains(body, "acme-notes") {
			t.Errorf("GET %s again without the cookie: %d, cookies %+v, %.300s", path, res.StatusCode, res.Cookies(), body)
		}
	}
	// The browser that has the cookie is redirected, and kept in.
	res, _ = get("/catalogs?token="+token, cookie)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/catalogs" || len(res.Cookies()) != 0 {
		t.Errorf("the start URL again with the cookie: %d to %q, cookies %+v", res.StatusCode, res.Header.Get("Location"), res.Cookies())
	}
	if res, body := get("/plugins/acme/acme-notes", cookie); res.StatusCode != http.StatusOK || !strings.Contains(body, "acme-notes") {
		t.Errorf("a page with the cookie after the token was used: %d %.300s", res.StatusCode, body)
	}
	// A wrong token is still told apart from a used one.
	if res, body := get("/?token=wrong" + token[5:]); res.StatusCode != http.StatusForbidden || !strings.Contains(body, "not the one berth marketplace serve printed") {
		t.Errorf("a wrong token: %d %.300s", res.StatusCode, body)
	}

	// Of many requests at once with a fresh token, one gets the cookie.
	token = NewToken()
	race := httptest.NewServer(f.site().HandlerWithToken(token))
	defer race.Close()
	var mu sync.Mutex
	var wg sync.WaitGroup
	cookies, refused := 0, 0
	for range 8 {
		wg.Go(func() {
			res, err := noRedirect.Get(race.URL + "/?token=" + token)
			if err != nil {
				t.Error(err)
				return
			}
			res.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case res.StatusCode == http.StatusSeeOther && len(res.Cookies()) == 1:
				cookies++
			case res.StatusCode == http.StatusForbidden:
				refused++
			}
		})
	}
	wg.Wait()
	if cookies != 1 || refused != 7 {
		t.Errorf("8 requests at once: %d got the cookie, %d were refused; want 1 and 7", cookies, refused)
	}
}
