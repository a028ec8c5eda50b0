package browse

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
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

	for path, want := range map[string]string{
		"/?token=" + token:                        "/",
		"/?q=notes&token=" + token + "&tier=x":    "/?q=notes&tier=x",
		"/catalogs?token=" + token:                "/catalogs",
		"//evil.example/?token=" + token:          "/evil.example/",
		"/plugins/acme/acme-notes?token=" + token: "/plugins/acme/acme-notes",
	} {
		res, _ := fetch(noRedirect, path)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != want {
			t.Errorf("GET %s: %d to %q, want 303 to %q", path, res.StatusCode, res.Header.Get("Location"), want)
		}
		cs := res.Cookies()
		if len(cs) != 1 || cs[0].Name != CookieName || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode || cs[0].Path != "/" || cs[0].Value == token || cs[0].MaxAge != 0 {
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
