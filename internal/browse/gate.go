package browse

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"path"
	"strings"
	"sync/atomic"
)

// TokenParam is the query parameter of the start URL that carries the
// token ("http://127.0.0.1:PORT/?token=…").
const TokenParam = "token"

// CookieName is the cookie that a browser which opened the start URL
// gets.
const CookieName = "berth_marketplace"

// minTokenLen is the shortest token HandlerWithToken accepts.
const minTokenLen = 32

// NewToken returns a new random token for HandlerWithToken: 32 bytes,
// base64url.
func NewToken() string { return randomString() }

func randomString() string {
	var raw [32]byte
	rand.Read(raw[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(raw[:])
}

// HandlerWithToken is Handler for a page that only the person who
// started it may read, as Jupyter does it: the start URL carries token
// (?token=…), which works once: the first request with the right token
// gets a cookie (HttpOnly, SameSite=Strict, Path=/, for this run only) and
// is redirected to the same URL without the token, and the token is then
// void. A later request with it is redirected the same way when it
// carries the cookie (a browser that reloads or retries the start URL),
// and otherwise gets 403 and a page that says to start again for a new
// URL. Every other request needs the cookie, and without it gets 401 and
// a page that says where to find the URL (403 for a wrong token). Only
// /static/ (the style sheet and script, the same in every copy of berth)
// is served without the cookie. It panics when token is shorter than 32
// characters.
func (s *Site) HandlerWithToken(token string) http.Handler {
	if len(token) < minTokenLen {
		panic("browse: HandlerWithToken needs a token of 32 characters or more (NewToken)")
	}
	g := &gate{s: s, token: digest(token), cookie: randomString()}
	g.session = digest(g.cookie)
	return guard(g.wrap(s.mux()))
}

// gate checks the token and the cookie of HandlerWithToken.
type gate struct {
	s              *Site
	token, session []byte
	cookie         string
	// used is set when the token has let a browser in.
	used atomic.Bool
}

func digest(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// same compares digests in constant time, so neither the content nor the
// length of a secret leaks through timing.
func same(got string, want []byte) bool {
	return subtle.ConstantTimeCompare(digest(got), want) == 1
}

// hasSession reports whether r carries this run's cookie.
func (g *gate) hasSession(r *http.Request) bool {
	c, err := r.Cookie(CookieName)
	return err == nil && same(c.Value, g.session)
}

func (g *gate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Has(TokenParam) {
			if !same(q.Get(TokenParam), g.token) {
				g.s.fail(w, r, http.StatusForbidden, "The token in this URL is not the one berth marketplace serve printed when it started (each start makes a new one). Open the URL it printed last, or start it again with --open.", rootOf(r.URL.Path))
				return
			}
			switch {
			case g.hasSession(r):
				// This browser is in already (a reload, a retry, or
				// a prefetch that came first): no new cookie.
			case g.used.CompareAndSwap(false, true):
				http.SetCookie(w, &http.Cookie{Name: CookieName, Value: g.cookie, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			default:
				g.s.fail(w, r, http.StatusForbidden, "This URL has been used already: its token lets one browser in, once, and another browser (or this one, before its cookie was lost) opened it first. For a new URL, stop berth marketplace serve and start it again (with --open, or open the URL it prints).", rootOf(r.URL.Path))
				return
			}
			q.Del(TokenParam)
			to := cleanPath(r.URL.Path)
			if len(q) > 0 {
				to += "?" + q.Encode()
			}
			http.Redirect(w, r, to, http.StatusSeeOther)
			return
		}
		// The style sheet and script are the same for everyone (they
		// are in berth's source); the 401 page uses them.
		public := strings.HasPrefix(r.URL.Path, "/static/")
		if !public && !g.hasSession(r) {
			g.s.fail(w, r, http.StatusUnauthorized, "This page is for the person who started berth marketplace serve: open the URL it printed when it started (http://127.0.0.1:PORT/?token=…), which lets one browser in, once, or start it again with --open.", rootOf(r.URL.Path))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// cleanPath is p as a path on this site: one leading slash, never "//"
// (which a browser would read as another host).
func cleanPath(p string) string {
	c := path.Clean("/" + strings.ReplaceAll(p, "\\", "/"))
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}
